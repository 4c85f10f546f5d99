// The fuzzer's detection power (docs/FUZZING.md, "Detection power"): `sdpa-cts fuzz`'s search
// (the sampler with search_sampler_options(), seed S, case i = sample_seed(S, i)) run against
// every mutant of the catalog, in this process, until the first FAIL or a budget of cases or
// seconds; the control (the correct kernel) must pass every case drawn. Prints one line per
// mutant (cases and seconds to the first finding, the finding's case ID) and a summary with
// the median. Not a CTest test: a measurement, with the command in the docs.
//
//   mutant_search [--seconds-per-mutant N] [--max-cases N] [--seed S]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "conformance/engine/case_sampler.hpp"
#include "conformance/engine/check_case.hpp"
#include "core/case_id.hpp"
#include "tests/conformance/mutants/mutant_backend.hpp"
#include "tests/conformance/mutants/mutation.hpp"

using namespace sdpa;
using namespace sdpa::conformance;
using sdpa::testing::MutantBackend;
using sdpa::testing::Mutation;

int main(int argc, char** argv) {
  double seconds = 60;
  std::int64_t max_cases = 20000;
  std::uint64_t seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--seconds-per-mutant")
      seconds = std::atof(argv[i + 1]);
    else if (a == "--max-cases")
      max_cases = std::atoll(argv[i + 1]);
    else if (a == "--seed")
      seed = std::strtoull(argv[i + 1], nullptr, 10);
    else {
      std::fprintf(stderr, "usage: %s [--seconds-per-mutant N] [--max-cases N] [--seed S]\n",
                   argv[0]);
      return 2;
    }
  }
  const SamplerOptions options = search_sampler_options();
  const Device cpu = detect_cpu();
  using Clock = std::chrono::steady_clock;
  std::vector<double> times;
  int found = 0, total = 0;
  for (const auto& info : sdpa::testing::mutation_catalog()) {
    ++total;
    const MutantBackend mutant(info.mutation);
    const auto t0 = Clock::now();
    std::int64_t drawn = 0, run = 0;
    std::string finding;
    while (drawn < max_cases &&
           std::chrono::duration<double>(Clock::now() - t0).count() < seconds) {
      const Case c = sample_case(sample_seed(seed, static_cast<std::uint64_t>(drawn++)), options);
      if (!mutant.supports(c.problem, cpu).ok()) continue;
      ++run;
      const CaseOutcome o = check_case(mutant, c, cpu);
      if (o.status == Status::fail || o.status == Status::crash) {
        // A finding counts only where the correct kernel passes the same case.
        const Status control = check_case(MutantBackend(Mutation::none), c, cpu).status;
        if (control != Status::pass && control != Status::quality_warning &&
            control != Status::mistrusted) {
          std::printf("CONTROL %s on %s: the harness, not the mutant, is wrong\n",
                      status_name(control), format_case_id(c).c_str());
          return 1;
        }
        finding = format_case_id(c);
        break;
      }
    }
    const double t = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!finding.empty()) {
      ++found;
      times.push_back(t);
      std::printf("%-28s found after %6lld cases (%5lld run) in %7.2f s: %s\n",
                  std::string(info.name).c_str(), static_cast<long long>(drawn),
                  static_cast<long long>(run), t, finding.c_str());
    } else {
      std::printf("%-28s SURVIVED %lld cases (%lld run) in %.2f s\n",
                  std::string(info.name).c_str(), static_cast<long long>(drawn),
                  static_cast<long long>(run), t);
    }
    std::fflush(stdout);
  }
  std::sort(times.begin(), times.end());
  const double median = times.empty() ? 0
                        : times.size() % 2
                            ? times[times.size() / 2]
                            : (times[times.size() / 2 - 1] + times[times.size() / 2]) / 2;
  std::printf(
      "found %d of %d mutants (seed %llu, budget %.0f s or %lld cases each); median time to "
      "the first finding %.2f s\n",
      found, total, static_cast<unsigned long long>(seed), seconds,
      static_cast<long long>(max_cases), median);
  return 0;
}
