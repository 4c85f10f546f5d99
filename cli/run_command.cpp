// `sdpa-cts run`: the main job. Runs a tier (or given cases) on every eligible backend,
// judges each against the reference, prints one greppable summary line and a repro
// command per failure, writes the reports, and exits non-zero on any FAIL, CRASH or
// TIMEOUT (an XFAIL, a failure listed with --expect, does not count).
#include <iostream>

#include "cli/commands.hpp"
#include "cli/engine_options.hpp"
#include "conformance/engine/case_memory.hpp"
#include "reports/reports.hpp"

namespace sdpa::cli {

namespace {

struct Options {
  RunRequest request;
  CaseSelection selection;  // --tier, --case, --golden, --filter, --seed, --sample, --max-work
  std::string shard;        // --shard K/N
  std::string expect_file;  // --expect FILE
  std::vector<std::string> expect_facts;  // --expect-fact NAME=VERSION
  std::string report_dir = "sdpa-cts-report";
  bool no_report = false;
};

int run(Options opt) {
  finish_run_request(&opt.request, opt.shard, opt.expect_file, opt.expect_facts);
  std::string tier_name;
  const std::vector<SelectedCase> cases = select_cases(opt.selection, &tier_name);
  if (!opt.selection.cases.empty()) {
    // A case named on the command line that cannot fit is refused, not recorded.
    const std::uint64_t limit =
        conformance::case_memory_limit(opt.request.max_case_memory, opt.request.jobs);
    for (const auto& [id, golden_file] : cases) {
      check_command_line_case_fits(id, parse_command_line_case(id), !golden_file.empty(), limit);
    }
  }
  RunResult result = execute_run(opt.request, cases, tier_name);
  result.summary.seed = opt.selection.seed;
  print_run_summary(result);
  if (!opt.no_report) {
    reports::write_reports(result.summary, opt.report_dir);
    std::cout << "report: " << opt.report_dir << "/report.html\n";
  }
  return conformance::count_statuses(result.summary).failures() > 0 ? 1 : 0;
}

}  // namespace

Command add_run_command(CLI::App& parent) {
  auto opt = std::make_shared<Options>();
  auto* cmd =
      parent.add_subcommand("run", "Run conformance cases on backends, judge them, write reports");
  add_case_selection_options(cmd, &opt->selection);
  cmd->add_option("--backend", opt->request.backends,
                  "Backend to test (repeatable); default: all for the device");
  add_run_request_options(cmd, &opt->request, &opt->shard, &opt->expect_file, &opt->expect_facts);
  cmd->add_option("--report", opt->report_dir, "Directory for the reports")->capture_default_str();
  cmd->add_flag("--no-report", opt->no_report, "Do not write reports");
  cmd->add_flag("--plugin-backends", opt->request.plugin_backends,
                "Judge only the backends of the --plugin files (of the device's kind)");
  return {cmd, [opt] { return run(*opt); }};
}

}  // namespace sdpa::cli
