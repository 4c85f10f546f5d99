// `sdpa-cts golden verify FILE...`: runs the reference on the inputs of every case of golden
// files (golden/SCHEMA.md) and compares with the expected values: the oracle judged against
// data computed independently of it. Backends are judged on golden files by
// `sdpa-cts run --golden FILE`, with the one judge and its reports.
// One verdict line per case, one summary line; exit 0 when every case passed, 1 when a case
// failed, 2 when a file or case could not be read or the usage is wrong.
#include <cmath>
#include <functional>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/number_checks.hpp"
#include "conformance/engine/golden_verify.hpp"
#include "golden/golden_file.hpp"

namespace sdpa::cli {

namespace {

struct Options {
  std::vector<std::string> files;
  std::string precision = "f64";  // of the reference
  double max_ulps = 16;           // reference agreement limit (c)
  std::string filter;             // only case IDs containing this
  bool quiet = false;             // print failures and the summary only
  int threads = 0;
};

struct Tally {
  int passed = 0, failed = 0, errors = 0;
  double worst = 0;
  std::string worst_case;
};

std::string fixed(double x) {
  std::ostringstream s;
  s << std::setprecision(3) << x;
  return s.str();
}

// One case: the reference's agreement with the file (`compare`), its verdict line, the tally.
void verify_one(const Options& opt, const std::string& name, Tally& t,
                const std::function<conformance::Agreement()>& compare) {
  std::string verdict, detail;
  double score = 0;
  try {
    const conformance::Agreement a = compare();
    score = a.worst();
    const bool ok = a.mismatch.empty() && score <= opt.max_ulps;
    verdict = ok ? "PASS" : "FAIL";
    if (!a.mismatch.empty()) {
      detail = a.mismatch;
    } else if (!ok) {
      detail = "c = " + fixed(score) + " > " + fixed(opt.max_ulps) + " at " + a.worst_where();
    }
    ++(ok ? t.passed : t.failed);
  } catch (const std::exception& e) {
    verdict = "ERROR";
    detail = e.what();
    ++t.errors;
  }
  if (score > t.worst || (std::isinf(score) && !std::isinf(t.worst))) {
    t.worst = score;
    t.worst_case = name;
  }
  if (!opt.quiet || verdict != "PASS") {
    std::cout << std::left << std::setw(6) << verdict << " " << std::setw(9)
              << (verdict == "ERROR" ? "-" : fixed(score)) << " " << name;
    if (!detail.empty()) std::cout << ": " << detail;
    std::cout << "\n";
  }
}

int run(const Options& opt) {
  reference::Precision precision;
  if (opt.precision == "f64") {
    precision = reference::Precision::f64;
  } else if (opt.precision == "binary128") {
    precision = reference::Precision::binary128;
  } else {
    std::cerr << "sdpa-cts: --precision must be f64 or binary128, got '" << opt.precision << "'\n";
    return 2;
  }
  Tally t;
  int files_read = 0;
  for (const std::string& path : opt.files) {
    std::unique_ptr<golden::GoldenFile> file;
    try {
      file = std::make_unique<golden::GoldenFile>(path);
    } catch (const std::exception& e) {
      std::cout << "ERROR  " << e.what() << "\n";
      ++t.errors;
      continue;
    }
    ++files_read;
    for (const std::string& id : file->case_ids()) {
      if (!opt.filter.empty() && id.find(opt.filter) == std::string::npos) continue;
      verify_one(opt, id, t, [&] {
        return conformance::compare_with_reference(file->load(id), precision, opt.threads);
      });
    }
    for (const std::string& name : file->mha_case_names()) {
      if (!opt.filter.empty() && name.find(opt.filter) == std::string::npos) continue;
      verify_one(opt, name, t, [&] {
        return conformance::compare_mha_with_reference(file->load_mha(name), opt.threads);
      });
    }
  }
  const int total = t.passed + t.failed;
  std::cout << "golden verify (reference " << opt.precision << "): " << total << " cases in "
            << files_read << " file(s): " << t.passed << " passed, " << t.failed << " failed, "
            << t.errors << " errors; worst " << fixed(t.worst) << " ulps"
            << (t.worst_case.empty() ? "" : " at " + t.worst_case) << "\n";
  if (t.errors) return 2;
  return t.failed ? 1 : 0;
}

}  // namespace

Command add_golden_verify_command(CLI::App& parent) {
  auto opt = std::make_shared<Options>();
  auto* cmd = parent.add_subcommand(
      "verify",
      "Run the reference on every case of golden files and compare with the expected values "
      "(backends: `sdpa-cts run --golden FILE`); exit 1 if a case fails, 2 if a file cannot be "
      "read");
  cmd->add_option("files", opt->files, "Golden HDF5 files")->required();
  cmd->add_option("--precision", opt->precision, "Reference precision: f64 or binary128")
      ->capture_default_str();
  cmd->add_option("--max-ulps", opt->max_ulps,
                  "Reference agreement limit c, in f64 ulps of the error magnitude")
      ->capture_default_str()
      ->check(cli::at_least(0));
  cmd->add_option("--filter", opt->filter, "Only cases whose ID contains this text");
  cmd->add_flag("--quiet", opt->quiet, "Print only failures and the summary");
  cmd->add_option("--threads", opt->threads, "OpenMP threads (0 = default)")
      ->check(cli::at_least(0));
  return {cmd, [opt] { return run(*opt); }};
}

}  // namespace sdpa::cli
