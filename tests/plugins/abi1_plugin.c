/* A plugin built against plugin ABI 1.0 (the frozen header abi1/plugin_abi1.h), as the
 * version-1 template was written: one backend taking an sdpa_cts_problem and an
 * sdpa_cts_buffers. A host of ABI 2 must refuse it at load with an error naming both
 * versions, never call its functions (tests/plugins/CMakeLists.txt, plugins.abi1_*).
 * ABI1_ANY_HOST=0: its entry returns NULL to a host of another major, as the template's
 * did (the host then asks it as a version-1 host to name its version); 1: it returns its
 * description to any host (the host reads abi_major and refuses it). */
#include <stdio.h>

#include "abi1/plugin_abi1.h"

static int32_t abi1_precision(void* state, int32_t dtype, sdpa_cts_precision* out) {
  (void)state;
  if (dtype != SDPA_CTS_DTYPE_F32) return 1;
  out->accumulate = SDPA_CTS_DTYPE_F64;
  out->p_type = SDPA_CTS_DTYPE_F64;
  out->online_softmax = 0;
  out->key_block = 0;
  return 0;
}

static void abi1_supports(void* state, const sdpa_cts_problem* p, const sdpa_cts_device* d,
                          sdpa_cts_decline_fn decline, void* context) {
  (void)state;
  (void)d;
  if (p->struct_size != sizeof(sdpa_cts_problem)) {
    decline(context, "abi1.backend: the problem is not an ABI 1.0 sdpa_cts_problem");
  }
}

static int32_t abi1_run(void* state, const sdpa_cts_problem* p, const sdpa_cts_buffers* b,
                        const sdpa_cts_device* d, int32_t threads, char* error, size_t error_size) {
  (void)state;
  (void)p;
  (void)b;
  (void)d;
  (void)threads;
  snprintf(error, error_size, "abi1.backend: an ABI 1.0 plugin was run by the host");
  return 1;
}

static const sdpa_cts_backend kBackends[] = {{
    sizeof(sdpa_cts_backend),
    "abi1.backend",
    NULL,
    {sizeof(sdpa_cts_capabilities), 1u << SDPA_CTS_DTYPE_F32, SDPA_CTS_DEVICE_CPU, 0, 1, 0, 0,
     SDPA_CTS_MEMORY_HOST},
    abi1_precision,
    abi1_supports,
    abi1_run,
}};

static const sdpa_cts_plugin kPlugin = {
    SDPA_CTS_PLUGIN_ABI_FIELDS, "sdpa-cts-abi1", "1.0.0", 1, kBackends,
};

SDPA_CTS_PLUGIN_EXPORT const sdpa_cts_plugin* sdpa_cts_plugin_entry(uint32_t host_abi_major,
                                                                    uint32_t host_abi_minor) {
  (void)host_abi_minor;
#if ABI1_ANY_HOST
  (void)host_abi_major;
  return &kPlugin;
#else
  return host_abi_major == SDPA_CTS_PLUGIN_ABI_MAJOR ? &kPlugin : NULL;
#endif
}
