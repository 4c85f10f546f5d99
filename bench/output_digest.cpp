// Bit-level fingerprints of the CPU backends' outputs, to show that a kernel change keeps
// every output bit: for each case ID (one per line on stdin; blank lines and # comments
// skipped), each CPU backend that supports it and each SIMD target this CPU has, runs the
// backend on the case's generated data and prints
//   <FNV-1a 64 of O's guarded region and LSE>  <backend>  <simd>  <case>
// Run it from two builds (before and after a change) and diff the outputs.
//
//   build/h2/bench/sdpa-cts-output-digest [--threads N] < cases.txt
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "conformance/engine/data_gen.hpp"
#include "core/case_id.hpp"
#include "core/device.hpp"
#include "core/guarded_buffer.hpp"
#include "kernels/lowered_problem.hpp"
#include "kernels/registry.hpp"

namespace {

std::uint64_t fnv(const void* data, std::size_t n, std::uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sdpa;
  int threads = 2;
  for (int a = 1; a + 1 < argc; a += 2)
    if (std::string(argv[a]) == "--threads") threads = std::atoi(argv[a + 1]);
  const Device cpu = detect_cpu();
  int bad = 0;
  for (std::string line; std::getline(std::cin, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto parsed = parse_case_id(line);
    if (std::holds_alternative<CaseIdError>(parsed) ||
        !validate(std::get<Case>(parsed).problem).empty()) {
      std::printf("INVALID %s\n", line.c_str());
      ++bad;
      continue;
    }
    const Case c = std::get<Case>(parsed);
    const Problem& p = c.problem;
    InputBuffers in = conformance::make_inputs(c);
    for (const Backend* b : builtin_backends()) {
      if (b->capabilities().device != DeviceKind::cpu) continue;
      const std::string name(b->name());
      for (IsaTarget isa : available_isa_targets(cpu.cpu)) {
        const Device dev = with_isa_target(cpu, std::string(isa_target_name(isa)));
        if (!b->supports(p, dev).ok()) continue;
        GuardedBuffer o("o", dtype_size(p.dtype), o_view(p), p.o.base_offset);
        std::vector<float> lse(p.want_lse ? static_cast<std::size_t>(p.batch * p.heads_q * p.len_q)
                                          : 0);
        std::vector<unsigned char> w(
            p.want_weights ? static_cast<std::size_t>(p.batch * p.heads_q * p.len_q * p.len_kv) *
                                 dtype_size(p.dtype)
                           : 0);
        const Buffers buf{in.q.data(),
                          in.k.data(),
                          in.v.data(),
                          in.mask ? in.mask->data() : nullptr,
                          o.data(),
                          p.want_lse ? lse.data() : nullptr,
                          p.want_weights ? w.data() : nullptr};
        b->run(LoweredProblem(p, buf), dev, RunOptions{threads});
        std::uint64_t h = fnv(o.region(), o.region_size(), 1469598103934665603ull);
        h = fnv(lse.data(), lse.size() * sizeof(float), h);
        h = fnv(w.data(), w.size(), h);
        std::printf("%016llx %s %s %s\n", static_cast<unsigned long long>(h), name.c_str(),
                    std::string(isa_target_name(isa)).c_str(), line.c_str());
      }
    }
    std::fflush(stdout);
  }
  return bad ? 1 : 0;
}
