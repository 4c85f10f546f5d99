// cuda.flash's and cuda.mem_efficient's kernel code (kernels/cuda/flash_body.hpp,
// mem_efficient_body.hpp) judged on the host emulator
// (kernels/cuda/emulator/): the same body nvcc compiles for the GPU, its mma.sync, ldmatrix
// and cp.async emulated as PTX defines them, run through the one judge against the
// reference. What this cannot show: the GPU's timing, its own mma accumulation order, and
// anything nvcc does differently from the host compiler; the GPU check does
// (scripts/gpu-check.sh).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "conformance/engine/check_case.hpp"
#include "core/case_id.hpp"
#include "core/device.hpp"
#include "kernels/cuda/cuda_backends.hpp"
#include "kernels/cuda/emulator/emu_runtime.hpp"
#include "kernels/cuda/flash_body.hpp"
#include "kernels/cuda/mem_efficient_body.hpp"
#include "kernels/lowered_problem.hpp"

namespace sdpa {
namespace {

using conformance::check_case;
using conformance::Status;
using conformance::status_name;

// A CUDA backend with its descriptor's rules for a simulated sm80 (8 SMs, so that small
// decode shapes split), running its kernel on the emulator in host memory.
class Emulated final : public Backend {
 public:
  using Runner = void (*)(const Problem&, const Buffers&);
  // `without_mma_term`: the contract with its tensor-core accumulation taken out.
  Emulated(const Backend& gpu, std::string name, Runner runner, std::string device = "sm80",
           bool without_mma_term = false)
      : gpu_(gpu),
        name_(std::move(name)),
        runner_(runner),
        caps_(gpu.capabilities()),
        device_(parse_device_or_throw(device)),
        without_mma_term_(without_mma_term) {
    caps_.device = DeviceKind::cpu;
    caps_.memory = MemorySpace::host;
  }
  std::string_view name() const override { return name_; }
  const Capabilities& capabilities() const override { return caps_; }
  PrecisionContract precision(DType dtype) const override {
    PrecisionContract c = gpu_.precision(dtype);
    if (without_mma_term_) c.mma_block = c.mma_extra_bits = 0;
    return c;
  }
  Support supports(const LoweredProblem& lowered, const Device&) const override {
    const Problem& p = lowered.source();
    return gpu_.supports(p, device_);
  }
  void run(const LoweredProblem& lowered, const Device&, const RunOptions&) const override {
    const Problem& p = lowered.source();
    const Buffers buf = lowered.buffers();
    runner_(p, buf);
  }

