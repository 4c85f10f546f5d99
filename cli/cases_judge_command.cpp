// `sdpa-cts cases judge --results FILE.h5 [--contract SPEC]`: judges the outputs a user recorded in
// a results file (made by `sdpa-cts cases export`, filled in from their framework) with the
// one judge, against the reference, with the bound of the declared precision contract; the
// same summary line, reports and exit codes as `sdpa-cts run`. docs/PLUGINS.md.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <regex>

#include "cli/commands.hpp"
#include "cli/engine_options.hpp"
#include "conformance/engine/outcome_record.hpp"
#include "conformance/judge/judge.hpp"
#include "conformance/judge/tolerance.hpp"
#include "core/shell_quote.hpp"
#include "golden/golden_file.hpp"
#include "golden/results_backend.hpp"
#include "reports/records/run_record.hpp"
#include "reports/reports.hpp"

namespace sdpa::cli {
namespace {

using namespace sdpa::conformance;

struct Options {
  std::string results;
  std::string contract;
  std::string name = "results";
  std::vector<std::string> cases;
  std::string report_dir = "sdpa-cts-report";
  bool no_report = false;
  bool no_lse = false;  // judge O (and weights) only, even where a case asks for LSE
};

int run(const Options& opt) {
  const PrecisionContract contract = golden::parse_contract(opt.contract);
  const golden::GoldenFile file(opt.results);
  std::vector<std::string> ids = file.case_ids();
  if (!opt.cases.empty()) {
    std::vector<std::string> chosen;
    for (const auto& c : opt.cases) {
      const std::string id = format_case_id(parse_command_line_case(c));
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) {
        throw std::invalid_argument(opt.results + ": no case '" + id + "' under /sdpa");
      }
      chosen.push_back(id);
    }
    ids = chosen;
  }
  const Device device = detect_cpu();
  RunSummary summary;
  summary.tool_version = SDPA_CTS_VERSION;
  summary.tolerance_version = ToleranceTable{}.version;
  summary.tier = file.info().set.empty() ? "results" : file.info().set;
  summary.device = "results file " + opt.results;
  const auto t0 = std::chrono::steady_clock::now();
  for (const std::string& id : ids) {
    CaseRecord r;
    r.case_id = id;
    r.backend = opt.name;
    r.device = summary.device;
    r.repro = "sdpa-cts cases judge --results " + shell_quote(opt.results) + " --contract " +
              shell_quote(golden::format_contract(contract)) + (opt.no_lse ? " --no-lse" : "") +
              " --case " + shell_quote(id);
    const auto c0 = std::chrono::steady_clock::now();
    try {
      golden::GoldenCase g = file.load(id, golden::GoldenFile::Outputs::optional);
      if (opt.no_lse) g.c.problem.want_lse = false;
      r.features = case_features(g.c.problem);
      const golden::RecordedResults backend(opt.name, g, contract, opt.results);
      set_outcome(r, judge(backend, g.c.problem, g.inputs, device, RunOptions{}));
    } catch (const std::exception& e) {
      r.status = Status::fail;
      r.message = std::string("error: ") + e.what();
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
    if (is_failure(r.status)) {
      std::cerr << status_name(r.status) << " " << r.backend << " " << r.case_id << ": "
                << r.message << "\n  repro: " << r.repro << "\n";
    }
    summary.records.push_back(std::move(r));
  }
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const StatusCounts counts = count_statuses(summary);
  std::cout << summary_line(counts) << " (" << summary.records.size() << " results, " << ids.size()
            << " cases, contract " << golden::format_contract(contract) << ")\n";
  if (!opt.no_report) {
    reports::write_reports(summary, opt.report_dir);
    std::cout << "report: " << opt.report_dir << "/report.html\n";
  }
  return counts.failures() > 0 ? 1 : 0;
}

}  // namespace

Command add_cases_judge_command(CLI::App& parent) {
  auto opt = std::make_shared<Options>();
  auto* cmd = parent.add_subcommand(
      "judge", "Judge the outputs recorded in a results file (from `sdpa-cts cases export`)");
  cmd->add_option("--results", opt->results, "The filled-in results file")->required();
  cmd->add_option("--contract", opt->contract,
                  "How the outputs were computed: acc=f32,p=f32,online=0,block=0 (default "
                  "acc=f32, p = acc); sets the bound");
  cmd->add_option("--name", opt->name, "Backend name in the records and reports")
      ->capture_default_str();
  cmd->add_option("--case", opt->cases, "Judge only this case (repeatable)");
  cmd->add_option("--report", opt->report_dir, "Directory for the reports")->capture_default_str();
  cmd->add_flag("--no-report", opt->no_report, "Do not write reports");
  cmd->add_flag("--no-lse", opt->no_lse,
                "Judge O (and weights) only, for an implementation without an LSE output: "
                "cases that ask for LSE are judged without it");
  return {cmd, [opt] { return run(*opt); }};
}

}  // namespace sdpa::cli
