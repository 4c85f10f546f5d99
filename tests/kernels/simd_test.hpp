// The SIMD layer's per-target checks (simd_test_body.hpp, compiled once per ISA target with
// that target's flags by simd_test_<target>.cpp) and what they report to the test driver
// (simd_test.cpp). Plain data and declarations only: no inline code here may be compiled
// with one target's flags and picked by the linker for another.
#pragma once

#include "core/device.hpp"

namespace sdpa::cpu::simd_test {

// Value-initialise it (Report r{}): an aggregate without default member initialisers, so
// that no constructor is compiled in the per-target units.
struct Report {
  IsaTarget compiled_as;  // simd::kTarget of the unit that ran the checks
  long checks;            // comparisons made
  long failures;          // comparisons that failed
  double exp_ulp;         // largest error of vexp over normal results, in ulps
  double exp2_ulp;        // largest error of vexp2 over normal results, in ulps
  int nmessages;          // messages kept (the first failures)
  char messages[10][300];
};

void run_scalar(Report& r);
void run_avx2(Report& r);
void run_avx512(Report& r);
void run_avx512bf16(Report& r);

}  // namespace sdpa::cpu::simd_test
