// Sub-commands of the sdpa-cts command line. Each file registers one command.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace sdpa::cli {

// Adds `reference` to the app; the returned function runs it and gives the exit code.
std::function<int()> add_reference_command(CLI::App& app);

// `run`: the main job (conformance run with reports).
std::function<int()> add_run_command(CLI::App& app);
// Adds `explain` (the dispatcher's decision for a case or an MHA call).
std::function<int()> add_explain_command(CLI::App& app);
// Adds `golden verify` (the reference or a backend against golden files).
std::function<int()> add_golden_command(CLI::App& app);

// Adds `bench` (times a backend on a case, one JSON line).
std::function<int()> add_bench_command(CLI::App& app);

// Adds `cases export` (inputs as a results file to fill in) and `judge` (its outputs judged).
std::function<int()> add_cases_command(CLI::App& app);
std::function<int()> add_judge_command(CLI::App& app);

// Adds `report merge` (the report directories of a sharded run into the whole run's reports).
std::function<int()> add_report_command(CLI::App& app);

// Adds `certify` (a profile on one backend, into a bundle) and `verify-bundle`.
std::function<int()> add_certify_command(CLI::App& app);
std::function<int()> add_verify_bundle_command(CLI::App& app);

// Adds `fuzz` (search a backend for failing cases, shrink each) and `shrink` (one case).
std::function<int()> add_fuzz_command(CLI::App& app);
std::function<int()> add_shrink_command(CLI::App& app);

// Adds `pairs` (pairwise coverage of tier runs; the generated covering tier).
std::function<int()> add_pairs_command(CLI::App& app);

}  // namespace sdpa::cli
