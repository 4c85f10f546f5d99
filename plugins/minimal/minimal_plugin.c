/* The minimal sdpa-cts plugin: the template a vendor copies (docs/PLUGINS.md). One backend,
 * "minimal.naive", computing attention with plain loops in f64 (naive_attention.c) on host
 * memory. Its capabilities say what it accepts; supports() adds what they cannot say; the
 * host judges it on any tier: `sdpa-cts run --plugin libsdpa_cts_minimal_plugin.so`. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "naive_attention.h"
#include "sdpa_cts/plugin.h"

static int32_t minimal_precision(void* state, int32_t dtype, sdpa_cts_precision* out) {
  (void)state;
  if (dtype != SDPA_CTS_DTYPE_F32 && dtype != SDPA_CTS_DTYPE_F64) return 1;
  out->accumulate = SDPA_CTS_DTYPE_F64; /* every sum in f64, rounded once to the output */
  out->p_type = SDPA_CTS_DTYPE_F64;
  out->online_softmax = 0;
  out->key_block = 0;
  /* A field exists on the host's side when its struct_size covers it. */
  if (out->struct_size >= offsetof(sdpa_cts_precision, dkv_rounded_per_head) + sizeof(int32_t)) {
    out->ds_type = SDPA_CTS_DTYPE_F64; /* (2.1) P and dS kept in f64 */
    out->dkv_rounded_per_head = 0;
  }
  if (out->struct_size >= offsetof(sdpa_cts_precision, mma_extra_bits) + sizeof(int32_t)) {
    out->mma_block = 0; /* (2.2) no tensor cores: every sum rounded to nearest */
    out->mma_extra_bits = 0;
  }
  return 0;
}

/* `p` is the lowered problem (sdpa_cts/params.h) with every tensor pointer NULL. */
static void minimal_supports(void* state, const sdpa_cts_params* p, const sdpa_cts_device* d,
                             sdpa_cts_decline_fn decline, void* context) {
  (void)state;
  (void)d;
  /* The capabilities below already exclude dropout, windows, softcap, varlen and the
   * weights output (the host declines those with its own reasons, before this call);
   * here only what they cannot express. */
  if (p->batch * p->heads_q * p->len_q * p->len_kv > (int64_t)1 << 32) {
    char why[160];
    snprintf(why, sizeof why, "B*Hq*L*S = %lld exceeds 2^32: too slow for plain loops",
             (long long)(p->batch * p->heads_q * p->len_q * p->len_kv));
    decline(context, why);
  }
}

/* `p` carries the tensors too: element-0 pointers in host memory (capabilities.memory). */
static int32_t minimal_run(void* state, const sdpa_cts_params* p, const sdpa_cts_device* d,
                           int32_t threads, char* error, size_t error_size) {
  (void)state;
  (void)d;
  (void)threads;
  if (naive_attention(p) != 0) {
    snprintf(error, error_size, "minimal.naive: out of memory");
    return 1;
  }
  return 0;
}

/* The backward (ABI 2.1): dQ, dK, dV for params->d_o, with the forward's O in params->o. */
static int32_t minimal_run_backward(void* state, const sdpa_cts_params* p, const sdpa_cts_device* d,
                                    int32_t threads, char* error, size_t error_size) {
  (void)state;
  (void)d;
  (void)threads;
  if (naive_attention_backward(p) != 0) {
    snprintf(error, error_size, "minimal.naive: out of memory");
    return 1;
  }
  return 0;
}

static const sdpa_cts_backend kBackends[] = {{
    sizeof(sdpa_cts_backend),
    "minimal.naive",
    NULL,
    {
        sizeof(sdpa_cts_capabilities), (1u << SDPA_CTS_DTYPE_F32) | (1u << SDPA_CTS_DTYPE_F64),
        SDPA_CTS_DEVICE_CPU, 0, /* no head-dim limit */
        1,                      /* any head dim */
        SDPA_CTS_CAP_DIFFERENT_V_DIM | SDPA_CTS_CAP_BOOL_MASK | SDPA_CTS_CAP_ADDITIVE_MASK |
            SDPA_CTS_CAP_CAUSAL_TOP_LEFT | SDPA_CTS_CAP_CAUSAL_BOTTOM_RIGHT | SDPA_CTS_CAP_GQA |
            SDPA_CTS_CAP_LSE | SDPA_CTS_CAP_EMPTY_PROBLEMS | SDPA_CTS_CAP_DETERMINISTIC |
            SDPA_CTS_CAP_BATCH_INVARIANT | SDPA_CTS_CAP_BACKWARD | SDPA_CTS_CAP_BIAS_GRADIENT,
        0, /* no traits */
        SDPA_CTS_MEMORY_HOST,
        SDPA_CTS_PYTORCH_MATH, /* orders like PyTorch's math path under --policy pytorch */
    },
    minimal_precision,
    minimal_supports,
    minimal_run,
    minimal_run_backward,
}};

static const sdpa_cts_plugin kPlugin = {
    SDPA_CTS_PLUGIN_ABI_FIELDS, "sdpa-cts-minimal", "2.1.0", 1, kBackends,
};

SDPA_CTS_PLUGIN_EXPORT const sdpa_cts_plugin* sdpa_cts_plugin_entry(uint32_t host_abi_major,
                                                                    uint32_t host_abi_minor) {
  (void)host_abi_minor;
  return host_abi_major == SDPA_CTS_PLUGIN_ABI_MAJOR ? &kPlugin : NULL;
}
