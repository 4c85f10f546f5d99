// The example backend family (kernels/example), added exactly as docs/KERNELS.md "Adding a
// backend" says: one folder, one registration, one CMake line. Built when
// SDPA_CTS_BACKEND_EXAMPLE=ON (the debug and asan presets): it is registered after the
// built-in families, the dispatcher sees it like any other backend, and it passes the smoke
// tier, declining exactly what its capabilities exclude.
#include <gtest/gtest.h>

#include "conformance/engine/check_case.hpp"
#include "conformance/engine/tier.hpp"
#include "conformance/judge/requested_outputs.hpp"
#include "dispatcher/dispatcher.hpp"
#include "kernels/registry.hpp"

namespace sdpa {

using namespace sdpa::conformance;
namespace {

TEST(ExampleBackend, RegisteredByItsFamilyAfterTheOthers) {
  const Backend* b = find_backend("example.naive");
  ASSERT_NE(b, nullptr) << "known: " << backend_registry().names();
  EXPECT_EQ(builtin_backends().back(), b);
  EXPECT_EQ(backend_family_names().back(), "example");
}

TEST(ExampleBackend, DispatcherPicksItWhenItIsTheOnlyOneEnabled) {
  dispatcher::Policy policy;
  policy.enabled = std::vector<std::string>{"example.naive"};
  const auto e = dispatcher::explain(parse_case_id_or_throw("b1.hq2.l8.s8.dqk16.f32.seed1").problem,
                                     detect_cpu(), policy, builtin_backends());
  EXPECT_EQ(e.chosen, "example.naive");
}

TEST(ExampleBackend, PassesTheSmokeTier) {
  const Backend& b = *find_backend("example.naive");
  const TierEntries tier = load_tier("smoke", default_tiers_dir(), default_source_dir());
  int passed = 0;
  for (const auto& id : tier.case_ids) {
    const Case c = parse_case_id_or_throw(id);
    const CaseOutcome o = check_case(b, c, detect_cpu());
    // What the judge asks of it: the case without the outputs it does not return
    // (conformance/judge/requested_outputs.hpp).
    Support caps;
    check_capabilities(b.capabilities(),
                       without_unreturned_outputs(b.capabilities(), c.problem).judged, detect_cpu(),
                       caps);
    if (caps.ok()) {
      EXPECT_TRUE(is_pass(o.status)) << id << ": " << status_name(o.status) << " " << o.message;
      passed += is_pass(o.status);
    } else {
      EXPECT_EQ(o.status, Status::not_supported) << id;
    }
  }
  EXPECT_GE(passed, 15);  // at least the 17 generated smoke cases within its capabilities
}

}  // namespace
}  // namespace sdpa
