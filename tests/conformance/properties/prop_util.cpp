#include "tests/conformance/properties/prop_util.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <sstream>

#include "kernels/registry.hpp"

#ifdef SDPA_PROPS_MUTANTS
#include <cstdlib>
#include <stdexcept>

#include "tests/conformance/mutants/mutant_backend.hpp"
#endif

namespace sdpa::props {

using namespace sdpa::conformance;
namespace {

// The reason of the last problem a backend declined in the running property.
std::string& last_decline() {
  static thread_local std::string s;
  return s;
}

// The message of the last failing run of the property being checked: after shrinking, the
// minimal case's (RapidCheck shrinks by rerunning; the last failure is the one it keeps).
std::string& last_failure() {
  static thread_local std::string s;
  return s;
}

}  // namespace

const Device& this_cpu() {
  static const Device d = detect_cpu();
  return d;
}

#ifdef SDPA_PROPS_MUTANTS
// The mutant build (conformance_property_mutants): every property runs against one backend
// of the mutant catalog, named by SDPA_PROPS_MUTANT (a catalog name, or "control" for the
// correct kernel, the default), to measure which families kill which bug.
const Backend& mutant() {
  static const ::sdpa::testing::MutantBackend b = [] {
    const char* env = std::getenv("SDPA_PROPS_MUTANT");
    const std::string name = env ? env : "control";
    if (name == "control") return ::sdpa::testing::MutantBackend(::sdpa::testing::Mutation::none);
    for (const auto& m : ::sdpa::testing::mutation_catalog()) {
      if (m.name == name) return ::sdpa::testing::MutantBackend(m.mutation);
    }
    throw std::invalid_argument("SDPA_PROPS_MUTANT: unknown mutant '" + name + "'");
  }();
  return b;
}
#endif

std::vector<const Backend*> cpu_backends() {
#ifdef SDPA_PROPS_MUTANTS
  return {&mutant()};
#endif
  std::vector<const Backend*> v;
  for (const Backend* b : builtin_backends()) {
    if (b->capabilities().device == DeviceKind::cpu) v.push_back(b);
  }
  return v;
}

std::vector<std::string> simd_targets() { return test_support::isa_target_names(); }

void PrintTo(const Combo& c, std::ostream* os) {
  *os << c.backend->name() << " [" << (c.target.empty() ? "default" : c.target) << "]";
}

std::vector<Combo> every_backend() {
  std::vector<Combo> v;
  for (const Backend* b : cpu_backends()) v.push_back({b, ""});
  return v;
}

std::vector<Combo> every_backend_and_target() {
#ifdef SDPA_PROPS_MUTANTS
  return every_backend();  // the mutant kernel has no SIMD targets
#endif
  std::vector<Combo> v;
  for (const Backend* b : cpu_backends()) {
    for (const std::string& t : simd_targets()) v.push_back({b, t});
  }
  return v;
}

std::string combo_name(const ::testing::TestParamInfo<Combo>& info) {
  std::string n(info.param.backend->name());
  std::replace(n.begin(), n.end(), '.', '_');
  return n + "_" + (info.param.target.empty() ? "default" : info.param.target);
}

std::string repro(const Backend& b, const Case& c, const TargetRun& opt) {
  std::string r =
      "sdpa-cts run --backend " + std::string(b.name()) + " --case '" + format_case_id(c) + "'";
  if (!opt.target.empty()) r += " --simd " + opt.target;
  if (opt.threads > 0) r += " --threads " + std::to_string(opt.threads);
  return r;
}

std::string judge(const Backend& b, const Case& c, const TargetRun& opt, const Device& device,
                  bool* declined) {
  // The device with the combo's ISA target chosen (a simulated CPU keeps its own).
  const Device run_on = opt.target.empty() ? device : with_isa_target(device, opt.target);
  const CaseOutcome out = check_case(b, c, run_on, RunOptions{opt.threads});
  if (declined) *declined = out.status == Status::not_supported;
  Support caps;
  check_capabilities(b.capabilities(), c.problem, device, caps);
  switch (out.status) {
    case Status::pass:
    case Status::quality_warning:
    case Status::mistrusted:
      return "";
    case Status::not_supported:
      if (!caps.ok()) return "";
      return std::string(b.name()) + " declined a problem its declared capabilities include (" +
             out.message + "): " + repro(b, c, opt);
    default:
      return std::string(status_name(out.status)) + " " + out.message + "\n  " + repro(b, c, opt);
  }
}

void fail(const std::string& message) {
  last_failure() = message;
  RC_FAIL(message);
}

void discard_declined(const Backend& b, const std::string& why) {
  last_decline() = std::string(b.name()) + " declines: " + why;
  RC_DISCARD(last_decline());
}

void require_pass(const Backend& b, const Case& c, const TargetRun& opt) {
  if (std::string why = judge(b, c, opt); !why.empty()) fail(why);
}

void check_property(const std::string& what, const rc::detail::Property& property, double weight) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  rc::detail::TestMetadata metadata;
  metadata.id = std::string(info->test_suite_name()) + "/" + info->name() + "/" + what;
  metadata.description = what;
  rc::detail::TestParams params = rc::detail::configuration().testParams;
  params.maxSuccess = std::max(1, static_cast<int>(std::lround(params.maxSuccess * weight)));
  last_failure().clear();
  last_decline().clear();
  const rc::detail::TestResult result = rc::detail::checkProperty(property, metadata, params);
  if (result.template is<rc::detail::GaveUpResult>() && !last_decline().empty()) {
    const auto& gave_up = result.template get<rc::detail::GaveUpResult>();
    // Every drawn problem (or nearly every one) was declined: nothing of this property is the
    // backend's to answer. A skip with the reason, never a silent pass.
    if (gave_up.numSuccess == 0) GTEST_SKIP() << what << ": " << last_decline();
    std::cout << "note: " << what << ": ran " << gave_up.numSuccess
              << " problems; the others were declined (" << last_decline() << ")\n";
    return;
  }
  if (!result.template is<rc::detail::SuccessResult>()) {
    std::ostringstream rc_message;
    rc::detail::printResultMessage(result, rc_message);
    ADD_FAILURE() << what << " (RC_PARAMS=\"seed=" << params.seed << "\")\n"
                  << rc_message.str() << "\nminimal failing case: " << last_failure();
  }
}

bool has_dtype(const Backend& b, DType t) {
  const auto& d = b.capabilities().dtypes;
  return std::find(d.begin(), d.end(), t) != d.end();
}

}  // namespace sdpa::props
