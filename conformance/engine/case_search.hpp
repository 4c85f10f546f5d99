// What `sdpa-cts fuzz` and `sdpa-cts shrink` share: one backend target (a built-in or plugin
// backend on a device, SIMD target and thread count) that runs batches of case IDs in
// isolated workers, and the shrinking of a failing case on it.
#pragma once

#include <string>
#include <vector>

#include "conformance/engine/shrink.hpp"
#include "kernels/backend.hpp"
#include "plugins/host/plugin_loader.hpp"
#include "reports/records/run_record.hpp"

namespace sdpa::conformance {

struct SearchOptions {
  std::string backend;               // --backend
  std::vector<std::string> plugins;  // --plugin
  std::string device = "cpu";        // --device
  std::string simd;                  // --simd ("" = the device's best)
  int threads = 0;                   // --threads
  int jobs = 1;                      // --jobs: worker processes at once
  double timeout = 60;               // --timeout: seconds per case
};

class SearchTarget {
 public:
  // Probes the plugins and checks the backend and device; throws std::invalid_argument.
  explicit SearchTarget(const SearchOptions& o);
  // Runs every ID (isolated workers, --jobs at once) and returns the records in order.
  std::vector<CaseRecord> run(const std::vector<std::string>& ids) const;
  // Shrinks a case that fails with `status` toward the smallest ID failing the same way.
  ShrinkResult shrink(const std::string& id, Status status) const;
  // The paste-able command that runs `id` on this target.
  std::string repro(const std::string& id) const;
  const std::string& backend() const { return opt_.backend; }
  // The backend in this process (a plugin's is loaded here first), for an engine that runs
  // cases in-process: libFuzzer, which needs the kernel's coverage.
  const Backend& load_here() const;
  const Device& device() const { return device_; }
  int threads() const { return opt_.threads; }

 private:
  SearchOptions opt_;
  std::vector<plugins::ProbedPlugin> probed_;
  std::string plugin_;  // the plugin file of the backend ("" = built in)
  Device device_;
};

}  // namespace sdpa::conformance
