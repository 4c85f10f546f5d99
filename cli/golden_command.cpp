// `sdpa-cts golden verify [--backend B] FILE...`: runs the reference (or a backend) on the
// inputs of every case of golden files (golden/SCHEMA.md) and compares with the expected
// values. One verdict line per case, one summary line; exit 0 when every case passed (or
// was declined by the backend), 1 when a case failed, 2 when a file or case could not be
// read or the usage is wrong.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/plugin_options.hpp"
#include "core/device.hpp"
#include "golden/golden_file.hpp"
#include "golden/verify.hpp"
#include "kernels/registry.hpp"

namespace sdpa::cli {

using namespace sdpa::conformance;
namespace {

struct Options {
  std::vector<std::string> files;
  std::string backend;            // "" = the reference
  std::string precision = "f64";  // of the reference
  double max_ulps = 16;           // reference agreement limit (c)
  std::string filter;             // only case IDs containing this
  bool quiet = false;             // print failures and the summary only
  int threads = 0;
  std::string device = "cpu";        // for --backend
  std::vector<std::string> plugins;  // --plugin files
};

struct Tally {
  int passed = 0, failed = 0, declined = 0, errors = 0;
  double worst = 0;
  std::string worst_case;
};

std::string fixed(double x) {
  std::ostringstream s;
  s << std::setprecision(3) << x;
  return s.str();
}

int run(const Options& opt) {
  load_plugins_here(opt.plugins);  // after a probe in a child process each
  reference::Precision precision;
  if (opt.precision == "f64") {
    precision = reference::Precision::f64;
  } else if (opt.precision == "binary128") {
    precision = reference::Precision::binary128;
  } else {
    std::cerr << "sdpa-cts: --precision must be f64 or binary128, got '" << opt.precision << "'\n";
    return 2;
  }
  const Backend* backend = nullptr;
  if (!opt.backend.empty()) {
    backend = find_backend(opt.backend);
    if (!backend) {
      const std::string known = backend_registry().names();
      std::cerr << "sdpa-cts: unknown backend '" << opt.backend
                << "' (known: " << (known.empty() ? "none in this build" : known) << ")\n";
      return 2;
    }
  }
  Device device;
  try {
    device = runnable_device(parse_device_or_throw(opt.device));
  } catch (const std::invalid_argument& e) {
    std::cerr << "sdpa-cts: --device: " << e.what() << "\n";
    return 2;
  }
  RunOptions run_options;
  run_options.threads = opt.threads;
  const std::string judge =
      backend ? "backend " + std::string(backend->name()) : "reference " + opt.precision;
  const char* unit = backend ? "err/tol" : "ulps";
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
      std::string verdict, detail;
      double score = 0;
      try {
        golden::GoldenCase g = file->load(id);
        if (backend) {
          const CaseOutcome o = golden::judge_backend(*backend, g, device, run_options);
          score = o.worst_ratio;
          verdict = status_name(o.status);
          detail = o.status == Status::pass ? "" : o.message;
          if (is_pass(o.status)) {
            ++t.passed;
          } else if (is_failure(o.status)) {
            ++t.failed;
          } else {
            ++t.declined;  // NOT_SUPPORTED, INVALID, MISTRUSTED: no verdict on the backend
          }
        } else {
          const golden::Agreement a = golden::compare_with_reference(g, precision, opt.threads);
          score = a.worst();
          const bool ok = a.mismatch.empty() && score <= opt.max_ulps;
          verdict = ok ? "PASS" : "FAIL";
          if (!a.mismatch.empty()) {
            detail = a.mismatch;
          } else if (!ok) {
            detail = "c = " + fixed(score) + " > " + fixed(opt.max_ulps) + " at " + a.worst_where();
          }
          ++(ok ? t.passed : t.failed);
        }
      } catch (const std::exception& e) {
        verdict = "ERROR";
        detail = e.what();
        ++t.errors;
      }
      if (score > t.worst || (std::isinf(score) && !std::isinf(t.worst))) {
        t.worst = score;
        t.worst_case = id;
      }
      const bool show = !opt.quiet || (verdict != "PASS" && verdict != "NOT_SUPPORTED");
      if (show) {
        std::cout << std::left << std::setw(6) << verdict << " " << std::setw(9)
                  << (verdict == "ERROR" ? "-" : fixed(score)) << " " << id;
        if (!detail.empty()) std::cout << ": " << detail;
        std::cout << "\n";
      }
    }
    // MHA cases: the reference only (backends are judged on SDPA cases).
    for (const std::string& name : backend ? std::vector<std::string>{} : file->mha_case_names()) {
      if (!opt.filter.empty() && name.find(opt.filter) == std::string::npos) continue;
      std::string verdict, detail;
      double score = 0;
      try {
        const golden::Agreement a =
            golden::compare_mha_with_reference(file->load_mha(name), opt.threads);
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
  }
  const int total = t.passed + t.failed + t.declined;
  std::cout << "golden verify (" << judge << "): " << total << " cases in " << files_read
            << " file(s): " << t.passed << " passed, " << t.failed << " failed, " << t.declined
            << " not supported, " << t.errors << " errors; worst " << fixed(t.worst) << " " << unit
            << (t.worst_case.empty() ? "" : " at " + t.worst_case) << "\n";
  if (t.errors) return 2;
  return t.failed ? 1 : 0;
}

}  // namespace

std::function<int()> add_golden_command(CLI::App& app) {
  auto opt = std::make_shared<Options>();
  auto* golden = app.add_subcommand("golden", "Golden files (golden/SCHEMA.md)");
  golden->require_subcommand(1);
  auto* verify = golden->add_subcommand(
      "verify",
      "Run the reference (or --backend) on every case of golden files and compare with the "
      "expected values; exit 1 if a case fails, 2 if a file cannot be read");
  verify->add_option("files", opt->files, "Golden HDF5 files")->required();
  verify->add_option("--backend", opt->backend, "Judge this backend instead of the reference");
  verify->add_option("--precision", opt->precision, "Reference precision: f64 or binary128")
      ->capture_default_str();
  verify
      ->add_option("--max-ulps", opt->max_ulps,
                   "Reference agreement limit c, in f64 ulps of the error magnitude")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  verify
      ->add_option("--device", opt->device,
                   "Device a --backend runs on: cpu (detected), cuda (the GPU, in a build with "
                   "CUDA), auto, or a simulated CPU this one can run, or smNN:emulate=1 (the fused "
                   "CUDA kernels on the host emulator), with :key=value overrides")
      ->capture_default_str();
  verify->add_option("--filter", opt->filter, "Only cases whose ID contains this text");
  verify->add_flag("--quiet", opt->quiet, "Print only failures and the summary");
  verify->add_option("--threads", opt->threads, "OpenMP threads (0 = default)")
      ->check(CLI::NonNegativeNumber);
  add_plugin_option(verify, &opt->plugins);
  return [opt] { return run(*opt); };
}

}  // namespace sdpa::cli
