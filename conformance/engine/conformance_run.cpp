#include "conformance/engine/conformance_run.hpp"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <iostream>
#include <map>

#include "conformance/engine/byte_size.hpp"
#include "conformance/engine/case_memory.hpp"
#include "conformance/engine/runner.hpp"
#include "conformance/judge/tolerance.hpp"
#include "kernels/registry.hpp"
#include "plugins/host/plugin_set.hpp"

namespace sdpa::conformance {

namespace {

std::string now_iso8601() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

RunResult execute_run(const RunRequest& opt, const std::vector<SelectedCase>& cases,
                      const std::string& tier) {
  RunResult result;
  const Device device = runnable_device(parse_device_or_throw(opt.device));
  result.device = device;
  // Plugins: probed here in a child process each; their code runs only in the workers,
  // which load them before their first job (docs/PLUGINS.md).
  result.probed = plugins::probe_plugins(opt.plugins);
  const auto& probed = result.probed;
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
    for (const Backend* b :
         opt.plugin_backends ? std::vector<const Backend*>{} : builtin_backends()) {
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
  result.backends = backends;
  // Devices per backend: the device as given (its best ISA target, or the one it names),
  // a target chosen by --simd, or with --simd all one device per target it has (only for
  // backends with per-target code paths; the others run once).
  std::vector<Device> all_targets;
  if (opt.simd == "all") {
    if (device.kind != DeviceKind::cpu)
      throw std::invalid_argument("--simd all needs a CPU device");
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
  // Jobs: every (case, backend, target) in a fixed order; this machine keeps its shard.
  result.cases = cases.size();
  std::vector<Job> jobs;
  std::size_t ordinal = 0, case_index = 0;
  for (const auto& [id, file] : cases) {
    const bool mine = opt.shard.has(case_index++);
    for (const auto& b : backends)
      for (const Device& d : devices_for(b)) {
        ++ordinal;
        if (!mine) continue;
        jobs.push_back(make_job(id, file, b, d, opt.threads));
        if (auto it = plugin_of.find(b); it != plugin_of.end()) jobs.back().plugin = it->second;
      }
  }
  if (ordinal == 0)
    throw std::invalid_argument("no case selected (check --tier, --case and --filter)");

  const bool tty = isatty(STDERR_FILENO);
  RunnerOptions ro;
  ro.jobs = opt.jobs;
  ro.timeout_seconds = opt.timeout;
  ro.max_case_memory = opt.max_case_memory;
  ro.isolate = !opt.no_isolate;
  ro.worker_init = [&probed] {
    for (const auto& p : probed) plugins::load_plugin(p.path);
  };
  // Known failures with `isa:` conditions are judged with the ISA target the device runs
  // (a record with its own --simd target uses that one: apply_expectations).
  Expectations expected = opt.expected;
  if (device.kind == DeviceKind::cpu) expected.facts.isa = isa_target_name(chosen.cpu.isa);
  StatusCounts live;
  ro.progress = [&](std::size_t done, std::size_t total, const CaseRecord& record) {
    CaseRecord r = record;
    apply_expectations(expected, r);
    live.add(r.status);
    if (is_failure(r.status) || r.status == Status::expected_failure ||
        r.status == Status::not_judged) {
      // An XFAIL prints too (its message names the original status and the listed reason),
      // so that a log shows what the expectations file hid; so does a case the harness could
      // not judge here (its size, or the harness's allocation failure).
      std::cerr << (tty ? "\r\033[K" : "") << status_name(r.status) << " " << r.backend << " "
                << r.case_id << ": " << r.message << "\n  repro: " << r.repro << "\n";
    }
    if (tty) {
      std::cerr << "\r\033[K[" << done << "/" << total << "] pass " << live[Status::pass]
                << " fail " << live[Status::fail] << " not supported "
                << live[Status::not_supported] << "  " << r.backend << " "
                << r.case_id.substr(0, 60) << std::flush;
    }
  };
  RunSummary& summary = result.summary;
  summary.tool_version = SDPA_CTS_VERSION;
  summary.tolerance_version = ToleranceTable{}.version;
  summary.tier = tier;
  summary.device = device.name;
  summary.started_at = now_iso8601();
  summary.shard_index = opt.shard.index;
  summary.shard_count = opt.shard.count;
  summary.jobs_total = ordinal;
  summary.cases_total = cases.size();
  summary.expectations = opt.expected.file;
  const auto t0 = std::chrono::steady_clock::now();
  summary.records = jobs.empty() ? std::vector<CaseRecord>{} : run_jobs(jobs, ro);
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (auto& r : summary.records) apply_expectations(expected, r);
  if (tty) std::cerr << "\r\033[K";
  return result;
}

void print_run_summary(const RunResult& result) {
  const RunSummary& summary = result.summary;
  const StatusCounts counts = count_statuses(summary);
  std::cout << summary_line(counts) << " (" << summary.records.size() << " results, "
            << result.cases << " cases, " << result.backends.size() << " backends, ";
  if (summary.shard_count > 1) {
    std::cout << "shard " << shard_name({summary.shard_index, summary.shard_count}) << " of "
              << summary.jobs_total << " jobs, ";
  }
  std::cout << summary.seconds << " s, "
            << (summary.seconds > 0 ? double(summary.records.size()) / summary.seconds : 0.0)
            << " results/s)\n";
  std::cout << judged_line(count_judged(summary)) << "\n";
  for (const CaseRecord* r : unexpectedly_passing(summary.records)) {
    std::cout << "notice: unexpectedly passing (" << status_name(r->status) << ", listed as a "
              << "known failure: " << r->expected << "): " << r->backend << " " << r->case_id
              << "\n";
  }
}

void finish_run_request(RunRequest* request, const std::string& shard_text,
                        const std::string& expect_file,
                        const std::vector<std::string>& expect_facts) {
  request->shard = shard_text.empty() ? shard_from_environment() : parse_shard(shard_text);
  ExpectFacts facts = host_expect_facts("");  // the ISA target: execute_run, from the device
  for (const auto& f : expect_facts) add_version_fact(&facts, f);
  if (!expect_facts.empty() && expect_file.empty())
    throw std::invalid_argument("--expect-fact needs --expect FILE");
  if (!expect_file.empty()) request->expected = load_expectations(expect_file, facts);
}

}  // namespace sdpa::conformance
