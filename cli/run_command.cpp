// `sdpa-cts run`: the main job. Runs a tier (or given cases) on every eligible backend,
// judges each against the reference, prints one greppable summary line and a repro
// command per failure, writes the reports, and exits non-zero on any FAIL, CRASH or
// TIMEOUT.
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <iostream>
#include <map>
#include <regex>
#include <set>

#include "cli/commands.hpp"
#include "cli/case_selection.hpp"
#include "cli/plugin_options.hpp"
#include "conformance/case_sampler.hpp"
#include "conformance/runner.hpp"
#include "conformance/tier.hpp"
#include "conformance/tolerance.hpp"
#include "core/case_id.hpp"
#include "golden/golden_file.hpp"
#include "kernels/registry.hpp"
#include "reports/reports.hpp"

namespace sdpa::cli {

using namespace sdpa::conformance;
using namespace sdpa::reports;
namespace {

struct Options {
  std::vector<std::string> backends;
  std::string device = "cpu";
  CaseSelection selection;  // --tier, --case, --golden, --filter, --seed, --sample, --max-work
  int jobs = 1;
  int threads = 0;
  std::string simd;
  std::string report_dir = "sdpa-cts-report";
  bool no_report = false;
  double timeout = 300;
  bool no_isolate = false;
  std::vector<std::string> plugins;
  bool plugin_backends = false;  // judge only the plugins' backends
};

std::string now_iso8601() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}


int run(const Options& opt) {
  const Device device = runnable_device(parse_device_or_throw(opt.device));
  // Plugins: probed here in a child process each; their code runs only in the workers,
  // which load them before their first job (docs/PLUGINS.md).
  const std::vector<plugins::ProbedPlugin> probed = probe_plugins(opt.plugins);
  std::map<std::string, std::string> plugin_of;  // backend name -> plugin file
  for (const auto& p : probed)
    for (const auto& b : p.backends) plugin_of[b.name] = p.path;
  // Backends: the named ones, or every backend (built in or from a plugin) that runs on
  // this kind of device.
  std::vector<std::string> backends = opt.backends;
  if (opt.plugin_backends && (!opt.backends.empty() || probed.empty())) {
    throw std::invalid_argument(
        "--plugin-backends needs a --plugin (or SDPA_CTS_PLUGINS) and no --backend");
  }
  if (backends.empty()) {
    for (const Backend* b : opt.plugin_backends ? std::vector<const Backend*>{} : builtin_backends()) {
      if (b->capabilities().device == device.kind) backends.emplace_back(b->name());
    }
    for (const auto& p : probed)
      for (const auto& b : p.backends)
        if (b.device == device.kind) backends.push_back(b.name);
  }
  for (const auto& b : backends) {
    if (plugin_of.count(b)) continue;
    if (!find_backend(b)) {
      std::string known = backend_registry().names();
      for (const auto& [name, path] : plugin_of) known += ", " + name;
      throw std::invalid_argument("unknown backend '" + b + "' (known: " + known + ")");
    }
  }
  // Devices per backend: the device as given (its best ISA target, or the one it names),
  // a target chosen by --simd, or with --simd all one device per target it has (only for
  // backends with per-target code paths; the others run once).
  std::vector<Device> all_targets;
  if (opt.simd == "all") {
    if (device.kind != DeviceKind::cpu) throw std::invalid_argument("--simd all needs a CPU device");
    for (IsaTarget t : available_isa_targets(device.cpu))
      all_targets.push_back(with_isa_target(device, isa_target_name(t)));
  }
  Device chosen = device;
  try {
    if (opt.simd != "all") chosen = with_isa_target(device, opt.simd);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--simd: ") + e.what());
  }
  auto devices_for = [&](const std::string& backend) {
    const Backend* builtin = find_backend(backend);  // plugin backends have one code path
    if (!all_targets.empty() && builtin && builtin->capabilities().traits.isa_targets) {
      return all_targets;
    }
    return std::vector<Device>{chosen};
  };
  // Cases: given IDs (generated or from --golden files), a tier, or sampled ones.
  std::string tier_name;
  const std::vector<SelectedCase> cases = select_cases(opt.selection, &tier_name);
  std::vector<Job> jobs;
  for (const auto& [id, file] : cases)
    for (const auto& b : backends)
      for (const Device& d : devices_for(b)) {
        jobs.push_back(make_job(id, file, b, d, opt.threads));
        if (auto it = plugin_of.find(b); it != plugin_of.end()) jobs.back().plugin = it->second;
      }
  if (jobs.empty())
    throw std::invalid_argument("no case selected (check --tier, --case and --filter)");

  const bool tty = isatty(STDERR_FILENO);
  RunnerOptions ro;
  ro.jobs = opt.jobs;
  ro.timeout_seconds = opt.timeout;
  ro.isolate = !opt.no_isolate;
  ro.worker_init = [&probed] {
    for (const auto& p : probed) plugins::load_plugin(p.path);
  };
  StatusCounts live;
  ro.progress = [&](std::size_t done, std::size_t total, const CaseRecord& r) {
    live.add(r.status);
    if (is_failure(r.status)) {
      std::cerr << (tty ? "\r\033[K" : "") << status_name(r.status) << " " << r.backend << " "
                << r.case_id << ": " << r.message << "\n  repro: " << r.repro << "\n";
    }
    if (tty) {
      std::cerr << "\r\033[K[" << done << "/" << total << "] pass " << live[Status::pass]
                << " fail " << live[Status::fail] << " not supported "
                << live[Status::not_supported] << "  " << r.backend
                << " " << r.case_id.substr(0, 60) << std::flush;
    }
  };
  RunSummary summary;
  summary.tool_version = SDPA_CTS_VERSION;
  summary.tolerance_version = ToleranceTable{}.version;
  summary.tier = tier_name;
  summary.device = device.name;
  summary.seed = opt.selection.seed;
  summary.started_at = now_iso8601();
  const auto t0 = std::chrono::steady_clock::now();
  summary.records = run_jobs(jobs, ro);
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (tty) std::cerr << "\r\033[K";

  const StatusCounts counts = count_statuses(summary);
  std::cout << summary_line(counts) << " (" << summary.records.size() << " results, " << cases.size() << " cases, "
            << backends.size() << " backends, " << summary.seconds << " s, "
            << (summary.seconds > 0 ? double(summary.records.size()) / summary.seconds : 0.0)
            << " results/s)\n";
  if (!opt.no_report) {
    reports::write_reports(summary, opt.report_dir);
    std::cout << "report: " << opt.report_dir << "/report.html\n";
  }
  return counts.failures() > 0 ? 1 : 0;
}

}  // namespace

