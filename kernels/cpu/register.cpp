// Registers the CPU backend family, in its priority order (docs/DISPATCH.md).
#include "kernels/cpu/cpu_backends.hpp"
#include "kernels/registry.hpp"

void sdpa_cts_register_cpu_backends(sdpa::BackendRegistry& registry) {
  registry.add(sdpa::cpu::flash_backend());
  registry.add(sdpa::cpu::mem_efficient_backend());
  registry.add(sdpa::cpu::math_backend());
}
