// cuda.flash's kernel code (kernels/cuda/flash_body.hpp) judged on the host emulator
// (kernels/cuda/emulator/): the same body nvcc compiles for the GPU, its mma.sync, ldmatrix
// and cp.async emulated as PTX defines them, run through the one judge against the
// reference. What this cannot show: the GPU's timing, its own mma accumulation order, and
// anything nvcc does differently from the host compiler; the GPU check does
// (scripts/gpu-check.sh).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "conformance/check_case.hpp"
#include "core/case_id.hpp"
#include "core/device.hpp"
#include "kernels/cuda/cuda_backends.hpp"
#include "kernels/cuda/emulator/emulated_kernels.hpp"
#include "kernels/cuda/plan_builder.hpp"

namespace sdpa {
namespace {

using conformance::check_case;
using conformance::Status;
using conformance::status_name;

// cuda.flash with its descriptor's rules for a simulated sm80 (8 SMs, so that small decode
// shapes split), running on the emulator in host memory.
class EmulatedFlash final : public Backend {
 public:
  EmulatedFlash() : caps_(cuda::flash_backend().capabilities()) {
    caps_.device = DeviceKind::cpu;
    caps_.memory = MemorySpace::host;
  }
  std::string_view name() const override { return "emulated.cuda.flash"; }
  const Capabilities& capabilities() const override { return caps_; }
  PrecisionContract precision(DType dtype) const override {
    return cuda::flash_backend().precision(dtype);
  }
  Support supports(const Problem& p, const Device&) const override {
    return cuda::flash_backend().supports(p, gpu());
  }
  void run(const Problem& p, const Buffers& buf, const Device&, const RunOptions&) const override {
    cuda::detail::LaunchDevice d;
    d.sm = 80;
    d.sm_count = 8;
    cuda::emu::run_flash_plan(cuda::detail::make_plan(p, buf), d);
  }
  static const Device& gpu() {
    static const Device d = parse_device_or_throw("sm80");
    return d;
  }

 private:
  Capabilities caps_;
};

const EmulatedFlash& emulated_flash() {
  static const EmulatedFlash b;
  return b;
}

class EmulatedCudaFlash : public testing::TestWithParam<std::string> {};

TEST_P(EmulatedCudaFlash, PassesTheJudge) {
  const Case c = parse_case_id_or_throw(GetParam());
  const auto out = check_case(emulated_flash(), c, detect_cpu());
  EXPECT_EQ(out.status, Status::pass) << GetParam() << ": " << status_name(out.status) << " "
                                      << out.message;
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

INSTANTIATE_TEST_SUITE_P(Cases, EmulatedCudaFlash, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<std::string>& info) {
                           return "case" + std::to_string(info.index);
                         });

}  // namespace
}  // namespace sdpa
