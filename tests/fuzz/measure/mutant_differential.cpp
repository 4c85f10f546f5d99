// Detection power of coverage-guided fuzzing (docs/FUZZING.md, section 4): the
// `differential` target's decoding (fuzz/case_from_bytes.hpp) against one mutant of the
// catalog (tests/conformance/mutants), chosen by the environment variable SDPA_CTS_MUTANT
// (its catalog name). A FAIL or CRASH of the mutant on a case the correct kernel passes is
// the finding: libFuzzer stops there, and scripts/mutant-libfuzzer.sh times it. A
// measurement, built only with the `fuzz` preset, never part of the product or of CTest.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "conformance/engine/check_case.hpp"
#include "core/case_id.hpp"
#include "core/device.hpp"
#include "fuzz/case_from_bytes.hpp"
#include "fuzz/finding.hpp"
#include "tests/conformance/mutants/mutant_backend.hpp"
#include "tests/conformance/mutants/mutation.hpp"

using namespace sdpa;

namespace {

const testing::MutantBackend& chosen_mutant() {
  static const std::unique_ptr<testing::MutantBackend> mutant = [] {
    const char* name = std::getenv("SDPA_CTS_MUTANT");
    for (const auto& info : testing::mutation_catalog()) {
      if (name && info.name == name) return std::make_unique<testing::MutantBackend>(info.mutation);
    }
    std::fprintf(stderr, "set SDPA_CTS_MUTANT to a name of the mutant catalog:");
    for (const auto& info : testing::mutation_catalog()) {
      std::fprintf(stderr, " %s", std::string(info.name).c_str());
    }
    std::fprintf(stderr, "\n");
    std::fflush(stderr);
    std::_Exit(2);  // not exit(): libFuzzer would save the input as a crash
  }();
  return *mutant;
}

bool fails(conformance::Status s) {
  return s == conformance::Status::fail || s == conformance::Status::crash;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Device cpu = detect_cpu();
  static const testing::MutantBackend control(testing::Mutation::none);
  const testing::MutantBackend& mutant = chosen_mutant();
  fuzz::FuzzInput in(data, size);
  const Case c = fuzz::case_from_bytes(in);
  if (!mutant.supports(c.problem, cpu).ok()) return 0;
  const conformance::CaseOutcome out = conformance::check_case(mutant, c, cpu);
  if (!fails(out.status)) return 0;
  // A finding counts only where the correct kernel passes the same case.
  const conformance::CaseOutcome ok = conformance::check_case(control, c, cpu);
  if (fails(ok.status)) {
    std::fprintf(stderr, "CONTROL %s on %s: the harness, not the mutant, is wrong\n",
                 std::string(conformance::status_name(ok.status)).c_str(),
                 format_case_id(c).c_str());
    std::fflush(stderr);
    std::_Exit(3);
  }
  fuzz::finding(std::string("mutant ") + std::string(mutant.name()) + " " +
                    std::string(conformance::status_name(out.status)) + " " + format_case_id(c),
                "SDPA_CTS_MUTANT=" + std::string(std::getenv("SDPA_CTS_MUTANT")) +
                    " fuzz_mutant_differential (this input)");
  return 0;
}
