// Differential fuzzing of the built-in CPU backends against the reference: the bytes decode
// into a case (fuzz/case_from_bytes.hpp), an ISA target and a thread count; every built-in
// backend that accepts the case runs it and the one judge compares it with the reference (and,
// for a backward case, its gradients with the reference's).
// FAIL or CRASH (an exception where the backend said yes) is a finding; a sanitizer report
// is one by itself.
#include <cstdint>
#include <string>

#include "conformance/engine/check_case.hpp"
#include "core/case_id.hpp"
#include "core/device.hpp"
#include "fuzz/case_from_bytes.hpp"
#include "fuzz/finding.hpp"
#include "kernels/registry.hpp"

using namespace sdpa;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Device cpu = detect_cpu();
  static const std::vector<IsaTarget> targets = available_isa_targets(cpu.cpu);
  fuzz::FuzzInput in(data, size);
  const Case c = fuzz::case_from_bytes(in);
  const IsaTarget isa =
      targets[static_cast<std::size_t>(in.range(0, static_cast<std::int64_t>(targets.size()) - 1))];
  RunOptions options;
  options.threads = static_cast<int>(in.range(1, 2));
  const Device device = with_isa_target(cpu, isa_target_name(isa));
  const std::string id = format_case_id(c);
  for (const Backend* b : builtin_backends()) {
    if (b->capabilities().device != DeviceKind::cpu || !b->supports(c.problem, device).ok()) {
      continue;
    }
    const conformance::CaseOutcome out = conformance::check_case(*b, c, device, options);
    if (out.status == conformance::Status::fail || out.status == conformance::Status::crash) {
      fuzz::finding(std::string(conformance::status_name(out.status)) + " " +
                        std::string(b->name()) + " [" + std::string(isa_target_name(isa)) + ", " +
                        std::to_string(options.threads) + " threads] " + id + ": " + out.message,
                    "sdpa-cts run --backend " + std::string(b->name()) + " --simd " +
                        std::string(isa_target_name(isa)) + " --threads " +
                        std::to_string(options.threads) + " --case " + id);
    }
  }
  return 0;
}