 private:
  const Backend& gpu_;
  std::string name_;
  Runner runner_;
  Capabilities caps_;
  Device device_;  // whose rules and limits apply
  bool without_mma_term_ = false;
};

const Emulated& emulated_flash() {
  static const Emulated b(
      cuda::flash_backend(), "emulated.cuda.flash", [](const Problem& p, const Buffers& buf) {
        cuda::detail::LaunchDevice d;
        d.sm = 80;
        d.sm_count = 8;
        cuda::emu::EmuRuntime rt;
        cuda::detail::flash::run_lowered(LoweredProblem(p, buf).params(), d, rt);
      });
  return b;
}

// The 4-warp blocks (64 query rows) cuda.flash takes where the device's shared memory per
// block cannot hold 8-warp tiles: head dim 256 on a 99 KiB device (sm86), and head dim 128 on
// a 48 KiB one; the emulated runtime gets the same limit and refuses a block above it.
template <std::size_t kSmemKiB>
void run_flash_with_smem(const Problem& p, const Buffers& buf) {
  cuda::detail::LaunchDevice d;
  d.sm = 86;
  d.sm_count = 8;
  d.smem_per_block = kSmemKiB * 1024;
  cuda::emu::EmuRuntime rt(d.smem_per_block);
  cuda::detail::flash::run_lowered(LoweredProblem(p, buf).params(), d, rt);
}
const Emulated& emulated_flash_99k() {
  static const Emulated b(cuda::flash_backend(), "emulated.cuda.flash.smem99k",
                          run_flash_with_smem<99>, "sm86");
  return b;
}
const Emulated& emulated_flash_48k() {
  static const Emulated b(cuda::flash_backend(), "emulated.cuda.flash.smem48k",
                          run_flash_with_smem<48>, "sm86:smem=48");
  return b;
}

const Emulated& emulated_mem_efficient() {
  static const Emulated b(cuda::mem_efficient_backend(), "emulated.cuda.mem_efficient",
                          [](const Problem& p, const Buffers& buf) {
                            cuda::emu::EmuRuntime rt;
                            cuda::detail::mem_efficient::run_lowered(
                                LoweredProblem(p, buf).params(), rt);
                          });
  return b;
}

// Each case reaches a different part of the kernel: tile edges, both causal alignments,
// windows, softcap, GQA, the three head-dim instantiations, dropout, padded and packed
// lengths, the element-wise copy path (head dims not a multiple of 8), split-KV with its
// combine kernel, the overflow guard, NaN propagation and NaN beyond the valid lengths.
const std::vector<std::string> kCases = {
    "b1.hq2.l16.s16.dqk64.bf16.seed1.gen=normal",
    "b1.hq1.l130.s150.dqk64.f16.causal=br.lse.seed2.gen=normal",
    "b1.hq1.l140.s140.dqk64.bf16.causal=tl.seed3.gen=normal",
    "b1.hq2.hkv1.l40.s200.dqk128.bf16.lse.seed4.gen=normal",
    "b1.hq1.l24.s24.dqk256.f16.causal=tl.seed5.gen=normal",
    "b2.hq1.l33.s90.dqk64.bf16.win=20_4_br.seed6.gen=normal",
    "b1.hq1.l30.s70.dqk64.f16.softcap=5.lse.seed7.gen=large_logits",
    "b1.hq2.l40.s72.dqk64.bf16.p0.3.dseed9.lse.seed8.gen=normal",
    "b2.hq2.l48.s64.dqk64.bf16.qlen=48_20.kvlen=64_30.packed.lse.seed9.gen=normal",
    "b2.hq1.l32.s80.dqk64.f16.qlen=32_7.kvlen=80_10.lse.seed10.gen=nan_beyond",
    "b1.hq1.l16.s40.dqk60.f16.lse.seed11.gen=normal",
    "b1.hq2.l1.s2048.dqk64.bf16.lse.seed12.gen=normal",
    "b1.hq1.l8.s300.dqk64.bf16.seed13.gen=v_near_max",
    "b1.hq1.l4.s20.dqk64.f16.seed14.gen=nan_q",
};

// The 4-warp blocks: row-block edges (L not a multiple of 64), both causal alignments, GQA,
// windows, split-KV decode, packed rows, dropout, the overflow guard.
const std::vector<std::string> kFourWarpCases = {
    "b1.hq2.l70.s90.dqk{128,256}.bf16.causal=br.lse.seed21.gen=normal",
    "b1.hq4.hkv2.l65.s65.dqk{128,256}.f16.causal=tl.seed22.gen=normal",
    "b2.hq1.l33.s100.dqk{128,256}.bf16.win=20_4_br.seed23.gen=normal",
    "b1.hq2.l1.s1500.dqk{128,256}.bf16.lse.seed24.gen=normal",
    "b2.hq2.l48.s64.dqk{128,256}.f16.qlen=48_20.kvlen=64_30.packed.lse.seed25.gen=normal",
    "b1.hq2.l40.s72.dqk{128,256}.bf16.p0.3.dseed9.lse.seed26.gen=normal",
    "b1.hq1.l8.s300.dqk{128,256}.bf16.seed27.gen=v_near_max",
};

// Every element type, both mask kinds, Dv != Dqk, head dims above one slab (Dqk > 128 is
// summed in slabs, Dv > 128 runs one block per slab), causal top-left with L != S and
// bottom-right, GQA, dropout, packed rows, the overflow guard in f32, NaN propagation.
const std::vector<std::string> kMemEfficientCases = {
    "b1.hq2.l20.s37.dqk64.f32.lse.seed1.gen=normal",
    "b2.hq2.hkv1.l17.s40.dqk64.dv32.f16.mask=bool.lse.seed2.gen=normal",
    "b1.hq2.l33.s45.dqk64.bf16.mask=add.seed3.gen=neg_inf_blocks",
    "b1.hq1.l9.s70.dqk200.dv136.f32.causal=tl.lse.seed4.gen=normal",
    "b1.hq1.l40.s24.dqk64.f16.causal=br.seed5.gen=normal",
    "b1.hq2.l16.s48.dqk32.f32.p0.2.dseed3.lse.seed6.gen=normal",
    "b2.hq2.l24.s40.dqk64.bf16.qlen=24_9.kvlen=40_13.packed.lse.seed7.gen=normal",
    "b1.hq1.l6.s100.dqk16.f32.seed8.gen=v_near_max",
    "b1.hq1.l5.s30.dqk16.f32.seed9.gen=nan_q",
};

// One test body for both kernels: the case must pass the judge on the emulator.
struct EmulatedCase {
  const Emulated* backend;
  std::string id;
};

void PrintTo(const EmulatedCase& c, std::ostream* os) { *os << c.backend->name() << " " << c.id; }

std::vector<EmulatedCase> emulated_cases() {
  std::vector<EmulatedCase> all;
  for (const auto& id : kCases) all.push_back({&emulated_flash(), id});
  for (const auto& id : kMemEfficientCases) all.push_back({&emulated_mem_efficient(), id});
  for (const auto& pattern : kFourWarpCases) {
    const std::size_t at = pattern.find("{128,256}");
    all.push_back({&emulated_flash_48k(), pattern.substr(0, at) + "128" + pattern.substr(at + 9)});
    all.push_back({&emulated_flash_99k(), pattern.substr(0, at) + "256" + pattern.substr(at + 9)});
  }
  return all;
}

class EmulatedCuda : public testing::TestWithParam<EmulatedCase> {};

TEST_P(EmulatedCuda, PassesTheJudge) {
  const EmulatedCase& ec = GetParam();
  const Case c = parse_case_id_or_throw(ec.id);
  const auto out = check_case(*ec.backend, c, detect_cpu());
  EXPECT_EQ(out.status, Status::pass) << ec.backend->name() << " " << ec.id << ": "
                                      << status_name(out.status) << " " << out.message;
}

// Tensor-core accumulation (docs/CONFORMANCE.md): cuda.flash with A100's measured mma rounding
// on one SM (no split: one truncating sum over all 65536 keys), on data whose products all
// have one sign. Its declared contract's bound holds; without the tensor-core term the bound
// assumes errors that grow like sqrt(S), and the truncations, which lean one way, break it.
void run_flash_a100_one_sm(const Problem& p, const Buffers& buf) {
  cuda::detail::LaunchDevice d;
  d.sm = 80;
  d.sm_count = 1;
  cuda::emu::EmuRuntime rt(0, *measured_mma_rounding(80));
  cuda::detail::flash::run_lowered(LoweredProblem(p, buf).params(), d, rt);
}
TEST(EmulatedCudaTensorCores, TruncatingSumsNeedTheContractsTerm) {
  const Emulated declared(cuda::flash_backend(), "emulated.cuda.flash.a100", run_flash_a100_one_sm);
  const Emulated without(cuda::flash_backend(), "emulated.cuda.flash.a100.rn_bound",
                         run_flash_a100_one_sm, "sm80", true);
  const Case c =
      parse_case_id_or_throw("b1.hq1.hkv1.l1.s65536.dqk32.dv32.f16.seed2.gen=v_positive");
  const auto with_term = check_case(declared, c, detect_cpu());
  EXPECT_EQ(with_term.status, Status::pass) << with_term.message;
  const auto rn_bound = check_case(without, c, detect_cpu());
  EXPECT_EQ(rn_bound.status, Status::fail) << "worst ratio " << rn_bound.worst_ratio;
  EXPECT_GT(rn_bound.worst_ratio, 1.0);
}

// A launch whose block asks for more shared memory than the device allows fails, as
// cudaLaunchKernel does on a GPU, naming both sizes.
struct SmallBody {
  static constexpr int kThreads = 32;
  static constexpr std::size_t kSmemBytes = 2048;
  void operator()(unsigned char*) const {}
};
TEST(EmulatedRuntime, RefusesABlockAboveTheSharedMemoryLimit) {
  using Body = SmallBody;
  cuda::emu::EmuRuntime small(1024);
  try {
    small.launch(Body{}, 1);
    FAIL() << "launched";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "emulator: a block needs 2048 bytes of shared memory, the device allows 1024 (the "
              "launch fails on a GPU)");
  }
  cuda::emu::EmuRuntime enough(2048);
  EXPECT_NO_THROW(enough.launch(Body{}, 1));
}

INSTANTIATE_TEST_SUITE_P(Cases, EmulatedCuda, testing::ValuesIn(emulated_cases()),
                         [](const testing::TestParamInfo<EmulatedCase>& info) {
                           std::string n(info.param.backend->name());
                           for (char& ch : n)
                             if (ch == '.') ch = '_';
                           return n + "_" + std::to_string(info.index);
                         });

}  // namespace
}  // namespace sdpa
