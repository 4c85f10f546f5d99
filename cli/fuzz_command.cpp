// `sdpa-cts fuzz --backend B [--plugin P] [--engine E] [--seconds N] [--jobs N] [--seed S]
// [--corpus DIR] [--max-findings N] [--device D] [--simd T] [--threads N] [--timeout S]`: a
// user fuzzes *their* kernel from the command line, with one of two engines:
// - search: batches of cases from the problem sampler (small sizes, every feature family,
//   adversarial data) run in isolated workers;
// - libfuzzer (a Clang build with the `fuzz` preset): coverage-guided, the bytes decode into
//   cases and the backend runs in this process (cli/libfuzzer_engine.hpp).
// Every FAIL, CRASH or TIMEOUT is shrunk (in isolated workers) to the smallest case ID that
// fails the same way and printed as a repro command and a tier line (docs/FUZZING.md).
//
// --corpus DIR: the case IDs in DIR's files (one per line) run first, and each finding's
// smallest ID is written there (finding-<status>-<n>.txt), so a corpus grows into a tier;
// libFuzzer keeps its own corpus and crash inputs in DIR/libfuzzer/.
// Exit codes: 0 no finding, 1 findings, 2 bad input.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>

#include "cli/commands.hpp"
#include "cli/engine_options.hpp"
#include "cli/libfuzzer_engine.hpp"
#include "cli/number_checks.hpp"
#include "conformance/engine/case_sampler.hpp"
#include "core/case_id.hpp"
#include "core/verdict.hpp"

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
  std::string engine;  // "search", "libfuzzer", or "" (libfuzzer where linked, else search)
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

// The findings of one fuzz run: each failing case is shrunk (in isolated workers), printed
// once per distinct smallest ID, and written to the corpus.
class Findings {
 public:
  Findings(const SearchTarget& target, const Options& o) : target_(target), o_(o) {}

  // Returns true when the run should end (--max-findings reached).
  bool record(Status status, const std::string& id, const std::string& message) {
    ++failures_;
    if (tty_) std::cerr << "\r\033[K";
    std::cerr << conformance::status_name(status) << " " << id << ": " << message
              << "\n  shrinking...\n";
    const conformance::ShrinkResult s = target_.shrink(id, status);
    if (!distinct_.insert(s.case_id).second) {
      std::cerr << "  the same smallest case as an earlier finding: " << s.case_id << "\n";
      return false;
    }
    std::cout << "FINDING " << conformance::status_name(status) << " " << target_.backend() << " "
              << s.case_id << "\n  found as: " << id << "\n  repro: " << target_.repro(s.case_id)
              << "\n  tier line: " << s.case_id << "\n"
              << std::flush;
    if (!o_.corpus.empty()) {
      std::ofstream(fs::path(o_.corpus) /
                    ("finding-" + std::string(conformance::status_name(status)) + "-" +
                     std::to_string(distinct_.size()) + ".txt"))
          << s.case_id << "\n";
    }
    return static_cast<int>(distinct_.size()) >= o_.max_findings;
  }
  bool done() const { return static_cast<int>(distinct_.size()) >= o_.max_findings; }
  std::size_t count() const { return distinct_.size(); }

  // The summary line; returns the exit code.
  int finish(const std::string& engine, std::size_t ran, double seconds) const {
    if (tty_) std::cerr << "\r\033[K";
    std::cout << "fuzz " << target_.backend() << " (" << engine << "): " << ran << " cases in "
              << static_cast<int>(seconds) << " s ("
              << static_cast<int>(ran / std::max(seconds, 1e-9)) << " cases/s, seed " << o_.seed
              << "), " << failures_ << " failing, " << distinct_.size()
              << " distinct findings after shrinking\n";
    return distinct_.empty() ? 0 : 1;
  }

 private:
  const SearchTarget& target_;
  const Options& o_;
  const bool tty_ = isatty(STDERR_FILENO);
  std::size_t failures_ = 0;
  std::set<std::string> distinct_;
};

