// Registers the example backend family: the template docs/KERNELS.md "Adding a backend"
// walks through (built with -DSDPA_CTS_BACKEND_EXAMPLE=ON; the debug and asan presets do).
#include "kernels/example/example_backend.hpp"
#include "kernels/registry.hpp"

void sdpa_cts_register_example_backends(sdpa::BackendRegistry& registry) {
  registry.add(sdpa::example::naive_backend());
}
