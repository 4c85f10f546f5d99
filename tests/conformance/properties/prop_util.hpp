// Shared pieces of the conformance property suite (docs/CONFORMANCE.md, "Property tests"):
// the backends and SIMD targets a property runs over, the judge (check_case) with a
// paste-able repro line in every failure, and running a RapidCheck property inside a
// value-parameterised GoogleTest so that its failure message names the minimal case.
#pragma once

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <ostream>
#include <string>
#include <vector>

#include "conformance/engine/check_case.hpp"
#include "core/case_id.hpp"
#include "kernels/backend.hpp"
#include "tests/kernels/target_run.hpp"

namespace sdpa::props {

using namespace sdpa::conformance;

using test_support::TargetRun;

// This machine's CPU, detected once.
const Device& this_cpu();

// The built-in backends that run on this machine (device kind cpu), in registry order.
// The CUDA descriptors in builtin_backends() have no kernels here; the dispatcher family
// covers their decisions on simulated devices.
std::vector<const Backend*> cpu_backends();

// Names of the SIMD targets this CPU has, lowest first ("scalar", ..., "avx512bf16").
std::vector<std::string> simd_targets();

// One instance of a family's test: a backend and the SIMD target forced on it
// ("" = the backend's own choice).
struct Combo {
  const Backend* backend = nullptr;
  std::string target;
};
void PrintTo(const Combo& c, std::ostream* os);

// Every CPU backend with its default target / with every target this CPU has.
std::vector<Combo> every_backend();
std::vector<Combo> every_backend_and_target();
// GoogleTest parameter name, e.g. "cpu_flash_avx2" or "cpu_math_default".
std::string combo_name(const ::testing::TestParamInfo<Combo>& info);

// The command that reruns one case: sdpa-cts run --backend B --case 'ID' [--simd T]
// [--threads N].
std::string repro(const Backend& b, const Case& c, const TargetRun& opt);

// Judges a case with check_case. Returns "" when it may appear in a certification (PASS or
// QUALITY_WARNING; MISTRUSTED, which check_case returns only within the bound; or
// NOT_SUPPORTED where the backend's declared capabilities exclude the problem), else the
// verdict, its message and the repro line. `declined` is set when the backend declined.
std::string judge(const Backend& b, const Case& c, const TargetRun& opt,
                  const Device& device = this_cpu(), bool* declined = nullptr);

// Fails the running RapidCheck property with `message` (it is also what the GoogleTest
// failure prints, for the minimal case after shrinking).
[[noreturn]] void fail(const std::string& message);

// Discards the running RapidCheck case because the backend declines it (`why`): a test body
// runs over every backend, and a problem a backend declines is not its to answer ("decline or
// be correct"; judge() checks the decline against the declared capabilities). When a backend
// declines every problem a property draws, check_property skips the test naming the reason.
[[noreturn]] void discard_declined(const Backend& b, const std::string& why);

// judge() and fail() on a non-empty verdict.
void require_pass(const Backend& b, const Case& c, const TargetRun& opt);

// Runs a RapidCheck property (a callable drawing with operator*) inside the current
// GoogleTest; `weight` scales the iteration count of the configuration (RC_PARAMS
// max_success, which the CTest labels set) for expensive properties, at least 1. A failure
// reports RapidCheck's counterexample and the message of the last (minimal) failing run.
void check_property(const std::string& what, const rc::detail::Property& property,
                    double weight = 1.0);
template <typename F>
void check(const std::string& what, F&& f, double weight = 1.0) {
  check_property(what, rc::detail::toProperty(std::forward<F>(f)), weight);
}

// True when a dtype is in the backend's declared dtypes.
bool has_dtype(const Backend& b, DType t);

}  // namespace sdpa::props
