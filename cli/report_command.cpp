// `sdpa-cts report merge DIR... --out DIR`: the report directories of a sharded run (one per
// shard, from `run --shard K/N`) back into the reports of the whole run (docs/SCALE-OUT.md).
// Reports only: the bundles of a sharded certification are merged by `sdpa-cts bundle merge`.
// Exits as `run` would have for the whole run: 1 on any FAIL, CRASH or TIMEOUT, else 0; 2
// when a directory cannot be read or the directories are not the shards of one run.
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "cli/commands.hpp"
#include "cli/distinct_dirs.hpp"
#include "conformance/certification/bundle.hpp"
#include "core/shell_quote.hpp"
#include "reports/merge.hpp"
#include "reports/reports.hpp"

namespace sdpa::cli {

namespace {

struct Options {
  std::vector<std::string> dirs;  // the shards' report directories
  std::string out;                // where the merged reports go
};

int merge(const Options& opt) {
  check_distinct_dirs("report merge", opt.dirs, opt.out);
  for (const auto& d : opt.dirs) {
    if (std::filesystem::exists(std::filesystem::path(d) / conformance::kManifestFile)) {
      std::string spelled = "sdpa-cts bundle merge";
      for (const auto& dir : opt.dirs) spelled += " " + shell_quote(dir);
      throw std::invalid_argument("report merge: '" + d +
                                  "' is a certification bundle (manifest.json); bundles of a "
                                  "sharded certification are merged with: " +
                                  spelled + " --out " + shell_quote(opt.out));
    }
  }
  std::vector<conformance::RunSummary> shards;
  for (const auto& d : opt.dirs) shards.push_back(reports::read_run(d));
  const conformance::RunSummary merged = reports::merge_runs(shards, opt.dirs);
  reports::write_reports(merged, opt.out);
  const conformance::StatusCounts counts = conformance::count_statuses(merged);
  std::cout << conformance::summary_line(counts) << " (" << merged.records.size()
            << " results from " << shards.size() << " shard" << (shards.size() == 1 ? "" : "s")
            << ")\nreport: " << opt.out << "/report.html\n";
  return counts.failures() > 0 ? 1 : 0;
}

}  // namespace

Command add_report_merge_command(CLI::App& parent) {
  auto opt = std::make_shared<Options>();
  auto* cmd = parent.add_subcommand(
      "merge",
      "Merge the report directories of the shards of one run (run --shard K/N) into the reports "
      "of the whole run; exit 1 if the run failed, 2 if the directories are not its shards");
  cmd->add_option("dirs", opt->dirs, "Report directories, one per shard, in any order")->required();
  cmd->add_option("--out", opt->out, "Directory for the merged reports")->required();
  return {cmd, [opt] { return merge(*opt); }};
}

}  // namespace sdpa::cli
