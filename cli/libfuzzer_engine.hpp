// The coverage-guided engine of `sdpa-cts fuzz`: libFuzzer (LLVMFuzzerRunDriver) drives the
// bytes, which decode into a case as the `differential` target's do (fuzz/case_from_bytes),
// and the backend runs in this process, so libFuzzer sees the coverage of the kernel (of the
// whole suite, and of a plugin built with -fsanitize=fuzzer-no-link). Linked only into a
// Clang build with SDPA_CTS_FUZZ (the `fuzz` preset, AddressSanitizer + UBSan on).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "cli/engine_options.hpp"
#include "core/verdict.hpp"

namespace sdpa::cli {

// Whether this build links libFuzzer.
bool libfuzzer_linked();

struct LibFuzzerOptions {
  double seconds = 60;     // -max_total_time
  std::uint64_t seed = 1;  // -seed (0 is libFuzzer's "random"; 1 is used instead)
  double timeout = 60;     // -timeout: seconds per input before libFuzzer calls it a hang
  std::string work_dir;    // libFuzzer's growing corpus and its crash files go here
};

// A failing case (FAIL, or CRASH by an exception) found in-process: `on_failure` shrinks and
// reports it and returns true to end the run, after which `finish` prints the summary and
// gives the exit code. A signal or a sanitizer report ends the run the libFuzzer way (the
// input saved in work_dir), after a line naming the case and how to shrink it.
// Never returns: when the time is up, or on_failure asked to end, the process exits with
// finish's code. Throws std::invalid_argument when this build has no libFuzzer.
[[noreturn]] void run_libfuzzer(const SearchTarget& target, const LibFuzzerOptions& options,
                                const std::function<bool(conformance::Status, const std::string& id,
                                                         const std::string& why)>& on_failure,
                                const std::function<int(std::size_t executions)>& finish);

}  // namespace sdpa::cli
