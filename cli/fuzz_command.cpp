// `sdpa-cts fuzz --backend B [--plugin P] [--seconds N] [--jobs N] [--seed S] [--corpus DIR]
// [--max-findings N] [--device D] [--simd T] [--threads N] [--timeout S]`: a user fuzzes
// *their* kernel from the command line. This build searches with the problem sampler (small
// sizes, every feature family, adversarial data): batches of sampled cases run in isolated
// workers, and every FAIL, CRASH or TIMEOUT is shrunk to the smallest case ID that fails the
// same way and printed as a repro command and a tier line (docs/FUZZING.md). The coverage-
// guided fuzzers of the built-in code are fuzz/ (libFuzzer, Clang).
//
// --corpus DIR: the case IDs in DIR's files (one per line) run first, and each finding's
// smallest ID is written there (finding-<status>-<n>.txt), so a corpus grows into a tier.
// Exit codes: 0 no finding, 1 findings, 2 bad input.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>

#include "cli/case_search.hpp"
#include "cli/commands.hpp"
#include "conformance/case_sampler.hpp"
#include "conformance/status.hpp"
#include "core/case_id.hpp"

namespace sdpa::cli {
namespace {

namespace fs = std::filesystem;
using conformance::Status;

struct Options {
  SearchOptions search;
  double seconds = 60;
  std::uint64_t seed = 1;
  std::string corpus;
  int max_findings = 10;
};

std::vector<std::string> corpus_ids(const std::string& dir) {
  std::vector<std::string> ids;
  if (dir.empty() || !fs::is_directory(dir)) return ids;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::ifstream in(f);
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#') continue;
      ids.push_back(format_case_id(parse_case_id_or_throw(line)));
    }
  }
  return ids;
}

int run(const Options& o) {
  try {
    const SearchTarget target(o.search);
    if (!o.corpus.empty()) fs::create_directories(o.corpus);
    const bool tty = isatty(STDERR_FILENO);
    const auto t0 = std::chrono::steady_clock::now();
    auto elapsed = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    std::vector<std::string> pending = corpus_ids(o.corpus);
    const conformance::SamplerOptions sampler = conformance::search_sampler_options();
    std::uint64_t next = 0;
    std::size_t ran = 0, failures = 0;
    std::set<std::string> distinct;
    const std::size_t batch = static_cast<std::size_t>(std::max(1, o.search.jobs)) * 8;
    while (elapsed() < o.seconds && static_cast<int>(distinct.size()) < o.max_findings) {
      std::vector<std::string> ids;
      while (!pending.empty() && ids.size() < batch) {
        ids.push_back(pending.back());
        pending.pop_back();
      }
      while (ids.size() < batch) {
        ids.push_back(format_case_id(
            conformance::sample_case(conformance::sample_seed(o.seed, next++), sampler)));
      }
      const auto records = target.run(ids);
      ran += records.size();
      for (const auto& r : records) {
        if (!conformance::is_failure(r.status)) continue;
        ++failures;
        if (tty) std::cerr << "\r\033[K";
        std::cerr << conformance::status_name(r.status) << " " << r.case_id << ": " << r.message
                  << "\n  shrinking...\n";
        const conformance::ShrinkResult s = target.shrink(r.case_id, r.status);
        if (!distinct.insert(s.case_id).second) {
          std::cerr << "  the same smallest case as an earlier finding: " << s.case_id << "\n";
          continue;
        }
        std::cout << "FINDING " << conformance::status_name(r.status) << " " << target.backend()
                  << " " << s.case_id << "\n  found as: " << r.case_id
                  << "\n  repro: " << target.repro(s.case_id) << "\n  tier line: " << s.case_id
                  << "\n"
                  << std::flush;
        if (!o.corpus.empty()) {
          std::ofstream(fs::path(o.corpus) /
                        ("finding-" + std::string(conformance::status_name(r.status)) + "-" +
                         std::to_string(distinct.size()) + ".txt"))
              << s.case_id << "\n";
        }
        if (static_cast<int>(distinct.size()) >= o.max_findings) break;
      }
      if (tty) {
        std::cerr << "\r\033[K[" << static_cast<int>(elapsed()) << " s] " << ran << " cases, "
                  << distinct.size() << " findings" << std::flush;
      }
    }
    if (tty) std::cerr << "\r\033[K";
    const double secs = elapsed();
    std::cout << "fuzz " << target.backend() << ": " << ran << " cases in "
              << static_cast<int>(secs) << " s (" << static_cast<int>(ran / std::max(secs, 1e-9))
              << " cases/s, seed " << o.seed << "), " << failures << " failing, " << distinct.size()
              << " distinct findings after shrinking\n";
    return distinct.empty() ? 0 : 1;
  } catch (const std::invalid_argument& e) {
    std::cerr << "sdpa-cts: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace

std::function<int()> add_fuzz_command(CLI::App& app) {
  auto opt = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "fuzz", "Search for failing cases of a backend, shrink each, print repro lines");
  add_search_options(cmd, &opt->search);
  cmd->add_option("--seconds", opt->seconds, "How long to search")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--seed", opt->seed, "Seed of the sampled cases")->capture_default_str();
  cmd->add_option("--corpus", opt->corpus,
                  "Folder of case IDs to run first; findings are written there");
  cmd->add_option("--max-findings", opt->max_findings, "Stop after this many distinct findings")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  return [opt] { return run(*opt); };
}

}  // namespace sdpa::cli
