// The SIMD layer (kernels/cpu/simd/): its checks (simd_test_body.hpp) compiled once per ISA
// target with that target's flags, run for each target this CPU has
// (core/device.hpp available_isa_targets); the others are skipped, never run.
#include "tests/kernels/simd_test.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "kernels/cpu/isa_dispatch.hpp"
#include "simd_test_body_isas.hpp"

namespace sdpa::cpu::simd_test {

SDPA_CTS_ISA_DECLARE(simd_test_body, RunFn, run)

namespace {

struct Target {
  IsaTarget isa;
  RunFn* run;
};

// Every target of core/isa_targets.def with its unit (the test body has one for each; a target
// it lacked would run an earlier one and fail the compiled_as check below).
std::vector<Target> targets() {
  std::vector<Target> t;
  for (IsaTarget isa : all_isa_targets())
    t.push_back({isa, SDPA_CTS_ISA_DISPATCH(simd_test_body, RunFn, run, isa)});
  return t;
}

class SimdLayer : public testing::TestWithParam<Target> {};

TEST_P(SimdLayer, PrimitivesMatchScalarReferences) {
  const Target t = GetParam();
  const std::vector<IsaTarget> here = available_isa_targets(detect_cpu().cpu);
  if (std::find(here.begin(), here.end(), t.isa) == here.end())
    GTEST_SKIP() << isa_target_name(t.isa) << " is not available on this CPU";
  Report r{};
  t.run(r);
  // The unit was compiled for the target it claims (the layer reads the -m flags).
  EXPECT_EQ(isa_target_name(r.compiled_as), isa_target_name(t.isa));
  EXPECT_GT(r.checks, 100000);
  EXPECT_EQ(r.failures, 0) << r.failures << " of " << r.checks << " checks failed";
  for (int i = 0; i < r.nmessages; ++i) ADD_FAILURE() << r.messages[i];
  RecordProperty("exp_max_ulp", std::to_string(r.exp_ulp));
  RecordProperty("exp2_max_ulp", std::to_string(r.exp2_ulp));
  std::printf("%s: %ld checks, vexp max %.3f ulp, vexp2 max %.3f ulp (normal results)\n",
              std::string(isa_target_name(t.isa)).c_str(), r.checks, r.exp_ulp, r.exp2_ulp);
}

INSTANTIATE_TEST_SUITE_P(Targets, SimdLayer, testing::ValuesIn(targets()),
                         [](const testing::TestParamInfo<Target>& info) {
                           return std::string(isa_target_name(info.param.isa));
                         });

}  // namespace
}  // namespace sdpa::cpu::simd_test
