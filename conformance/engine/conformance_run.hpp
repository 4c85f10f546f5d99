// The engine behind `sdpa-cts run` and `sdpa-cts certify`: resolves the device, probes the
// plugins, builds the jobs (case x backend x SIMD target), keeps this machine's shard of
// them, runs them in isolated workers with live progress, and applies the expected
// failures. Each command selects its cases, calls execute_run, and writes what it needs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "conformance/engine/case_selection.hpp"
#include "core/device.hpp"
#include "plugins/host/plugin_loader.hpp"
#include "reports/records/expectations.hpp"
#include "reports/records/run_record.hpp"
#include "reports/records/shard.hpp"

namespace sdpa::conformance {

// What to run, apart from the cases.
struct RunRequest {
  std::vector<std::string> backends;  // backends to judge; empty = every one for the device
  std::string device = "cpu";         // device string (core/device.hpp grammar)
  int jobs = 1;                       // worker processes at once
  int threads = 0;                    // OpenMP threads per backend run (0 = default)
  std::string simd;                   // "", a SIMD target name, or "all"
  double timeout = 300;               // per-job timeout in seconds
  std::uint64_t max_case_memory = 0;  // host memory one case's harness may use (0 = default)
  bool no_isolate = false;            // run jobs in this process
  std::vector<std::string> plugins;   // --plugin files (SDPA_CTS_PLUGINS adds more)
  bool plugin_backends = false;       // judge only the plugins' backends
  Shard shard;                        // the part of the jobs this machine runs
  Expectations expected;              // known failures (--expect)
};

// What a run produced.
struct RunResult {
  RunSummary summary;                         // records and run metadata, ready for reports
  Device device;                              // the resolved device
  std::vector<plugins::ProbedPlugin> probed;  // the plugins, as probed
  std::vector<std::string> backends;          // the backends judged, in order
  std::size_t cases = 0;                      // cases selected (all shards)
};

// Runs `cases` (from select_cases or a profile) as `request` says; `tier` names them in the
// reports. Throws std::invalid_argument for an unknown backend, a bad device or SIMD target,
// or an empty selection. A case too large for the run's memory limit is a NOT_JUDGED record.
RunResult execute_run(const RunRequest& request, const std::vector<SelectedCase>& cases,
                      const std::string& tier);

// The run's one greppable summary line with its counts and speed, and the notices for cases
// expected to fail that passed.
void print_run_summary(const RunResult& result);

// Parses --shard (or the TEST_TOTAL_SHARDS / TEST_SHARD_INDEX environment of a test
// runner) and reads --expect into `request`, its conditions judged against this host's CPU
// flags and `expect_facts` (--expect-fact NAME=VERSION, each); execute_run adds the ISA
// target. Throws std::invalid_argument naming the option.
void finish_run_request(RunRequest* request, const std::string& shard_text,
                        const std::string& expect_file,
                        const std::vector<std::string>& expect_facts = {});

}  // namespace sdpa::conformance