int run(const Options& o) {
  try {
    const SearchTarget target(o.search);
    std::string engine = o.engine;
    if (engine.empty()) engine = libfuzzer_linked() ? "libfuzzer" : "search";
    if (engine == "libfuzzer" && !libfuzzer_linked()) {
      run_libfuzzer(target, {}, {}, {});  // throws: this build has none
    }
    if (!o.corpus.empty()) fs::create_directories(o.corpus);
    const bool tty = isatty(STDERR_FILENO);
    const auto t0 = std::chrono::steady_clock::now();
    auto elapsed = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    Findings findings(target, o);
    std::size_t ran = 0;
    // The corpus's case IDs run first, with either engine.
    std::vector<std::string> pending = corpus_ids(o.corpus);
    const conformance::SamplerOptions sampler = conformance::search_sampler_options();
    std::uint64_t next = 0;
    const std::size_t batch = static_cast<std::size_t>(std::max(1, o.search.jobs)) * 8;
    while (!findings.done() &&
           ((engine == "search" && elapsed() < o.seconds) || !pending.empty())) {
      std::vector<std::string> ids;
      while (!pending.empty() && ids.size() < batch) {
        ids.push_back(pending.back());
        pending.pop_back();
      }
      while (engine == "search" && ids.size() < batch) {
        ids.push_back(format_case_id(
            conformance::sample_case(conformance::sample_seed(o.seed, next++), sampler)));
      }
      const auto records = target.run(ids);
      ran += records.size();
      for (const auto& r : records) {
        if (conformance::is_failure(r.status) && findings.record(r.status, r.case_id, r.message)) {
          break;
        }
      }
      if (tty) {
        std::cerr << "\r\033[K[" << static_cast<int>(elapsed()) << " s] " << ran << " cases, "
                  << findings.count() << " findings" << std::flush;
      }
    }
    if (engine == "libfuzzer" && !findings.done()) {
      LibFuzzerOptions lf;
      lf.seconds = std::max(1.0, o.seconds - elapsed());
      lf.seed = o.seed;
      lf.timeout = o.search.timeout;
      lf.work_dir = o.corpus.empty() ? fs::temp_directory_path().string() + "/sdpa-cts-fuzz-" +
                                           std::to_string(getpid())
                                     : o.corpus + "/libfuzzer";
      fs::create_directories(fs::path(lf.work_dir) / "corpus");
      std::cerr << "libFuzzer: corpus and crash inputs in " << lf.work_dir << "\n";
      run_libfuzzer(
          target, lf,
          [&](Status status, const std::string& id, const std::string& why) {
            return findings.record(status, id, why);
          },
          [&, ran](std::size_t executions) {
            return findings.finish(engine, ran + executions, elapsed());
          });
    }
    return findings.finish(engine, ran, elapsed());
  } catch (const std::invalid_argument& e) {
    std::cerr << "sdpa-cts: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace

Command add_fuzz_command(CLI::App& parent) {
  auto opt = std::make_shared<Options>();
  auto* cmd = parent.add_subcommand(
      "fuzz", "Search for failing cases of a backend, shrink each, print repro lines");
  add_search_options(cmd, &opt->search);
  cmd->add_option("--seconds", opt->seconds, "How long to search")
      ->check(cli::greater_than_zero())
      ->capture_default_str();
  cmd->add_option("--seed", opt->seed, "Seed of the sampled cases")->capture_default_str();
  cmd->add_option("--corpus", opt->corpus,
                  "Folder of case IDs to run first; findings are written there");
  cmd->add_option("--engine", opt->engine,
                  "search (sampled cases in isolated workers) or libfuzzer (coverage-guided, "
                  "in-process; Clang builds with the fuzz preset). Default: libfuzzer where "
                  "linked, else search")
      ->check(CLI::IsMember({"search", "libfuzzer"}));
  cmd->add_option("--max-findings", opt->max_findings, "Stop after this many distinct findings")
      ->check(cli::at_least(1))
      ->capture_default_str();
  return {cmd, [opt] { return run(*opt); }};
}

}  // namespace sdpa::cli
