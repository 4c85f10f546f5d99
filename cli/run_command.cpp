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
  std::string tier;
  std::vector<std::string> backends;
  std::string device = "cpu";
  std::vector<std::string> cases;
  std::vector<std::string> golden;
  std::string filter;
  std::uint64_t seed = 0;
  int sample = 0;             // --sample N: N sampled cases instead of a tier
  std::int64_t max_work = 0;  // work budget of a sampled case (0 = the sampler's default)
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

// Re-seeds a generated case for --seed: the data seed becomes a mix of its own and the
// run's, so each run seed gives new data with a new, printable case ID.
std::string reseed(const std::string& id, std::uint64_t run_seed) {
  Case c = parse_case_id_or_throw(id);
  std::uint64_t x = c.data.seed ^ (run_seed * 0x9E3779B97F4A7C15ull);
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  c.data.seed = x % 1000000007ull;
  return format_case_id(c);
}

// The sampler seed of case i of `--sample N --seed S`: a mix of both, so that runs with
// different seeds share no case (splitmix64's finaliser; integer arithmetic only).
std::uint64_t sample_seed(std::uint64_t run_seed, std::uint64_t i) {
  std::uint64_t x = run_seed * 0x9E3779B97F4A7C15ull + i;
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
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
  // Cases: given IDs (generated or from --golden files), else the tier.
  std::vector<std::pair<std::string, std::string>> cases;  // (case ID, golden file or "")
  std::string tier_name = "custom";
  if (!opt.cases.empty() && opt.golden.size() > 1) {
    throw std::invalid_argument("--case with --golden takes one golden file");
  }
  if (opt.max_work != 0 && opt.sample == 0) {
    throw std::invalid_argument("--max-work applies to sampled cases: it needs --sample");
  }
  if (opt.sample > 0) {
    if (!opt.cases.empty() || !opt.golden.empty() || !opt.tier.empty()) {
      throw std::invalid_argument("--sample cannot be combined with --case, --golden or --tier");
    }
    SamplerOptions so;
    if (opt.max_work > 0) so.max_work = opt.max_work;
    tier_name = "sample";
    for (int i = 0; i < opt.sample; ++i) {
      cases.emplace_back(format_case_id(sample_case(sample_seed(opt.seed, i), so)), "");
    }
  } else if (!opt.cases.empty()) {
    for (const auto& id : opt.cases) {
      const std::string canonical = format_case_id(parse_case_id_or_throw(id));
      cases.emplace_back(canonical, opt.golden.empty() ? "" : opt.golden.front());
    }
  } else if (!opt.golden.empty()) {
    for (const auto& f : opt.golden) {
      const golden::GoldenFile file(f);
      for (const auto& id : file.case_ids()) cases.emplace_back(id, f);
    }
  } else {
    tier_name = opt.tier.empty() ? "smoke" : opt.tier;
    const TierEntries t = load_tier(tier_name, default_tiers_dir(), default_source_dir());
    for (const auto& id : t.case_ids) cases.emplace_back(id, "");
    for (const auto& f : t.golden_files) {
      const golden::GoldenFile file(f);
      for (const auto& id : file.case_ids()) cases.emplace_back(id, f);
    }
  }
  if (opt.seed != 0 && opt.sample == 0) {
    for (auto& [id, file] : cases) {
      if (file.empty()) id = reseed(id, opt.seed);
    }
  }
  if (!opt.filter.empty()) {
    std::regex re;
    try {
      re = std::regex(opt.filter);
    } catch (const std::regex_error& e) {
      throw std::invalid_argument("--filter: bad regular expression '" + opt.filter +
                                  "': " + e.what());
    }
    std::erase_if(cases, [&](const auto& c) { return !std::regex_search(c.first, re); });
  }
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
  summary.seed = opt.seed;
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
  cmd->add_option("--tier", opt->tier,
                  "Tier name (smoke, ci, nightly) or tier file; default smoke");
  cmd->add_option("--backend", opt->backends,
                  "Backend to test (repeatable); default: all for the device");
  cmd->add_option("--device", opt->device,
                  "cpu (detected), or a simulated CPU this one can run (cpu-scalar, cpu-avx2, "
                  "...), with :key=value overrides (cores=N, isa=TARGET)")
      ->capture_default_str();
  cmd->add_option("--case", opt->cases, "Case ID to run instead of a tier (repeatable)");
  cmd->add_option("--golden", opt->golden,
                  "Golden HDF5 file: run its cases (with --case: that case)");
  cmd->add_option("--filter", opt->filter, "Keep cases whose ID matches this regular expression");
  cmd->add_option("--seed", opt->seed,
                  "Re-seed the data of generated cases (0 = as written); with --sample, the "
                  "sampler's seed (default 0)");
  cmd->add_option("--sample", opt->sample,
                  "Run N cases drawn by the problem sampler (every family, every generator) "
                  "instead of a tier")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-work", opt->max_work,
                  "Work budget of a sampled case, B*Hq*L*S*max(Dqk,Dv) (default " +
                      std::to_string(SamplerOptions{}.max_work) + ")")
      ->check(CLI::PositiveNumber);
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
