/* A deliberately wrong plugin: the minimal plugin's algorithm with one bug per backend, so
 * that tests can check the judge catches each one with the right status and reason
 * (docs/PLUGINS.md, "The faulty plugin"). Never a template. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../minimal/naive_attention.h"
#include "sdpa_cts/plugin.h"

enum fault {
  FAULT_BOTTOM_RIGHT_AS_TOP_LEFT,
  FAULT_PARTIAL_BLOCK_DROPPED,
  FAULT_GQA_TILED,
  FAULT_OUT_OF_BOUNDS_WRITE,
  FAULT_WRITES_INPUT,
  FAULT_CRASH,
  FAULT_HANG,
  FAULT_ERROR_AFTER_ACCEPT,
  FAULT_COUNT
};
static const enum fault kFaults[FAULT_COUNT] = {
    FAULT_BOTTOM_RIGHT_AS_TOP_LEFT, FAULT_PARTIAL_BLOCK_DROPPED, FAULT_GQA_TILED,
    FAULT_OUT_OF_BOUNDS_WRITE,      FAULT_WRITES_INPUT,          FAULT_CRASH,
    FAULT_HANG,                     FAULT_ERROR_AFTER_ACCEPT};

static int32_t faulty_precision(void* state, int32_t dtype, sdpa_cts_precision* out) {
  (void)state;
  if (dtype != SDPA_CTS_DTYPE_F32 && dtype != SDPA_CTS_DTYPE_F64) return 1;
  out->accumulate = SDPA_CTS_DTYPE_F64;
  out->p_type = SDPA_CTS_DTYPE_F64;
  out->online_softmax = 0;
  out->key_block = 0;
  return 0;
}

static void faulty_supports(void* state, const sdpa_cts_params* p, const sdpa_cts_device* d,
                            sdpa_cts_decline_fn decline, void* context) {
  (void)state;
  (void)p;
  (void)d;
  (void)decline;
  (void)context;
}

static int32_t faulty_run(void* state, const sdpa_cts_params* p, const sdpa_cts_device* d,
                          int32_t threads, char* error, size_t error_size) {
  (void)d;
  (void)threads;
  const enum fault f = *(const enum fault*)state;
  naive_attention_bugs bugs = {0, 0, 0};
  switch (f) {
    case FAULT_BOTTOM_RIGHT_AS_TOP_LEFT:
      bugs.bottom_right_as_top_left = 1;
      break;
    case FAULT_PARTIAL_BLOCK_DROPPED:
      bugs.drop_partial_block = 64;
      break;
    case FAULT_GQA_TILED:
      bugs.gqa_tiled = 1;
      break;
    case FAULT_CRASH:
      raise(SIGSEGV);
      break;
    case FAULT_HANG:
      for (;;) pause();
    case FAULT_ERROR_AFTER_ACCEPT:
      snprintf(error, error_size, "out of scratch memory");
      return 1;
    default:
      break;
  }
  if (naive_attention_with_bugs(p, &bugs) != 0) {
    snprintf(error, error_size, "out of memory");
    return 1;
  }
  if (f == FAULT_OUT_OF_BOUNDS_WRITE) {
    /* One element just past the last element of O (dense layouts). */
    const int64_t* o = p->o_stride;
    const int64_t last = (p->batch - 1) * o[0] + (p->heads_q - 1) * o[1] + (p->len_q - 1) * o[2] +
                         (p->head_dim_v - 1) * o[3];
    if (p->dtype == SDPA_CTS_DTYPE_F64) {
      ((double*)p->o)[last + 1] = 0.0;
    } else {
      ((float*)p->o)[last + 1] = 0.0f;
    }
  }
  if (f == FAULT_WRITES_INPUT) {
    if (p->dtype == SDPA_CTS_DTYPE_F64) {
      ((double*)(void*)(uintptr_t)p->q)[0] += 1.0;
    } else {
      ((float*)(void*)(uintptr_t)p->q)[0] += 1.0f;
    }
  }
  return 0;
}

#define FAULTY_BACKEND(name, index)                                                            \
  {                                                                                            \
    sizeof(sdpa_cts_backend), name, (void*)&kFaults[index],                                    \
        {sizeof(sdpa_cts_capabilities), (1u << SDPA_CTS_DTYPE_F32) | (1u << SDPA_CTS_DTYPE_F64), \
         SDPA_CTS_DEVICE_CPU, 0, 1,                                                            \
         SDPA_CTS_CAP_DIFFERENT_V_DIM | SDPA_CTS_CAP_BOOL_MASK | SDPA_CTS_CAP_ADDITIVE_MASK |   \
             SDPA_CTS_CAP_CAUSAL_TOP_LEFT | SDPA_CTS_CAP_CAUSAL_BOTTOM_RIGHT |                 \
             SDPA_CTS_CAP_GQA | SDPA_CTS_CAP_LSE | SDPA_CTS_CAP_EMPTY_PROBLEMS,                \
         0, SDPA_CTS_MEMORY_HOST, SDPA_CTS_PYTORCH_NONE},                                      \
        faulty_precision, faulty_supports, faulty_run, NULL                                    \
  }

static const sdpa_cts_backend kBackends[FAULT_COUNT] = {
    FAULTY_BACKEND("faulty.bottom_right_as_top_left", FAULT_BOTTOM_RIGHT_AS_TOP_LEFT),
    FAULTY_BACKEND("faulty.partial_block_dropped", FAULT_PARTIAL_BLOCK_DROPPED),
    FAULTY_BACKEND("faulty.gqa_tiled", FAULT_GQA_TILED),
    FAULTY_BACKEND("faulty.out_of_bounds_write", FAULT_OUT_OF_BOUNDS_WRITE),
    FAULTY_BACKEND("faulty.writes_input", FAULT_WRITES_INPUT),
    FAULTY_BACKEND("faulty.crash", FAULT_CRASH),
    FAULTY_BACKEND("faulty.hang", FAULT_HANG),
    FAULTY_BACKEND("faulty.error_after_accept", FAULT_ERROR_AFTER_ACCEPT),
};

static const sdpa_cts_plugin kPlugin = {
    SDPA_CTS_PLUGIN_ABI_FIELDS, "sdpa-cts-faulty", "2.0.0", FAULT_COUNT, kBackends,
};

SDPA_CTS_PLUGIN_EXPORT const sdpa_cts_plugin* sdpa_cts_plugin_entry(uint32_t host_abi_major,
                                                                    uint32_t host_abi_minor) {
  (void)host_abi_minor;
  return host_abi_major == SDPA_CTS_PLUGIN_ABI_MAJOR ? &kPlugin : NULL;
}
