// Certification bundles (conformance/certification/bundle.hpp, docs/CERTIFICATION.md), beside
// `certify`:
// - `sdpa-cts bundle verify DIR [--rerun N] [--plugin P]` checks a bundle's digests and internal
//   consistency, says which versions differ from this build, and re-runs N of its cases on the
//   backend to confirm the recorded verdicts. Exit 0: intact (and the re-runs agree); 1: a
//   problem, each named; 2: bad usage.
// - `sdpa-cts bundle merge DIR... --out DIR` puts the bundles of a sharded certification
//   (`certify --shard K/N`) into one bundle with the profile's verdict. Exit 0: the profile is
//   met; 1: not met; 2: the directories are not the shards of one certification.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "cli/bundle_verify_hint.hpp"
#include "cli/commands.hpp"
#include "cli/distinct_dirs.hpp"
#include "cli/engine_options.hpp"
#include "cli/number_checks.hpp"
#include "conformance/certification/bundle.hpp"
#include "conformance/certification/sha256.hpp"
#include "conformance/engine/case_sampler.hpp"
#include "conformance/engine/tier.hpp"

namespace sdpa::cli {

using namespace sdpa::conformance;

namespace {

struct Options {
  std::string dir;                   // the bundle
  int rerun = 0;                     // cases to re-run
  std::uint64_t rerun_seed = 1;      // which ones
  std::vector<std::string> plugins;  // the plugin of a plugin backend
  int jobs = 1;                      // worker processes for the re-runs
};

// The indices of `n` of `total` records, distinct, drawn from `seed` (deterministic).
std::vector<std::size_t> draw(std::size_t total, int n, std::uint64_t seed) {
  std::vector<std::size_t> out;
  std::set<std::size_t> seen;
  for (std::uint64_t i = 0; out.size() < std::min<std::size_t>(total, static_cast<std::size_t>(n));
       ++i) {
    const std::size_t k = sample_seed(seed, i) % total;
    if (seen.insert(k).second) out.push_back(k);
  }
  std::sort(out.begin(), out.end());
  return out;
}

int verify(const Options& opt) {
  BundleCheck check = check_bundle(opt.dir);
  const auto& m = check.manifest;
  const bool readable = m.is_object() && m.contains("backend");
  const std::string backend = readable ? m.at("backend").value("name", "") : "";
  const bool is_plugin =
      readable && m.at("backend").contains("plugin") && !m.at("backend").at("plugin").is_null();
  // The plugin binary: the one the bundle names, by digest.
  std::vector<std::string> plugins = plugins::plugin_paths(opt.plugins);
  if (is_plugin && !plugins.empty()) {
    const std::string want = m.at("backend").at("plugin").value("sha256", "");
    bool found = false;
    for (const auto& p : plugins) found = found || sha256_file(p) == want;
    if (!found) {
      check.problems.push_back(
          "a different plugin binary: no --plugin file has the bundle's SHA-256 " + want + " (" +
          m.at("backend").at("plugin").value("file", "") + ")");
    }
  }
  if (opt.rerun > 0 && is_plugin && plugins.empty()) {
    throw std::invalid_argument("--rerun of plugin backend '" + backend +
                                "' needs its --plugin file");
  }
  // Re-runs: N recorded cases, judged again here, must get the recorded status.
  std::size_t rerun_agree = 0, rerun_total = 0;
  if (opt.rerun > 0 && check.problems.empty() && !check.records.empty()) {
    RunRequest request;
    request.backends = {backend};
    request.device = m.at("run").value("device", "cpu");
    request.simd = m.at("run").value("simd", "");
    request.threads = m.at("run").value("threads", 0);
    request.timeout = m.at("run").value("timeout_seconds", 300.0);
    request.jobs = opt.jobs;
    request.plugins = plugins;
    if (check.expectations)
      // Every entry applies: the host (and the --expect-fact versions) the bundle was made
      // with are not in the bundle, and its records were judged where their entries held.
      request.expected =
          parse_expectations(*check.expectations, kExpectationsCopyFile, every_host_facts());
    // Map a record back to its case list entry for the golden file.
    std::map<std::string, std::string> golden_of;
    for (std::size_t i = 0; i < check.case_ids.size(); ++i) {
      if (!check.golden_files[i].empty())
        golden_of[check.case_ids[i]] = default_source_dir() + "/" + check.golden_files[i];
    }
    std::vector<SelectedCase> cases;
    std::vector<const CaseRecord*> recorded;
    for (std::size_t k : draw(check.records.size(), opt.rerun, opt.rerun_seed)) {
      const CaseRecord& r = check.records[k];
      cases.emplace_back(r.case_id, golden_of.count(r.case_id) ? golden_of[r.case_id] : "");
      recorded.push_back(&r);
    }
    const RunResult again = execute_run(request, cases, "rerun");
    rerun_total = again.summary.records.size();
    for (std::size_t i = 0; i < again.summary.records.size() && i < recorded.size(); ++i) {
      const CaseRecord& now = again.summary.records[i];
      if (now.status == recorded[i]->status) {
        ++rerun_agree;
      } else {
        check.problems.push_back("re-run of " + now.case_id + " gives " + status_name(now.status) +
                                 ", the bundle records " + status_name(recorded[i]->status) + ": " +
                                 now.message + "\n    repro: " + now.repro);
      }
    }
  }
  for (const auto& n : check.notes) std::cout << "note: " << n << "\n";
  for (const auto& p : check.problems) std::cout << "PROBLEM: " << p << "\n";
  if (readable) {
    const auto& v = m.value("verdict", nlohmann::json::object());
    std::cout << "bundle " << opt.dir << ": " << backend << ", profile "
              << m.at("profile").value("name", "?") << ", verdict "
              << (!v.value("complete", false) ? "partial (a shard)"
                  : v.value("met", false)     ? "MET"
                                              : "NOT MET")
              << ", " << check.records.size() << " records";
    if (rerun_total)
      std::cout << ", " << rerun_agree << "/" << rerun_total << " re-run verdicts agree";
    std::cout << "\n";
  }
  std::cout << (check.problems.empty()
                    ? "bundle verify: intact\n"
                    : "bundle verify: " + std::to_string(check.problems.size()) + " problem(s)\n");
  return check.problems.empty() ? 0 : 1;
}

struct MergeOptions {
  std::vector<std::string> dirs;  // the shards' bundles
  std::string out;                // where the whole certification's bundle goes
};

int merge(const MergeOptions& opt) {
  check_distinct_dirs("bundle merge", opt.dirs, opt.out);
  for (const auto& d : opt.dirs) {
    if (!std::filesystem::exists(std::filesystem::path(d) / kManifestFile)) {
      throw std::invalid_argument("bundle merge: '" + d + "' is not a certification bundle (no " +
                                  kManifestFile +
                                  "); merge the reports of a sharded run with `sdpa-cts report "
                                  "merge`");
    }
  }
  const BundleContents merged = merge_bundles(opt.dirs);
  write_bundle(opt.out, merged);
  const auto& v = merged.manifest.at("verdict");
  std::cout << summary_line(count_statuses(merged.run)) << " (" << merged.run.records.size()
            << " results from " << opt.dirs.size() << " shards)\n"
            << "profile " << merged.manifest.at("profile").value("name", "?") << ": "
            << merged.manifest.at("backend").value("name", "?") << ": "
            << (v.value("met", false) ? "MET" : "NOT MET") << " (" << v.value("required_passed", 0)
            << "/" << v.value("required", 0) << " required cases pass)\n";
  for (const auto& r : v.at("reasons")) std::cout << "  " << r.get<std::string>() << "\n";
  // The manifest names a plugin by its file name; the hint names that file.
  const auto& backend = merged.manifest.at("backend");
  const bool is_plugin = backend.contains("plugin") && !backend.at("plugin").is_null();
  std::cout << "bundle: " << opt.out << " (check it with: "
            << bundle_verify_command(opt.out,
                                     is_plugin ? backend.at("plugin").value("file", "") : "")
            << ")\n";
  return v.value("met", false) ? 0 : 1;
}

}  // namespace

Command add_bundle_verify_command(CLI::App& parent) {
  auto opt = std::make_shared<Options>();
  auto* cmd = parent.add_subcommand(
      "verify",
      "Check a certification bundle's digests and consistency, and re-run some of its cases");
  cmd->add_option("dir", opt->dir, "The bundle directory (sdpa-cts certify --out)")->required();
  cmd->add_option("--rerun", opt->rerun,
                  "Re-run N cases drawn from the bundle and compare their statuses")
      ->check(cli::at_least(0));
  cmd->add_option("--rerun-seed", opt->rerun_seed, "Which cases --rerun draws")
      ->capture_default_str();
  cmd->add_option("--jobs", opt->jobs, "Worker processes for the re-runs")->check(cli::at_least(1));
  cmd->add_option("--plugin", opt->plugins,
                  "The plugin file of a plugin backend (its SHA-256 must be the bundle's)");
  return {cmd, [opt] { return verify(*opt); }};
}

Command add_bundle_merge_command(CLI::App& parent) {
  auto opt = std::make_shared<MergeOptions>();
  auto* cmd = parent.add_subcommand(
      "merge",
      "Merge the bundles of a sharded certification (certify --shard K/N) into one bundle with "
      "the profile's verdict; exit 1 if the profile is not met, 2 if they are not its shards");
  cmd->add_option("dirs", opt->dirs, "Bundle directories, one per shard, in any order")->required();
  cmd->add_option("--out", opt->out, "Directory for the merged bundle")->required();
  return {cmd, [opt] { return merge(*opt); }};
}

}  // namespace sdpa::cli
