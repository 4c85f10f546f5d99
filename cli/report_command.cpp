// `sdpa-cts report merge DIR... --out DIR`: the report directories of a sharded run (one per
// shard, from `run --shard K/N`) back into the reports of the whole run (docs/SCALE-OUT.md);
// the bundles of a sharded certification (`certify --shard K/N`) into one bundle with the
// profile's verdict (exit 0 met, 1 not met; docs/CERTIFICATION.md).
// Exits as `run` would have for the whole run: 1 on any FAIL, CRASH or TIMEOUT, else 0; 2
// when a directory cannot be read or the directories are not the shards of one run.
#include <filesystem>
#include <iostream>
#include <map>
#include <stdexcept>

#include "cli/commands.hpp"
#include "conformance/bundle.hpp"
#include "reports/merge.hpp"
#include "reports/reports.hpp"

namespace sdpa::cli {

namespace {

struct Options {
  std::vector<std::string> dirs;  // the shards' report directories
  std::string out;                // where the merged reports go
};

// A path as one spelling: the same directory named twice would count its shard twice.
std::string canonical(const std::string& path) {
  std::error_code ec;
  const auto c = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : c.string();
}

void check_distinct(const std::vector<std::string>& dirs, const std::string& out) {
  std::map<std::string, std::string> seen;  // canonical path -> the name given
  for (const auto& d : dirs) {
    if (canonical(d) == canonical(out)) {
      throw std::invalid_argument("report merge: --out '" + out +
                                  "' is one of the directories to merge ('" + d + "')");
    }
    const auto [it, fresh] = seen.emplace(canonical(d), d);
    if (!fresh) {
      throw std::invalid_argument("report merge: the directory '" + d + "' is given twice" +
                                  (it->second == d ? "" : " (also as '" + it->second + "')"));
    }
  }
}

// Certification bundles (a manifest.json in every directory): the whole certification's
// bundle, with the profile's verdict. Exit 0 met, 1 not met.
int merge_certification(const Options& opt) {
  const conformance::BundleContents merged = conformance::merge_bundles(opt.dirs);
  conformance::write_bundle(opt.out, merged);
  const auto& v = merged.manifest.at("verdict");
  std::cout << conformance::summary_line(conformance::count_statuses(merged.run)) << " ("
            << merged.run.records.size() << " results from " << opt.dirs.size() << " shards)\n"
            << "profile " << merged.manifest.at("profile").value("name", "?") << ": "
            << merged.manifest.at("backend").value("name", "?") << ": "
            << (v.value("met", false) ? "MET" : "NOT MET") << " (" << v.value("required_passed", 0)
            << "/" << v.value("required", 0) << " required cases pass)\n";
  for (const auto& r : v.at("reasons")) std::cout << "  " << r.get<std::string>() << "\n";
  std::cout << "bundle: " << opt.out << " (check it with: sdpa-cts verify-bundle " << opt.out
            << ")\n";
  return v.value("met", false) ? 0 : 1;
}

int merge(const Options& opt) {
  check_distinct(opt.dirs, opt.out);
  std::size_t bundles = 0;
  for (const auto& d : opt.dirs)
    bundles += std::filesystem::exists(std::filesystem::path(d) / conformance::kManifestFile);
  if (bundles == opt.dirs.size()) return merge_certification(opt);
  if (bundles > 0) {
    throw std::invalid_argument("report merge: " + std::to_string(bundles) + " of the " +
                                std::to_string(opt.dirs.size()) +
                                " directories are certification bundles (manifest.json), the "
                                "others are not: merge bundles with bundles");
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

std::function<int()> add_report_command(CLI::App& app) {
  auto opt = std::make_shared<Options>();
  auto* report = app.add_subcommand("report", "Work with report directories (docs/REPORTS.md)");
  report->require_subcommand(1);
  auto* merge_cmd = report->add_subcommand(
      "merge",
      "Merge the report directories of the shards of one run (run --shard K/N) into the reports "
      "of the whole run; exit 1 if the run failed, 2 if the directories are not its shards");
  merge_cmd->add_option("dirs", opt->dirs, "Report directories, one per shard, in any order")
      ->required();
  merge_cmd->add_option("--out", opt->out, "Directory for the merged reports")->required();
  return [opt] { return merge(*opt); };
}

}  // namespace sdpa::cli
