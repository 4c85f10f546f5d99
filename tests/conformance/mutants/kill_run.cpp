#include "tests/conformance/mutants/kill_run.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <sstream>

#include "conformance/engine/golden_verify.hpp"
#include "conformance/engine/tier.hpp"
#include "core/case_id.hpp"
#include "core/device.hpp"
#include "golden/golden_file.hpp"
#include "tests/conformance/mutants/mutant_backend.hpp"

namespace sdpa::testing {

using namespace sdpa::conformance;
namespace {

// The gate's rule, the one kill rule of the suite: a mutant is killed by a case only when
// the case fails the gate, i.e. `sdpa-cts run` would exit 1 for it (FAIL, CRASH or TIMEOUT:
// core/verdict.hpp is_failure). A QUALITY_WARNING, MISTRUSTED or INVALID record
// leaves the exit code 0, so it does not kill.
bool survives(Status s) { return !is_failure(s); }

// Judges generated and golden cases the way `sdpa-cts run` does; golden files open once.
class Judge {
 public:
  CaseOutcome operator()(const Backend& backend, const TierCase& c, std::string* subfamily) {
    if (c.golden_file.empty()) return check_case(backend, parse_case_id_or_throw(c.id), device_);
    auto& file = files_[c.golden_file];
    if (!file) file = std::make_unique<golden::GoldenFile>(c.golden_file);
    golden::GoldenCase g = file->load(c.id);
    if (subfamily) *subfamily = g.family;
    return conformance::judge_backend(backend, g, device_);
  }

 private:
  Device device_ = detect_cpu();                                      // the host CPU
  std::map<std::string, std::unique_ptr<golden::GoldenFile>> files_;  // by path
};

}  // namespace

std::size_t KillRun::killed() const {
  std::size_t n = 0;
  for (const auto& k : kills) n += k.killed;
  return n;
}

std::string KillRun::table() const {
  std::ostringstream s;
  s << "tier " << tier << ": " << killed() << " of " << kills.size() << " mutants killed ("
    << cases.size() << " cases)\n";
  // The control's worst err/tol per passing case (nearest-rank quantiles).
  std::vector<double> r;
  for (const auto& o : control)
    if (o.status == Status::pass) r.push_back(o.worst_ratio);
  std::sort(r.begin(), r.end());
  const auto q = [&](double p) {
    return r.empty() ? 0.0 : r[std::size_t(std::max(0.0, std::ceil(p * double(r.size())) - 1))];
  };
  s << "control err/tol over " << r.size() << " passing cases: p50 " << q(0.5) << " p90 " << q(0.9)
    << " p99 " << q(0.99) << " max " << q(1.0) << "\n";
  for (const auto& k : kills) {
    s << "  " << k.mutant.name << " -> ";
    if (!k.killed) {
      s << "SURVIVED\n";
      continue;
    }
    s << "#" << k.index << " " << k.by.id << " -> " << k.by.family
      << (k.subfamily.empty() ? "" : "/" + k.subfamily) << " (" << status_name(k.outcome.status)
      << ": " << k.outcome.message.substr(0, 100) << ")\n";
    if (k.killers.empty()) continue;
    s << "    killed by";
    for (const auto& [family, n] : k.killers) s << " " << family << ":" << n;
    s << "\n";
  }
  return s.str();
}

KillRun run_kill(const std::string& tier, bool every_kill) {
  KillRun run;
  run.tier = tier;
  run.cases = tier_cases(tier);
  const MutantBackend control(Mutation::none);
  std::vector<std::unique_ptr<MutantBackend>> mutants;
  for (const auto& info : mutation_catalog()) {
    mutants.push_back(std::make_unique<MutantBackend>(info.mutation));
    Kill k;
    k.mutant = info;
    run.kills.push_back(k);
  }
  Judge judge;
  for (std::size_t i = 0; i < run.cases.size(); ++i) {
    const TierCase& c = run.cases[i];
    std::string subfamily;
    run.control.push_back(judge(control, c, &subfamily));
    for (std::size_t m = 0; m < mutants.size(); ++m) {
      Kill& k = run.kills[m];
      if (k.killed && !every_kill) continue;
      CaseOutcome o = judge(*mutants[m], c, nullptr);
      if (survives(o.status)) continue;
      ++k.killers[c.family + (subfamily.empty() ? "" : "/" + subfamily)];
      if (k.killed) continue;
      k.killed = true;
      k.index = i;
      k.by = c;
      k.subfamily = subfamily;
      k.outcome = std::move(o);
    }
  }
  return run;
}

}  // namespace sdpa::testing
