// The commands of the sdpa-cts command line. Each file registers its commands under the parent
// it is given; cli/main.cpp holds the one table that places them (top level or a group).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace sdpa::cli {

// One registered command: its CLI11 node (to see whether it was chosen) and what runs it,
// returning the exit code (0 success, 1 a case failed or a problem was found, 2 bad usage).
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// Adds one command under `parent` (the app, or a group such as `cases`).
using AddCommand = Command (*)(CLI::App& parent);

Command add_run_command(CLI::App& parent);            // run: the main job, a conformance run
Command add_reference_command(CLI::App& parent);      // reference: the oracle on one case
Command add_explain_command(CLI::App& parent);        // explain: the dispatcher's decision
Command add_bench_command(CLI::App& parent);          // bench: time a backend on a case
Command add_golden_verify_command(CLI::App& parent);  // golden verify: the reference only
Command add_cases_export_command(CLI::App& parent);   // cases export: inputs to fill in
Command add_cases_fill_command(CLI::App& parent);     // cases fill: by a backend of this build
Command add_cases_judge_command(CLI::App& parent);    // cases judge: a filled results file
Command add_certify_command(CLI::App& parent);        // certify: a profile into a bundle
Command add_bundle_verify_command(CLI::App& parent);  // bundle verify: digests and re-runs
Command add_bundle_merge_command(CLI::App& parent);   // bundle merge: a sharded certification
Command add_report_merge_command(CLI::App& parent);   // report merge: a sharded run's reports
Command add_fuzz_command(CLI::App& parent);           // fuzz: search a backend, shrink
Command add_shrink_command(CLI::App& parent);         // shrink: one failing case
Command add_pairs_command(CLI::App& parent);          // pairs: pairwise coverage of runs
Command add_probe_command(CLI::App& parent);          // probe: GPU fragments vs the emulator

}  // namespace sdpa::cli
