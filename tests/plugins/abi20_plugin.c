/* A plugin as built against plugin ABI 2.0, before 2.1 appended run_backward() to
 * sdpa_cts_backend and ds_type / dkv_rounded_per_head to sdpa_cts_precision: its backend
 * structs have 2.0's size, its precision() writes 2.0's fields only. A host of ABI 2.1 must
 * load it, judge its forward, and decline backward cases ("has no backward pass"). */
#include <stddef.h>

#include "../../plugins/minimal/naive_attention.h"
#include "sdpa_cts/plugin.h"

/* sdpa_cts_backend as ABI 2.0 laid it out. */
typedef struct backend_abi20 {
  uint32_t struct_size;
  const char* name;
  void* state;
  sdpa_cts_capabilities capabilities;
  int32_t (*precision)(void* state, int32_t dtype, sdpa_cts_precision* out);
  void (*supports)(void* state, const sdpa_cts_params* params, const sdpa_cts_device* device,
                   sdpa_cts_decline_fn decline, void* decline_context);
  int32_t (*run)(void* state, const sdpa_cts_params* params, const sdpa_cts_device* device,
                 int32_t threads, char* error, size_t error_size);
} backend_abi20;

static int32_t precision(void* state, int32_t dtype, sdpa_cts_precision* out) {
  (void)state;
  if (dtype != SDPA_CTS_DTYPE_F32 && dtype != SDPA_CTS_DTYPE_F64) return 1;
  out->accumulate = out->p_type = SDPA_CTS_DTYPE_F64; /* 2.0's fields only */
  out->online_softmax = 0;
  out->key_block = 0;
  return 0;
}

static void supports(void* state, const sdpa_cts_params* p, const sdpa_cts_device* d,
                     sdpa_cts_decline_fn decline, void* context) {
  (void)state;
  (void)p;
  (void)d;
  (void)decline;
  (void)context;
}

static int32_t run(void* state, const sdpa_cts_params* p, const sdpa_cts_device* d, int32_t threads,
                   char* error, size_t error_size) {
  (void)state;
  (void)d;
  (void)threads;
  (void)error;
  (void)error_size;
  return naive_attention(p) != 0;
}

static const backend_abi20 kBackends[] = {{
    sizeof(backend_abi20),
    "abi20.naive",
    NULL,
    {sizeof(sdpa_cts_capabilities), (1u << SDPA_CTS_DTYPE_F32) | (1u << SDPA_CTS_DTYPE_F64),
     SDPA_CTS_DEVICE_CPU, 0, 1,
     SDPA_CTS_CAP_DIFFERENT_V_DIM | SDPA_CTS_CAP_CAUSAL_TOP_LEFT |
         SDPA_CTS_CAP_CAUSAL_BOTTOM_RIGHT | SDPA_CTS_CAP_GQA | SDPA_CTS_CAP_LSE |
         SDPA_CTS_CAP_EMPTY_PROBLEMS,
     0, SDPA_CTS_MEMORY_HOST, SDPA_CTS_PYTORCH_NONE},
    precision,
    supports,
    run,
}};

static const sdpa_cts_plugin kPlugin = {
    2,
    0,
    sizeof(sdpa_cts_params),
    sizeof(sdpa_cts_device),
    sizeof(sdpa_cts_capabilities),
    (uint32_t)offsetof(sdpa_cts_precision, ds_type),
    sizeof(backend_abi20),
    "sdpa-cts-abi20",
    "2.0.0",
    1,
    (const sdpa_cts_backend*)(const void*)kBackends,
};

SDPA_CTS_PLUGIN_EXPORT const sdpa_cts_plugin* sdpa_cts_plugin_entry(uint32_t host_abi_major,
                                                                    uint32_t host_abi_minor) {
  (void)host_abi_minor;
  return host_abi_major == 2 ? &kPlugin : NULL;
}