std::function<int()> add_run_command(CLI::App& app) {
  auto opt = std::make_shared<Options>();
  auto* cmd =
      app.add_subcommand("run", "Run conformance cases on backends, judge them, write reports");
  add_case_selection_options(cmd, &opt->selection);
  cmd->add_option("--backend", opt->backends,
                  "Backend to test (repeatable); default: all for the device");
  cmd->add_option("--device", opt->device,
                  "cpu (detected), or a simulated CPU this one can run (cpu-scalar, cpu-avx2, "
                  "...), with :key=value overrides (cores=N, isa=TARGET)")
      ->capture_default_str();
  cmd->add_option("--jobs", opt->jobs, "Worker processes at once")->check(CLI::PositiveNumber);
  cmd->add_option("--threads", opt->threads, "OpenMP threads per backend run (0 = default)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--simd", opt->simd, "SIMD target: scalar, avx2, avx512, avx512bf16, or all");
  cmd->add_option("--report", opt->report_dir, "Directory for the reports")->capture_default_str();
  cmd->add_flag("--no-report", opt->no_report, "Do not write reports");
  cmd->add_option("--timeout", opt->timeout, "Per-case timeout in seconds")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--no-isolate", opt->no_isolate, "Run cases in this process (for a debugger)");
  add_plugin_option(cmd, &opt->plugins);
  cmd->add_flag("--plugin-backends", opt->plugin_backends,
                "Judge only the backends of the --plugin files (of the device's kind)");
  return [opt] { return run(*opt); };
}

}  // namespace sdpa::cli
