// Runs a tier against the mutant catalog: the correct control on every case, each mutant
// in tier order until its first kill (a status other than PASS and NOT_SUPPORTED).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "conformance/engine/check_case.hpp"
#include "conformance/engine/tier_cases.hpp"
#include "tests/conformance/mutants/mutation.hpp"

namespace sdpa::testing {

using namespace sdpa::conformance;

// One case of a tier, generated or golden, with the family its tier file gives it.
using conformance::tier_cases;
using conformance::TierCase;

// What killed one mutant.
struct Kill {
  MutationInfo mutant;    // the mutant
  bool killed = false;    // false: it survived the whole tier
  std::size_t index = 0;  // position of the killing case in the tier
  TierCase by;            // the killing case
  std::string subfamily;  // a golden case's own family attribute ("" for generated cases)
  CaseOutcome outcome;    // the verdict that killed it
  // With every_kill: how many cases of each family kill it (golden cases as "golden/<own>").
  std::map<std::string, std::size_t> killers;
};

// The control's verdict on every case and the kill of every mutant.
struct KillRun {
  std::string tier;                  // tier name
  std::vector<TierCase> cases;       // the tier's cases, in order
  std::vector<CaseOutcome> control;  // the correct kernel's verdict per case
  std::vector<Kill> kills;           // one per catalog entry, in catalog order
  std::size_t killed() const;        // mutants killed
  std::string table() const;         // the kill table, one line per mutant
};

// Runs it. Cases after the last kill are run for the control only; with every_kill, every
// mutant runs every case and Kill::killers counts the killing cases per family (slow: the
// whole tier once per mutant; for the docs, not for CI).
KillRun run_kill(const std::string& tier, bool every_kill = false);

}  // namespace sdpa::testing
