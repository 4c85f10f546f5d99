// Every reason the CUDA descriptors give, with its exact text (docs/DISPATCH.md lists
// them), and the problems that must pass each rule's boundary.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "conformance/engine/check_case.hpp"
#include "core/cuda_runtime.hpp"
#include "kernels/cuda/flash_body.hpp"
#include "kernels/lowered_problem.hpp"
#include "test_backends.hpp"

namespace sdpa {
namespace {

using testing::device;
using testing::problem;
using testing::show;

::testing::AssertionResult declines_with(const Backend& b, const std::string& case_id,
                                         const std::string& dev, const std::string& reason) {
  const Support s = b.supports(problem(case_id), device(dev));
  if (std::find(s.reasons.begin(), s.reasons.end(), reason) != s.reasons.end()) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << b.name() << " on " << dev << " for " << case_id << " gave"
                                       << show(s.reasons) << "\nexpected: " << reason;
}

::testing::AssertionResult accepts(const Backend& b, const std::string& case_id,
                                   const std::string& dev) {
  const Support s = b.supports(problem(case_id), device(dev));
  if (s.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << b.name() << " on " << dev << " declines " << case_id << ":" << show(s.reasons);
}

const Backend& flash = cuda::flash_backend();
const Backend& mem = cuda::mem_efficient_backend();
const Backend& math = cuda::math_backend();
const Backend& cudnn = cuda::cudnn_backend();

const std::string kBase = "b1.hq2.l128.s128.dqk64.f16.seed1.gen=normal";

// ---------------------------------------------------------------- shared

TEST(CudaRules, EveryDescriptorDeclinesACpuDeviceWithOneReason) {
  for (const Backend* b : {&flash, &mem, &math, &cudnn}) {
    const Support s = b->supports(problem(kBase), device("cpu-avx2"));
    ASSERT_EQ(s.reasons.size(), 1u) << b->name() << show(s.reasons);
    EXPECT_EQ(s.reasons[0], "runs on CUDA devices, not on cpu-avx2");
  }
}

TEST(CudaRules, CudnnIsAModelWithoutAKernel) {
  EXPECT_TRUE(cudnn.capabilities().traits.model_only);
  for (const Backend* b : {&flash, &mem, &math}) EXPECT_FALSE(b->capabilities().traits.model_only);
  try {
    cudnn.run(LoweredProblem(problem(kBase), Buffers{}), device("sm90"), RunOptions{});
    FAIL() << "cuda.cudnn ran";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "cuda.cudnn: no kernel: it models PyTorch's choice of a kernel this suite does not "
              "have");
  }
}

// On an emulated GPU (emulate=1) the fused kernels run on the host emulator; cuda.math is
// cuBLAS and declines, and the judge never runs cuda.cudnn, a model.
TEST(CudaRules, EmulatedGpu) {
  const Device emu = parse_device_or_throw("sm80:emulate=1");
  EXPECT_TRUE(accepts(flash, kBase, "sm80:emulate=1"));
  EXPECT_TRUE(accepts(mem, kBase, "sm80:emulate=1"));
  EXPECT_TRUE(declines_with(math, kBase, "sm80:emulate=1",
                            "the host emulator runs the fused kernels only; cuda.math is cuBLAS"));
  const auto out = conformance::check_case(cudnn, parse_case_id_or_throw(kBase), emu);
  EXPECT_EQ(out.status, conformance::Status::not_supported);
  EXPECT_EQ(out.message,
            "cuda.cudnn only models PyTorch's choice of a kernel this suite does not have: there "
            "is nothing to run");
  const auto ran = conformance::check_case(flash, parse_case_id_or_throw(kBase), emu);
  EXPECT_EQ(ran.status, conformance::Status::pass) << ran.message;
}

// Device limits (docs/KERNELS.md, "Device limits"): cuda.flash's 8-warp head-dim-256 blocks
// need 128 KiB of shared memory, which sm86, sm89, sm120 and sm121 do not have: there it takes
// 4-warp blocks (96 KiB), as FlashAttention-2 takes smaller tiles; where even those do not
// fit it declines with both numbers. cuda.mem_efficient's 42.1 KiB fits every listed device.
TEST(CudaRules, SharedMemoryPerBlockIsADeviceLimit) {
  namespace fl = cuda::detail::flash;
  const std::string d256 = "b1.hq2.l128.s128.dqk256.f16.seed1.gen=normal";
  const std::string d128 = "b1.hq2.l128.s128.dqk128.bf16.seed1.gen=normal";
  for (const char* dev : {"sm86", "sm89", "sm120", "sm121"}) {
    const Device d = device(dev);
    EXPECT_EQ(d.cuda.smem_per_block, 99u * 1024) << dev;
    EXPECT_EQ(fl::block_warps(2, 256, d.cuda.smem_per_block), 4) << dev;
    EXPECT_EQ(fl::block_warps(2, 128, d.cuda.smem_per_block), 8) << dev;
    EXPECT_TRUE(accepts(flash, d256, dev));
    EXPECT_TRUE(accepts(flash, d128, dev));
    EXPECT_TRUE(accepts(mem, d256, dev));
  }
  for (const char* dev : {"sm80", "sm90", "sm100"}) {
    EXPECT_EQ(fl::block_warps(2, 256, device(dev).cuda.smem_per_block), 8) << dev;
    EXPECT_TRUE(accepts(flash, d256, dev));
  }
  const cuda::detail::LaunchNeeds n = fl::launch_needs(2, 256, 99 * 1024);
  EXPECT_EQ(std::string(n.config), "head dims up to 256, 4 warps");
  EXPECT_EQ(n.smem_bytes, 96u * 1024);
  EXPECT_EQ(n.threads, 128);
  EXPECT_EQ(device("sm80").cuda.smem_per_block, 163u * 1024);
  EXPECT_EQ(device("sm90").cuda.smem_per_block, 227u * 1024);
  EXPECT_EQ(device("sm90").cuda.regs_per_sm, 64 * 1024);
  // The smem= option overrides the table; a compute capability the table does not list says
  // whose limits it took.
  EXPECT_TRUE(declines_with(flash, d128, "sm90:smem=40",
                            "needs 48 KiB of shared memory per block (head dims up to 128, 4 "
                            "warps), sm90 allows 40 KiB"));
  EXPECT_EQ(cuda_arch_limits(88).basis, "as sm87");
  EXPECT_EQ(device("sm88").cuda.smem_per_block, 163u * 1024);
  EXPECT_TRUE(accepts(flash, d256, "sm110:smem=96"));
  EXPECT_TRUE(declines_with(flash, d256, "sm110",
                            "needs 96 KiB of shared memory per block (head dims up to 256, 4 "
                            "warps), sm110 allows 48 KiB (not in the limits table: CUDA's "
                            "minimum)"));
  EXPECT_TRUE(accepts(flash, d128, "sm110"));
  EXPECT_TRUE(declines_with(mem, kBase, "sm50:smem=32",
                            "needs 42.1 KiB of shared memory per block (16 rows x 128-wide "
                            "slabs), sm50 allows 32 KiB"));
  EXPECT_NE(parse_device("sm90:smem=0").index(), 0u);
}

// Without the CUDA runtime in the build, the kernels' run() says so; with it and no GPU,
// each names itself and the CUDA error (never a crash).
TEST(CudaRules, RunWithoutAGpuIsAClearError) {
  std::string why;
  if (cuda_runtime::linked() && cuda_runtime::probe(&why)) {
    GTEST_SKIP() << "a GPU is present: its kernels run (scripts/gpu-check.sh judges them)";
  }
  for (const Backend* b : {&flash, &mem, &math}) {
    try {
      b->run(LoweredProblem(problem(kBase), Buffers{}), device("sm80"), RunOptions{});
      FAIL() << b->name() << " ran";
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind(std::string(b->name()) + ": ", 0), 0u) << what;
      if (!cuda_runtime::linked()) {
        EXPECT_EQ(what, std::string(b->name()) +
                            ": this build has no CUDA kernels (configure with SDPA_CTS_CUDA=ON "
                            "where nvcc is installed)");
      } else {
        EXPECT_NE(what.find("cuda"), std::string::npos) << what;
      }
    }
  }
}

TEST(CudaRules, NamesAndCapabilityData) {
  EXPECT_EQ(flash.name(), "cuda.flash");
  EXPECT_EQ(mem.name(), "cuda.mem_efficient");
  EXPECT_EQ(math.name(), "cuda.math");
  EXPECT_EQ(cudnn.name(), "cuda.cudnn");
  for (const Backend* b : {&flash, &mem, &math, &cudnn}) {
    EXPECT_EQ(b->capabilities().device, DeviceKind::cuda) << b->name();
  }
  EXPECT_FALSE(flash.capabilities().different_v_dim);
  EXPECT_EQ(flash.capabilities().max_head_dim, 256);
  EXPECT_TRUE(mem.capabilities().different_v_dim);
  EXPECT_EQ(cudnn.capabilities().head_dim_multiple, 8);
  EXPECT_FALSE(cudnn.capabilities().deterministic);
  EXPECT_TRUE(math.capabilities().weights);
}

TEST(CudaRules, PrecisionContracts) {
  EXPECT_EQ(flash.precision(DType::bf16).p_type, DType::bf16);
  EXPECT_EQ(flash.precision(DType::f16).accumulate, DType::f32);
  EXPECT_TRUE(flash.precision(DType::f16).online_softmax);
  EXPECT_EQ(flash.precision(DType::bf16).key_block, 64);
  // cuda.mem_efficient's kernel is SIMT f32: P stays f32, a rescale per 32 keys.
  EXPECT_EQ(mem.precision(DType::f32).p_type, DType::f32);
  EXPECT_EQ(mem.precision(DType::bf16).p_type, DType::f32);
  EXPECT_EQ(mem.precision(DType::f16).accumulate, DType::f32);
  EXPECT_EQ(mem.precision(DType::f16).key_block, 32);
  EXPECT_EQ(math.precision(DType::f16).p_type, DType::f32);
  EXPECT_FALSE(math.precision(DType::f16).online_softmax);
  EXPECT_EQ(cudnn.precision(DType::f16).p_type, DType::f16);
}

TEST(CudaRules, MathAcceptsEveryValidProblemOnAGpu) {
  for (const char* id :
       {"b1.hq2.l5.s7.dqk300.dv3.f64.causal=br.mask=add.mbc=s.p0.3.seed1.gen=normal",
        "b2.hq4.hkv2.l0.s5.dqk8.bf16.win=2_1_tl.softcap=30.attnw.lse.seed1.gen=normal",
        "b2.hq2.l4.s4.dqk4.f32.kvlen=2_3.off=1.seed1.gen=normal"}) {
    for (const char* dev : {"sm50", "sm80", "sm121"}) EXPECT_TRUE(accepts(math, id, dev));
  }
}

// ---------------------------------------------------------------- cuda.flash

TEST(CudaFlash, AcceptsTheBaseProblemFromSm80ToSm121) {
  for (const char* dev : {"sm80", "sm86", "sm89", "sm90", "sm100", "sm121"}) {
    EXPECT_TRUE(accepts(flash, kBase, dev));
  }
  EXPECT_TRUE(accepts(flash, "b1.hq2.l128.s128.dqk64.bf16.seed1.gen=normal", "sm80"));
}

TEST(CudaFlash, ArchRange) {
  EXPECT_TRUE(
      declines_with(flash, kBase, "sm75",
                    "compute capability sm75 is outside the supported range [sm80, sm121]"));
  EXPECT_TRUE(
      declines_with(flash, kBase, "sm122",
                    "compute capability sm122 is outside the supported range [sm80, sm121]"));
}

TEST(CudaFlash, Dtypes) {
  for (const char* t : {"f32", "f64"}) {
    EXPECT_TRUE(declines_with(
        flash, "b1.hq2.l128.s128.dqk64." + std::string(t) + ".seed1.gen=normal", "sm80",
        "dtype " + std::string(t) + " is not supported (supported: f16, bf16)"));
  }
}

TEST(CudaFlash, HeadDims) {
  EXPECT_TRUE(accepts(flash, "b1.hq2.l16.s16.dqk256.f16.seed1.gen=normal", "sm80"));
  EXPECT_TRUE(accepts(flash, "b1.hq2.l16.s16.dqk60.f16.seed1.gen=normal", "sm80"));  // padded
  EXPECT_TRUE(declines_with(flash, "b1.hq2.l16.s16.dqk257.f16.seed1.gen=normal", "sm80",
                            "head dim dqk=257 exceeds 256"));
  EXPECT_TRUE(declines_with(flash, "b1.hq2.l16.s16.dqk257.f16.seed1.gen=normal", "sm80",
                            "head dim dv=257 exceeds 256"));
  EXPECT_TRUE(declines_with(flash, "b1.hq2.l16.s16.dqk64.dv32.f16.seed1.gen=normal", "sm80",
                            "dv=32 differs from dqk=64"));
}

TEST(CudaFlash, NoMaskTensors) {
  EXPECT_TRUE(declines_with(flash, "b1.hq2.l16.s16.dqk64.f16.mask=bool.seed1.gen=normal", "sm80",
                            "boolean mask tensors are not supported"));
  EXPECT_TRUE(declines_with(flash, "b1.hq2.l16.s16.dqk64.f16.mask=add.seed1.gen=normal", "sm80",
                            "additive mask tensors are not supported"));
}

TEST(CudaFlash, CausalAlignment) {
  EXPECT_TRUE(accepts(flash, "b1.hq2.l16.s16.dqk64.f16.causal=tl.seed1.gen=normal", "sm80"));
  EXPECT_TRUE(accepts(flash, "b1.hq2.l3.s5.dqk64.f16.causal=br.seed1.gen=normal", "sm80"));
  EXPECT_TRUE(declines_with(flash, "b1.hq2.l3.s5.dqk64.f16.causal=tl.seed1.gen=normal", "sm80",
                            "causal top-left with L=3 != S=5: FlashAttention-2 aligns causal "
                            "masks bottom-right"));
  EXPECT_TRUE(declines_with(
      flash, "b2.hq2.l4.s4.dqk64.f16.causal=tl.qlen=4_2.kvlen=4_3.packed.seed1.gen=normal", "sm80",
      "causal top-left with L_b=2 != S_b=3 (batch element 1): FlashAttention-2 aligns causal "
      "masks bottom-right"));
  EXPECT_TRUE(accepts(flash,
                      "b2.hq2.l4.s4.dqk64.f16.causal=tl.qlen=4_3.kvlen=4_3.packed.seed1.gen=normal",
                      "sm80"));
}

TEST(CudaFlash, FeaturesPyTorchSdpaDoesNotExpose) {
  // The kernel computes windows, softcap and padded lengths (PyTorch's SDPA cannot express
  // them: the PyTorch policy's front end rejects them before the picker).
  EXPECT_TRUE(accepts(flash, "b1.hq2.l16.s16.dqk64.f16.win=4_0_br.seed1.gen=normal", "sm80"));
  EXPECT_TRUE(accepts(flash, "b1.hq2.l16.s16.dqk64.f16.softcap=30.seed1.gen=normal", "sm80"));
  EXPECT_TRUE(accepts(flash, "b2.hq2.l16.s16.dqk64.f16.kvlen=5_16.seed1.gen=normal", "sm80"));
  EXPECT_TRUE(declines_with(mem, "b1.hq2.l16.s16.dqk64.f16.win=4_0_br.seed1.gen=normal", "sm80",
                            "sliding windows are not supported"));
  EXPECT_TRUE(declines_with(mem, "b1.hq2.l16.s16.dqk64.f16.softcap=30.seed1.gen=normal", "sm80",
                            "softcap is not supported"));
  EXPECT_TRUE(declines_with(mem, "b2.hq2.l16.s16.dqk64.f16.kvlen=5_16.seed1.gen=normal", "sm80",
                            "per-batch sequence lengths are not supported"));
  EXPECT_TRUE(declines_with(flash, "b1.hq2.l16.s16.dqk64.f16.attnw.seed1.gen=normal", "sm80",
                            "the attention-weights output is not supported"));
  EXPECT_TRUE(accepts(flash, "b1.hq2.l16.s16.dqk64.f16.lse.p0.3.seed1.gen=normal", "sm80"));
  EXPECT_TRUE(accepts(flash, "b1.hq8.hkv2.l16.s16.dqk64.f16.seed1.gen=normal", "sm80"));
}

TEST(CudaFlash, EmptyProblems) {
  for (const char* id :
       {"b1.hq2.l0.s16.dqk64.f16.seed1.gen=normal", "b1.hq2.l16.s0.dqk64.f16.seed1.gen=normal",
        "b0.hq2.l16.s16.dqk64.f16.seed1.gen=normal"}) {
    EXPECT_TRUE(
        declines_with(flash, id, "sm80", "empty problems (a dimension of 0) are not supported"));
  }
}

TEST(CudaFlash, LastDimStrideWithTheSingletonException) {
  // q, k, v [1, 1, 4, 4] with head-dim stride 2; o contiguous.
  const std::string strided =
      "b1.hq1.l4.s4.dqk4.f16.qst=32_32_8_2_0.kst=32_32_8_2_0.vst=32_32_8_2_0.ost=16_16_4_1_0.seed1."
      "gen=normal";
  for (const char* t : {"q", "k", "v"}) {
    EXPECT_TRUE(
        declines_with(flash, strided, "sm80", std::string(t) + " has head-dim stride 2, not 1"));
  }
  EXPECT_TRUE(declines_with(
      flash,
      "b1.hq1.l4.s4.dqk4.f16.qst=16_16_4_1_0.kst=16_16_4_1_0.vst=16_16_4_1_0.ost=32_32_8_2_0.seed1."
      "gen=normal",
      "sm80", "o has head-dim stride 2, not 1"));
  // Head dim 1: any stride passes (PyTorch issue #116333).
  EXPECT_TRUE(accepts(flash,
                      "b1.hq1.l4.s4.dqk1.f16.qst=8_8_2_3_0.kst=8_8_2_3_0.vst=8_8_2_3_0.ost=4_4_1_1_"
                      "0.seed1.gen=normal",
                      "sm80"));
}

TEST(CudaFlash, PackedRows) {
  EXPECT_TRUE(
      accepts(flash, "b2.hq2.l4.s4.dqk64.f16.qlen=2_4.kvlen=3_4.packed.seed1.gen=normal", "sm80"));
  EXPECT_TRUE(declines_with(
      flash, "b2.hq2.l4.s4.dqk60.f16.qlen=2_4.kvlen=3_4.packed.seed1.gen=normal", "sm80",
      "packed rows need a head dim that is a multiple of 8 (dqk=60): packed "
      "inputs are not padded"));
  EXPECT_TRUE(
      declines_with(flash, "b2.hq2.l4.s4.dqk64.f16.qlen=2_0.kvlen=3_3.packed.seed1.gen=normal",
                    "sm80", "packed rows: batch element 1 has an empty sequence (L_b=0, S_b=3)"));
}

// ---------------------------------------------------------------- cuda.mem_efficient

TEST(CudaMemEfficient, ArchRange) {
  EXPECT_TRUE(accepts(mem, kBase, "sm50"));
  EXPECT_TRUE(accepts(mem, kBase, "sm121"));
  EXPECT_TRUE(declines_with(
      mem, kBase, "sm35", "compute capability sm35 is outside the supported range [sm50, sm121]"));
  EXPECT_TRUE(
      declines_with(mem, kBase, "sm130",
                    "compute capability sm130 is outside the supported range [sm50, sm121]"));
}

TEST(CudaMemEfficient, DtypesPerArch) {
  EXPECT_TRUE(accepts(mem, "b1.hq2.l16.s16.dqk64.f32.seed1.gen=normal", "sm50"));
  EXPECT_TRUE(accepts(mem, "b1.hq2.l16.s16.dqk64.bf16.seed1.gen=normal", "sm80"));
  EXPECT_TRUE(
      declines_with(mem, "b1.hq2.l16.s16.dqk64.bf16.seed1.gen=normal", "sm75",
                    "dtype bf16 needs sm80 or newer, device is sm75 (supported there: f16, f32)"));
  EXPECT_TRUE(declines_with(mem, "b1.hq2.l16.s16.dqk64.f64.seed1.gen=normal", "sm80",
                            "dtype f64 is not supported (supported: f16, bf16, f32)"));
}

TEST(CudaMemEfficient, HeadDimAlignmentPerArchAndDtype) {
  EXPECT_TRUE(declines_with(mem, "b1.hq2.l16.s16.dqk60.f16.seed1.gen=normal", "sm80",
                            "head dims must be multiples of 8 for f16 on sm80 (dqk=60, dv=60)"));
  EXPECT_TRUE(declines_with(mem, "b1.hq2.l16.s16.dqk64.dv36.bf16.seed1.gen=normal", "sm90",
                            "head dims must be multiples of 8 for bf16 on sm90 (dqk=64, dv=36)"));
  EXPECT_TRUE(declines_with(mem, "b1.hq2.l16.s16.dqk62.f32.seed1.gen=normal", "sm80",
                            "head dims must be multiples of 4 for f32 on sm80 (dqk=62, dv=62)"));
  EXPECT_TRUE(declines_with(mem, "b1.hq2.l16.s16.dqk60.f16.seed1.gen=normal", "sm75",
                            "head dims must be multiples of 8 for f16 on sm75 (dqk=60, dv=60)"));
  EXPECT_TRUE(accepts(mem, "b1.hq2.l16.s16.dqk60.f32.seed1.gen=normal", "sm80"));
  EXPECT_TRUE(accepts(mem, "b1.hq2.l16.s16.dqk62.f32.seed1.gen=normal", "sm75"));  // f32 < sm80: 1
  EXPECT_TRUE(accepts(mem, "b1.hq2.l16.s16.dqk60.f16.seed1.gen=normal", "sm50"));  // < sm70: 1
  EXPECT_TRUE(accepts(mem, "b1.hq2.l16.s16.dqk64.dv32.f16.seed1.gen=normal", "sm80"));  // dv != dqk
  EXPECT_TRUE(accepts(mem, "b1.hq2.l16.s16.dqk1024.f16.seed1.gen=normal", "sm80"));     // no limit
}

// The alignment rule at each of its cut-offs, generated from the rule's own data: at the cut's
// first architecture a head dim off the multiple is declined and the multiple accepted; one
// architecture below, that cut no longer applies (the next cut of its precision, or 1). A cut
// moved in the code by one architecture, or a precision swapped, fails here; a cut moved in
// the data fails the pin below.
TEST(CudaMemEfficient, AlignmentRuleAtEveryCutOff) {
  const auto& cuts = cuda::mem_efficient_alignment_cuts();
  auto alignment = [&](int sm, bool half) {
    for (const auto& c : cuts)
      if (c.half_precision == half && sm >= c.from_sm) return c.elements;
    return 1;
  };
  for (const auto& c : cuts) {
    for (const char* dt : c.half_precision ? std::vector<const char*>{"f16", "bf16"}
                                           : std::vector<const char*>{"f32"}) {
      for (int sm : {c.from_sm, c.from_sm - 1}) {
        if (std::string(dt) == "bf16" && sm < 80) continue;  // bf16 needs sm80 (its own rule)
        const int a = alignment(sm, c.half_precision);
        const std::string dev = "sm" + std::to_string(sm);
        const auto id = [&](int d) {
          return "b1.hq2.l16.s16.dqk" + std::to_string(d) + "." + dt + ".seed1.gen=normal";
        };
        SCOPED_TRACE(dev + " " + dt);
        EXPECT_TRUE(accepts(mem, id(8 * a), dev));
        if (a > 1) {
          const int off = 8 * a + a / 2;  // a multiple of a / 2, not of a
          EXPECT_TRUE(declines_with(
              mem, id(off), dev,
              "head dims must be multiples of " + std::to_string(a) + " for " + dt + " on " + dev +
                  " (dqk=" + std::to_string(off) + ", dv=" + std::to_string(off) + ")"));
        } else {
          EXPECT_TRUE(accepts(mem, id(8 * 8 + 1), dev));
        }
      }
    }
  }
}

// The cut-offs are PyTorch's (sdp_utils.cpp, minimum_gemm_alignment): sm80 and later 8 for
// f16 / bf16 and 4 for f32; sm70 to sm7x 8 for f16.
TEST(CudaMemEfficient, AlignmentCutsArePyTorchs) {
  const auto& cuts = cuda::mem_efficient_alignment_cuts();
  ASSERT_EQ(cuts.size(), 3u);
  EXPECT_EQ(cuts[0].from_sm, 80);
  EXPECT_TRUE(cuts[0].half_precision);
  EXPECT_EQ(cuts[0].elements, 8);
  EXPECT_EQ(cuts[1].from_sm, 80);
  EXPECT_FALSE(cuts[1].half_precision);
  EXPECT_EQ(cuts[1].elements, 4);
  EXPECT_EQ(cuts[2].from_sm, 70);
  EXPECT_TRUE(cuts[2].half_precision);
  EXPECT_EQ(cuts[2].elements, 8);
}

TEST(CudaMemEfficient, PointerAlignmentFromSm80) {
  const std::string off3 = "b1.hq2.l16.s16.dqk64.f16.off=3.seed1.gen=normal";
  for (const char* t : {"q", "k", "v", "o"}) {
    EXPECT_TRUE(declines_with(
        mem, off3, "sm80",
        std::string(t) + " starts 3 elements (6 bytes) into its allocation, not a multiple "
                         "of 16 bytes"));
  }
  EXPECT_TRUE(declines_with(mem, "b1.hq2.l16.s16.dqk64.f32.off=2.seed1.gen=normal", "sm90",
                            "q starts 2 elements (8 bytes) into its allocation, not a multiple of "
                            "16 bytes"));
  EXPECT_TRUE(accepts(mem, "b1.hq2.l16.s16.dqk64.f16.off=8.seed1.gen=normal", "sm80"));
  EXPECT_TRUE(accepts(mem, "b1.hq2.l16.s16.dqk64.f32.off=4.seed1.gen=normal", "sm80"));
  EXPECT_TRUE(accepts(mem, off3, "sm75"));  // the rule starts at sm80
}

// PyTorch's picker (can_use_mem_efficient_attention) has no batch limit: it selects the
// kernel, which then raises. Modelled as "picker accepts, then raises".
TEST(CudaMemEfficient, DropoutBatchLimitIsARaiseAfterSelection) {
  const Support s =
      mem.supports(problem("b65536.hq1.l1.s1.dqk8.f16.p0.1.seed1.gen=normal"), device("sm80"));
  EXPECT_TRUE(s.picker_accepts()) << show(s.reasons);
  EXPECT_FALSE(s.ok());
  ASSERT_EQ(s.raises.size(), 1u);
  EXPECT_EQ(s.raises[0],
            "dropout with batch 65536 > 65535: the kernel cannot produce valid seed and offset "
            "outputs");
  EXPECT_TRUE(accepts(mem, "b65535.hq1.l1.s1.dqk8.f16.p0.1.seed1.gen=normal", "sm80"));
  EXPECT_TRUE(accepts(mem, "b65536.hq1.l1.s1.dqk8.f16.seed1.gen=normal", "sm80"));
}

TEST(CudaMemEfficient, MasksCausalAndStrides) {
  EXPECT_TRUE(accepts(mem, "b1.hq2.l3.s5.dqk64.f16.mask=bool.causal=tl.seed1.gen=normal", "sm80"));
  EXPECT_TRUE(
      accepts(mem, "b1.hq2.l3.s5.dqk64.f16.mask=add.mbc=bh.causal=br.seed1.gen=normal", "sm80"));
  EXPECT_TRUE(
      declines_with(mem, "b1.hq2.l3.s5.dqk64.f16.mask=add.mbc=s.seed1.gen=normal", "sm80",
                    "the mask is broadcast over keys (stride 0 in its last dimension); fused "
                    "CUDA kernels need stride 1 there"));
  // No singleton exception here (issue #127523).
  EXPECT_TRUE(declines_with(mem,
                            "b1.hq1.l4.s4.dqk1.f32.qst=8_8_2_3_0.kst=8_8_2_3_0.vst=8_8_2_3_0.ost=4_"
                            "4_1_1_0.seed1.gen=normal",
                            "sm75", "q has head-dim stride 3, not 1"));
  EXPECT_TRUE(
      declines_with(mem, "b2.hq2.l4.s4.dqk64.f16.qlen=2_4.kvlen=0_4.packed.seed1.gen=normal",
                    "sm80", "packed rows: batch element 0 has an empty sequence (L_b=2, S_b=0)"));
  EXPECT_TRUE(declines_with(mem, "b1.hq2.l16.s16.dqk64.f16.win=4_0_br.seed1.gen=normal", "sm80",
                            "sliding windows are not supported"));
  EXPECT_TRUE(accepts(mem, "b1.hq8.hkv2.l16.s16.dqk64.f16.seed1.gen=normal", "sm80"));
}

// ---------------------------------------------------------------- cuda.cudnn

TEST(CudaCudnn, VersionGates) {
  EXPECT_TRUE(
      declines_with(cudnn, kBase, "sm80:cudnn=none",
                    "no cuDNN library on sm80:cudnn=none; cuDNN attention needs 8.9.3 or newer"));
  EXPECT_EQ(cudnn.supports(problem(kBase), device("sm80:cudnn=none")).reasons.size(), 1u);
  EXPECT_TRUE(
      declines_with(cudnn, kBase, "sm80:cudnn=8.9.2", "cuDNN 8.9.2 has no SDPA; it needs 8.9.3"));
  const std::string drop = "b1.hq2.l128.s128.dqk64.f16.p0.125.seed1.gen=normal";
  // can_use_cudnn_attention: dropout > 0 && 91100 < version < 91400 declines.
  EXPECT_TRUE(declines_with(
      cudnn, drop, "sm90:cudnn=9.12.0",
      "dropout is disabled with cuDNN above 9.11.0 and below 9.14.0 (device has 9.12.0)"));
  EXPECT_TRUE(declines_with(
      cudnn, drop, "sm90:cudnn=9.13.5",
      "dropout is disabled with cuDNN above 9.11.0 and below 9.14.0 (device has 9.13.5)"));
  EXPECT_TRUE(declines_with(
      cudnn, drop, "sm90:cudnn=9.11.1",
      "dropout is disabled with cuDNN above 9.11.0 and below 9.14.0 (device has 9.11.1)"));
  EXPECT_TRUE(accepts(cudnn, drop, "sm90:cudnn=9.11.0")) << "the gate is exclusive at 9.11.0";
  EXPECT_TRUE(accepts(cudnn, drop, "sm90:cudnn=9.14.0"));
  EXPECT_TRUE(accepts(cudnn, drop, "sm90:cudnn=9.10.2"));
  EXPECT_TRUE(declines_with(cudnn, drop, "sm80:cudnn=8.9.4",
                            "dropout needs cuDNN 8.9.6 or newer (device has 8.9.4)"));
  EXPECT_TRUE(
      declines_with(cudnn, "b1.hq2.l128.s100.dqk64.f16.seed1.gen=normal", "sm80:cudnn=8.9.4",
                    "S=100 is not a multiple of 64, needed below cuDNN 8.9.6 (device has 8.9.4)"));
  EXPECT_TRUE(accepts(cudnn, "b1.hq2.l128.s100.dqk64.f16.seed1.gen=normal", "sm80:cudnn=8.9.6"));
  EXPECT_TRUE(declines_with(cudnn, "b1.hq2.l32.s128.dqk64.f16.seed1.gen=normal", "sm80:cudnn=8.9.7",
                            "L=32 is below 64, needed before cuDNN 9.0.0 (device has 8.9.7)"));
  EXPECT_TRUE(declines_with(cudnn, "b1.hq2.l96.s128.dqk64.f16.p0.25.seed1.gen=normal",
                            "sm80:cudnn=8.9.7",
                            "with dropout, L=96 and S=128 must be multiples of 64 before cuDNN "
                            "9.0.0 (device has 8.9.7)"));
  EXPECT_TRUE(accepts(cudnn, "b1.hq2.l32.s128.dqk64.f16.seed1.gen=normal", "sm80:cudnn=9.0.0"));
}

TEST(CudaCudnn, ArchDtypeAndMultiples) {
  EXPECT_TRUE(
      declines_with(cudnn, kBase, "sm75",
                    "compute capability sm75 is outside the supported range [sm80, sm121]"));
  EXPECT_TRUE(declines_with(cudnn, "b1.hq2.l128.s128.dqk64.f32.seed1.gen=normal", "sm80",
                            "dtype f32 is not supported (supported: f16, bf16)"));
  EXPECT_TRUE(declines_with(cudnn, "b1.hq2.l128.s128.dqk60.f16.seed1.gen=normal", "sm80",
                            "head dim dqk=60 is not a multiple of 8"));
  EXPECT_TRUE(declines_with(cudnn, "b1.hq2.l128.s128.dqk64.dv36.f16.seed1.gen=normal", "sm80",
                            "head dim dv=36 is not a multiple of 8"));
}

TEST(CudaCudnn, HeadDimLimits) {
  const std::string d256 = "b1.hq2.l128.s128.dqk256.f16.seed1.gen=normal";
  EXPECT_TRUE(
      declines_with(cudnn, d256, "sm80",
                    "head dim dqk=256 exceeds cuDNN's limit of 128 on sm80 with cuDNN 9.16.0"));
  EXPECT_TRUE(
      declines_with(cudnn, d256, "sm90",
                    "head dim dv=256 exceeds cuDNN's limit of 128 on sm90 with cuDNN 9.16.0"));
  EXPECT_TRUE(accepts(cudnn, d256, "sm90:cudnn=9.23.0"));
  EXPECT_TRUE(accepts(cudnn, d256, "sm100:cudnn=9.23.0"));
  // check_cudnn_tensor_shapes: 256 needs major 9 with minor 0, or major 10.
  EXPECT_TRUE(
      declines_with(cudnn, d256, "sm91:cudnn=9.23.0",
                    "head dim dqk=256 exceeds cuDNN's limit of 128 on sm91 with cuDNN 9.23.0"));
  EXPECT_TRUE(
      declines_with(cudnn, "b1.hq2.l128.s128.dqk192.dv128.f16.seed1.gen=normal", "sm91",
                    "head dim dqk=192 exceeds cuDNN's limit of 128 on sm91 with cuDNN 9.16.0"));
  EXPECT_TRUE(
      declines_with(cudnn, d256, "sm86:cudnn=9.23.0",
                    "head dim dqk=256 exceeds cuDNN's limit of 128 on sm86 with cuDNN 9.23.0"));
  EXPECT_TRUE(
      declines_with(cudnn, d256, "sm107:cudnn=9.25.0",
                    "head dim dqk=256 exceeds cuDNN's limit of 128 on sm107 with cuDNN 9.25.0"));
  EXPECT_TRUE(accepts(cudnn, d256, "sm107:cudnn=9.26.0"));
  EXPECT_TRUE(
      declines_with(cudnn, "b1.hq2.l128.s128.dqk264.f16.seed1.gen=normal", "sm90:cudnn=9.23.0",
                    "head dim dqk=264 exceeds cuDNN's limit of 256 on sm90 with cuDNN 9.23.0"));
  const std::string d192 = "b1.hq2.l128.s128.dqk192.dv128.f16.seed1.gen=normal";
  EXPECT_TRUE(accepts(cudnn, d192, "sm90"));
  EXPECT_TRUE(
      declines_with(cudnn, d192, "sm90:cudnn=9.10.0",
                    "head dim dqk=192 exceeds cuDNN's limit of 128 on sm90 with cuDNN 9.10.0"));
  EXPECT_TRUE(
      declines_with(cudnn, d192, "sm80",
                    "head dim dqk=192 exceeds cuDNN's limit of 128 on sm80 with cuDNN 9.16.0"));
}

TEST(CudaCudnn, DropoutAndLengths) {
  EXPECT_TRUE(declines_with(cudnn, "b1.hq2.l128.s128.dqk64.f16.p0.1.seed1.gen=normal", "sm90",
                            "dropout p=0.1 is not a multiple of 1/16"));
  EXPECT_TRUE(accepts(cudnn, "b1.hq2.l128.s128.dqk64.f16.p0.0625.seed1.gen=normal", "sm90"));
  EXPECT_TRUE(declines_with(cudnn, "b1.hq2.l128.s1.dqk64.f16.seed1.gen=normal", "sm90",
                            "S=1 (a single key) is not supported"));
  EXPECT_TRUE(declines_with(cudnn, "b1.hq2.l1.s128.dqk64.f16.p0.5.seed1.gen=normal", "sm90",
                            "L=1 with dropout is not supported"));
  EXPECT_TRUE(accepts(cudnn, "b1.hq2.l1.s128.dqk64.f16.seed1.gen=normal", "sm90"));
}

TEST(CudaCudnn, BatchAndHeadLimits) {
  EXPECT_TRUE(declines_with(cudnn, "b65536.hq1.l2.s2.dqk8.f16.seed1.gen=normal", "sm90",
                            "batch 65536 exceeds 65535"));
  EXPECT_TRUE(declines_with(cudnn, "b1.hq65536.l2.s2.dqk8.f16.seed1.gen=normal", "sm90",
                            "hq 65536 exceeds 65535"));
  EXPECT_TRUE(accepts(cudnn, "b65535.hq1.l2.s2.dqk8.f16.seed1.gen=normal", "sm90"));
}

TEST(CudaCudnn, MasksCausalGqa) {
  EXPECT_TRUE(accepts(cudnn, "b1.hq2.l128.s128.dqk64.f16.mask=bool.seed1.gen=normal", "sm90"));
  EXPECT_TRUE(accepts(cudnn, "b1.hq2.l64.s128.dqk64.f16.causal=tl.seed1.gen=normal", "sm90"));
  EXPECT_TRUE(declines_with(cudnn, "b1.hq2.l128.s128.dqk64.f16.causal=br.seed1.gen=normal", "sm90",
                            "bottom-right causal masks are not supported"));
  EXPECT_TRUE(
      declines_with(cudnn, "b1.hq2.l128.s128.dqk64.f16.mask=add.mbc=ls.seed1.gen=normal", "sm90",
                    "the mask is broadcast over keys (stride 0 in its last dimension); fused "
                    "CUDA kernels need stride 1 there"));
  EXPECT_TRUE(accepts(cudnn, "b1.hq8.hkv2.l128.s128.dqk64.f16.seed1.gen=normal", "sm90"));
}

TEST(CudaCudnn, PackedRows) {
  const std::string ok =
      "b2.hq2.l256.s256.dqk64.f16.qlen=200_256.kvlen=200_256.packed.seed1.gen=normal";
  // check_for_nested_inputs: NestedTensor inputs only with the environment switch.
  EXPECT_TRUE(declines_with(cudnn, ok, "sm90",
                            "packed variable-length rows (NestedTensor inputs) need PyTorch's "
                            "TORCH_CUDNN_SDPA_NESTED_TENSOR_ENABLED switch (device option "
                            "cudnn_nested=1)"));
  EXPECT_TRUE(accepts(cudnn, ok, "sm90:cudnn_nested=1"));
  EXPECT_TRUE(accepts(cudnn, ok, "sm100:cudnn_nested=1"));
  EXPECT_TRUE(
      declines_with(cudnn, ok, "sm80",
                    "packed variable-length rows need an sm9x or sm10x device, device is sm80"));
  EXPECT_TRUE(declines_with(
      cudnn, "b2.hq2.l64.s64.dqk64.f16.qlen=64_64.kvlen=64_64.packed.seed1.gen=normal", "sm90",
      "packed variable-length rows need a maximum query length above 128 (L=64)"));
}

}  // namespace
}  // namespace sdpa
