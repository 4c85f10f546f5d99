// Detection power (docs/TESTING.md "Detection power: mutants"): the ci tier must pass the
// correct mutant kernel (the control) and kill every mutant of the catalog, naming the
// case and the family that killed it.
//
// SDPA_CTS_MUTANT_TIER=<tier> runs the same tests on another tier (docs/CONFORMANCE.md
// reports the smoke tier's kill rate measured that way; its survivors fail the kill test).
// SDPA_CTS_MUTANT_EVERY_KILL=1 runs every mutant on every case and prints, per mutant, how
// many cases of each family kill it (minutes: for the docs, not for CI).
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <set>

#include "core/case_id.hpp"
#include "core/device.hpp"
#include "tests/conformance/mutants/kill_run.hpp"
#include "tests/conformance/mutants/mutant_backend.hpp"

namespace sdpa::testing {

using namespace sdpa::conformance;
namespace {

std::string tier_under_test() {
  const char* t = std::getenv("SDPA_CTS_MUTANT_TIER");
  return t && *t ? t : "ci";
}

TEST(Mutants, CatalogHasAtLeastFifteenDistinctMutants) {
  const auto& catalog = mutation_catalog();
  EXPECT_GE(catalog.size(), 15u);
  std::set<std::string_view> names;
  std::set<Mutation> switches;
  for (const auto& m : catalog) {
    EXPECT_NE(m.mutation, Mutation::none);
    EXPECT_FALSE(m.bug.empty()) << m.name;
    names.insert(m.name);
    switches.insert(m.mutation);
  }
  EXPECT_EQ(names.size(), catalog.size());
  EXPECT_EQ(switches.size(), catalog.size());
}

// One test, so that CTest (one process per test) runs the tier once: the control's pass
// over the whole tier is the expensive part, and every mutant stops at its first kill.
TEST(Mutants, TierPassesTheControlAndKillsEveryMutant) {
  const char* every = std::getenv("SDPA_CTS_MUTANT_EVERY_KILL");
  const KillRun run = run_kill(tier_under_test(), every && *every == '1');
  std::cout << run.table() << std::flush;

  // The control is the correct kernel: a non-pass here is a bug in the kernel (or in the
  // judge), and would make every kill below meaningless.
  ASSERT_EQ(run.control.size(), run.cases.size());
  for (std::size_t i = 0; i < run.cases.size(); ++i) {
    const Status s = run.control[i].status;
    EXPECT_TRUE(s == Status::pass || s == Status::not_supported || s == Status::mistrusted)
        << "control on " << run.cases[i].id << ": " << status_name(s) << " "
        << run.control[i].message;
    // It declines only what it lacks (attention weights, the backward): everything else must
    // run.
    if (s == Status::not_supported) {
      const Problem p = parse_case_id_or_throw(run.cases[i].id).problem;
      EXPECT_TRUE(p.want_weights || p.backward)
          << "control declined " << run.cases[i].id << ": " << run.control[i].message;
    }
  }

  ASSERT_EQ(run.kills.size(), mutation_catalog().size());
  for (const Kill& k : run.kills) {
    EXPECT_TRUE(k.killed) << "mutant " << k.mutant.name << " (" << k.mutant.bug << ") survived the "
                          << run.tier << " tier: a hole in the suite";
    if (k.killed) {
      EXPECT_FALSE(k.by.family.empty()) << k.mutant.name << " by " << k.by.id;
    }
  }
  std::cout << "kill rate " << run.tier << ": " << run.killed() << "/" << run.kills.size() << "\n";
}

}  // namespace
}  // namespace sdpa::testing
