#include "cli/case_search.hpp"

#include <stdexcept>

#include "cli/plugin_options.hpp"
#include "conformance/runner.hpp"
#include "kernels/registry.hpp"

namespace sdpa::cli {

using conformance::CaseRecord;
using conformance::Status;

void add_search_options(CLI::App* cmd, SearchOptions* o) {
  cmd->add_option("--backend", o->backend, "The backend (built in, or from a --plugin)")
      ->required();
  add_plugin_option(cmd, &o->plugins);
  cmd->add_option(
         "--device", o->device,
         "cpu, cuda (the GPU, in a build with CUDA), auto, or a simulated CPU this machine can "
         "run, or smNN:emulate=1 (the fused CUDA kernels on the host emulator)")
      ->capture_default_str();
  cmd->add_option("--simd", o->simd, "SIMD target: scalar, avx2, avx512, avx512bf16");
  cmd->add_option("--threads", o->threads, "OpenMP threads per run (0 = default)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--jobs", o->jobs, "Worker processes at once")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--timeout", o->timeout, "Seconds per case before it is a TIMEOUT")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

SearchTarget::SearchTarget(const SearchOptions& o) : opt_(o) {
  probed_ = probe_plugins(o.plugins);
  for (const auto& p : probed_) {
    for (const auto& b : p.backends) {
      if (b.name == o.backend) plugin_ = p.path;
    }
  }
  if (plugin_.empty() && !find_backend(o.backend)) {
    std::string known;
    for (const Backend* b : builtin_backends())
      known += (known.empty() ? "" : ", ") + std::string(b->name());
    for (const auto& p : probed_) {
      for (const auto& b : p.backends) known += ", " + b.name;
    }
    throw std::invalid_argument("--backend: unknown backend '" + o.backend + "' (known: " + known +
                                ")");
  }
  device_ = runnable_device(parse_device_or_throw(o.device));
  if (!o.simd.empty()) device_ = with_isa_target(device_, o.simd);
}

std::vector<CaseRecord> SearchTarget::run(const std::vector<std::string>& ids) const {
  std::vector<conformance::Job> jobs;
  for (const auto& id : ids) {
    jobs.push_back(conformance::make_job(id, "", opt_.backend, device_, opt_.threads));
    jobs.back().plugin = plugin_;
  }
  conformance::RunnerOptions ro;
  ro.jobs = opt_.jobs;
  ro.timeout_seconds = opt_.timeout;
  const auto probed = probed_;
  ro.worker_init = [probed] {
    for (const auto& p : probed) {
      // A worker of a process that has loaded the plugin already (the libFuzzer engine)
      // inherits its backends.
      const bool loaded = !p.backends.empty() && find_backend(p.backends.front().name);
      if (!loaded) plugins::load_plugin(p.path);
    }
  };
  return conformance::run_jobs(jobs, ro);
}

const Backend& SearchTarget::load_here() const {
  if (!plugin_.empty() && !find_backend(opt_.backend)) plugins::load_plugin(plugin_);
  return find_backend_or_throw(opt_.backend);
}

std::string SearchTarget::repro(const std::string& id) const {
  conformance::Job job = conformance::make_job(id, "", opt_.backend, device_, opt_.threads);
  job.plugin = plugin_;
  return conformance::repro_command(job);
}

conformance::ShrinkResult SearchTarget::shrink(const std::string& id, Status status) const {
  return conformance::shrink_case(id, [&](const std::vector<std::string>& ids) {
    const std::vector<CaseRecord> records = run(ids);
    std::vector<bool> fails;
    for (const auto& r : records) fails.push_back(r.status == status);
    return fails;
  });
}

}  // namespace sdpa::cli
