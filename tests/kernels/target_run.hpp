// Running a backend on this machine's CPU with a named ISA target and a thread count: the
// (target, threads) pairs the kernel and property tests iterate over.
#pragma once

#include <string>
#include <vector>

#include "core/device.hpp"
#include "kernels/backend.hpp"
#include "kernels/lowered_problem.hpp"

namespace sdpa::test_support {

struct TargetRun {
  int threads = 0;     // OpenMP threads (0 = default)
  std::string target;  // ISA target name ("" = the best this CPU has)
};

// The detected CPU with `target` chosen ("" keeps the best).
inline Device target_device(const std::string& target) {
  static const Device cpu = detect_cpu();
  return with_isa_target(cpu, target);
}

// The ISA target names this CPU has, lowest first.
inline std::vector<std::string> isa_target_names() {
  std::vector<std::string> v;
  for (IsaTarget t : available_isa_targets(detect_cpu().cpu)) v.emplace_back(isa_target_name(t));
  return v;
}

inline void run_with(const Backend& b, const Problem& p, const Buffers& buf, const TargetRun& t) {
  b.run(LoweredProblem(p, buf), target_device(t.target), RunOptions{t.threads});
}

}  // namespace sdpa::test_support
