#include "conformance/engine/case_search.hpp"

#include <stdexcept>

#include "conformance/engine/runner.hpp"
#include "kernels/registry.hpp"
#include "plugins/host/plugin_set.hpp"

namespace sdpa::conformance {

SearchTarget::SearchTarget(const SearchOptions& o) : opt_(o) {
  probed_ = plugins::probe_plugins(o.plugins);
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
  std::vector<Job> jobs;
  for (const auto& id : ids) {
    jobs.push_back(make_job(id, "", opt_.backend, device_, opt_.threads));
    jobs.back().plugin = plugin_;
  }
  RunnerOptions ro;
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
  return run_jobs(jobs, ro);
}

const Backend& SearchTarget::load_here() const {
  if (!plugin_.empty() && !find_backend(opt_.backend)) plugins::load_plugin(plugin_);
  return find_backend_or_throw(opt_.backend);
}

std::string SearchTarget::repro(const std::string& id) const {
  Job job = make_job(id, "", opt_.backend, device_, opt_.threads);
  job.plugin = plugin_;
  return repro_command(job);
}

ShrinkResult SearchTarget::shrink(const std::string& id, Status status) const {
  return shrink_case(id, [&](const std::vector<std::string>& ids) {
    const std::vector<CaseRecord> records = run(ids);
    std::vector<bool> fails;
    for (const auto& r : records) fails.push_back(r.status == status);
    return fails;
  });
}

}  // namespace sdpa::conformance
