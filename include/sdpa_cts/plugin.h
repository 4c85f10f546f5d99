/* sdpa-cts plugin ABI: how a backend that lives outside the project is judged.
 *
 * Plain C99, no C++ types across the boundary. A plugin is a shared library exporting one
 * symbol, sdpa_cts_plugin_entry, that returns a description of one or more backends: their
 * capabilities as data, a supports() that gives every reason it declines, the precision
 * contract per element type, the memory space run() expects, and run(). The host
 * (`sdpa-cts run --plugin PATH`) checks the ABI version and every struct size at load,
 * and from then on treats the backends exactly like its built-in ones: the dispatcher,
 * the judge and the reports cannot tell them apart. docs/PLUGINS.md states the
 * compatibility rules and walks through plugins/minimal/, the template to copy.
 *
 * The problem. supports() and run() receive the lowered problem, sdpa_cts_params
 * (sdpa_cts/params.h, next to this header): the one struct every kernel of the suite
 * consumes, made by the host from the case and its buffers, each field documented there.
 * It carries every tensor pointer too (Q, K, V, O, the mask, LSE, the weights), so there is
 * no separate buffers struct: in supports() every tensor pointer is NULL (the lengths arrays
 * are set); in run() each is element 0 of its view, in the memory space the backend's
 * capabilities.memory names (the host places the buffers there). What a plugin author must
 * know beyond the field comments:
 *   - lengths: seqlens_q / seqlens_kv are the per-batch lengths L_b and S_b (B entries);
 *     cu_seqlens_q / cu_seqlens_kv are their exclusive prefix sums (B + 1 entries), the row
 *     offsets of the packed layout. Both pairs are always set, also when every batch
 *     element has the full length L, S (then varlen = 0);
 *   - packed (packed = 1): row i of batch element b of Q and O is row cu_seqlens_q[b] + i
 *     (K and V: cu_seqlens_kv[b] + j), the batch stride is unused. The mask, LSE and weights
 *     are never packed: they keep their [B, Hq, L(, S)] shape;
 *   - the mask tensor: read its strides from mask_stride, never recompute them. They are 0
 *     along broadcast dimensions (mask_broadcast) and contiguous over the others in
 *     [B, Hq, L, S] order, a dimension of size 0 counted as 1;
 *   - LSE, [B, Hq, L] f32 contiguous in both layouts: a row without an attended key, and
 *     every padding row i >= L_b, is -inf. Write every entry: the host poisons the whole
 *     buffer and fails a case with "lse: element at offset N was never written" for an
 *     entry left unwritten, also the entries i >= L_b of the packed layout, which are never
 *     compared with the reference (docs/SEMANTICS.md, "Fully masked rows, empty rows");
 *   - O rows i >= L_b of the padded layout are written 0; the packed layout has no such rows;
 *   - fields marked "(reserved)" in params.h are 0 / NULL (the fp8 scales 1) in ABI 2.0. A
 *     later minor version that gives one a meaning also defines the capability flag that
 *     declares it, and the host passes such a problem only to backends declaring the flag.
 *
 * Versioning. SDPA_CTS_PLUGIN_ABI_MAJOR changes when a struct loses, moves or retypes a
 * field, or a function changes meaning: the host refuses a plugin of another major, naming
 * both versions. SDPA_CTS_PLUGIN_ABI_MINOR grows when fields are appended to a struct (never
 * inserted) or a new flag bit or enum value is defined: a host accepts a plugin of its major
 * and any minor; structs the host passes carry their struct_size, so a plugin built against
 * an older minor reads only the prefix it knows, and one built against a newer minor must
 * check struct_size before reading a field it added. sdpa_cts_params belongs to the ABI:
 * the same rules hold for it.
 * Version 2.0 (version 1.0 passed an sdpa_cts_problem and an sdpa_cts_buffers instead of
 * sdpa_cts_params; docs/PLUGINS.md, "Migrating a plugin to ABI 2").
 * Version 2.1 adds the backward pass: the capabilities SDPA_CTS_CAP_BACKWARD,
 * SDPA_CTS_CAP_BACKWARD_NEEDS_LSE and SDPA_CTS_CAP_BIAS_GRADIENT, params->d_bias appended to
 * sdpa_cts_params, run_backward()
 * appended to sdpa_cts_backend, ds_type and dkv_rounded_per_head appended to
 * sdpa_cts_precision, and a meaning for the backward fields of sdpa_cts_params (d_o, d_q,
 * d_k, d_v and their strides). A plugin built against 2.0 loads unchanged and has no backward.
 * Version 2.2 appends mma_block and mma_extra_bits to sdpa_cts_precision: tensor-core
 * accumulation (docs/CONFORMANCE.md). A plugin of 2.0 or 2.1 leaves them 0 (sums rounded to
 * nearest), as before.
 * Version 2.3 appends backward and bias_grad to sdpa_cts_params: supports() sees whether the
 * case asks for the backward (and d bias), as run() does. Plugins of 2.0 to 2.2 read the prefix
 * they know and load unchanged.
 *
 * Conventions. Strides and offsets are in elements; layouts follow docs/SEMANTICS.md
 * ([B, H, rows, D] index order). Integers are int64_t, flags int32_t (0 = false). Strings
 * are NUL-terminated UTF-8 and owned by whoever passes them; a plugin's strings must live
 * as long as the library stays loaded.
 */
#ifndef SDPA_CTS_PLUGIN_H
#define SDPA_CTS_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

/* sdpa_cts_params and the element type, causal, alignment, mask and broadcast enums. */
#include "params.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SDPA_CTS_PLUGIN_ABI_MAJOR 2
#define SDPA_CTS_PLUGIN_ABI_MINOR 3

/* Device kinds and memory spaces. */
enum { SDPA_CTS_DEVICE_CPU = 0, SDPA_CTS_DEVICE_CUDA = 1 };
enum { SDPA_CTS_MEMORY_HOST = 0, SDPA_CTS_MEMORY_CUDA_DEVICE = 1 };

/* CPU ISA targets and features. */
enum {
  SDPA_CTS_ISA_SCALAR = 0,
  SDPA_CTS_ISA_AVX2 = 1,
  SDPA_CTS_ISA_AVX512 = 2,
  SDPA_CTS_ISA_AVX512BF16 = 3
};
enum {
  SDPA_CTS_CPU_AVX2 = 1,
  SDPA_CTS_CPU_FMA = 2,
  SDPA_CTS_CPU_F16C = 4,
  SDPA_CTS_CPU_AVX512F = 8,
  SDPA_CTS_CPU_AVX512_BF16 = 16,
  SDPA_CTS_CPU_AVX512_FP16 = 32
};

/* The device a backend is asked about, or runs on. */
typedef struct sdpa_cts_device {
  uint32_t struct_size;  /* sizeof(sdpa_cts_device) as the host built it */
  int32_t kind;          /* SDPA_CTS_DEVICE_* */
  const char* name;      /* "cpu", "cpu-avx2", "sm90:cudnn=9.12.0", ... */
  int32_t simulated;     /* 1 when made from a name, not detected */
  uint32_t cpu_features; /* SDPA_CTS_CPU_* bits (CPU) */
  int32_t cpu_isa;       /* SDPA_CTS_ISA_* the backend is to run (CPU) */
  int32_t cpu_cores;     /* hardware threads (CPU) */
  int32_t cuda_sm;       /* compute capability * 10 + minor (CUDA) */
  int32_t cuda_sm_count; /* streaming multiprocessors (CUDA) */
  int32_t cuda_runtime;  /* e.g. 12080 for 12.8 (CUDA) */
  int32_t cudnn_version; /* major * 10000 + minor * 100 + patch; 0 = none (CUDA) */
} sdpa_cts_device;

/* What a backend can do, as data (the host declines what these exclude, with reasons,
 * before calling supports()). */
enum {
  SDPA_CTS_CAP_DIFFERENT_V_DIM = 1 << 0,      /* Dv != Dqk */
  SDPA_CTS_CAP_BOOL_MASK = 1 << 1,            /* boolean mask tensor */
  SDPA_CTS_CAP_ADDITIVE_MASK = 1 << 2,        /* additive mask tensor */
  SDPA_CTS_CAP_CAUSAL_TOP_LEFT = 1 << 3,      /* causal top-left */
  SDPA_CTS_CAP_CAUSAL_BOTTOM_RIGHT = 1 << 4,  /* causal bottom-right */
  SDPA_CTS_CAP_WINDOW = 1 << 5,               /* sliding windows */
  SDPA_CTS_CAP_SOFTCAP = 1 << 6,              /* logit softcapping */
  SDPA_CTS_CAP_DROPOUT = 1 << 7,              /* dropout p > 0 with the shared keep-mask */
  SDPA_CTS_CAP_GQA = 1 << 8,                  /* Hkv < Hq */
  SDPA_CTS_CAP_PADDED_SEQLENS = 1 << 9,       /* per-batch lengths, padded layout */
  SDPA_CTS_CAP_PACKED_SEQLENS = 1 << 10,      /* packed variable-length rows */
  SDPA_CTS_CAP_LSE = 1 << 11,                 /* can write LSE */
  SDPA_CTS_CAP_WEIGHTS = 1 << 12,             /* can write attention weights */
  SDPA_CTS_CAP_LAST_DIM_CONTIGUOUS = 1 << 13, /* needs stride 1 in the head dimension */
  SDPA_CTS_CAP_EMPTY_PROBLEMS = 1 << 14,      /* any dimension may be 0 */
  SDPA_CTS_CAP_DETERMINISTIC = 1 << 15,       /* same bits at any thread count and run */
  SDPA_CTS_CAP_BATCH_INVARIANT = 1 << 16,     /* a row does not depend on the rest of the batch */
  SDPA_CTS_CAP_BACKWARD = 1 << 17,            /* (2.1) has run_backward(): dQ, dK, dV */
  SDPA_CTS_CAP_BACKWARD_NEEDS_LSE = 1 << 18,  /* (2.1) run_backward() reads params->lse: the
                                                 host declines a backward case without lse */
  SDPA_CTS_CAP_BIAS_GRADIENT = 1 << 19,       /* (2.1) run_backward() also writes d bias
                                                 (params->d_bias) when a case asks for it */
  SDPA_CTS_CAP_LAST = SDPA_CTS_CAP_BIAS_GRADIENT /* the highest bit defined (2.3) */
};
/* Traits the dispatcher's ordering rules read (docs/DISPATCH.md). Bits 1 and 2 are unused
 * (ABI 1's math and cuDNN traits, replaced by sdpa_cts_capabilities.pytorch_kernel). */
enum {
  SDPA_CTS_TRAIT_SPLIT_KV = 1 << 0, /* splits one query row's keys across workers */
  SDPA_CTS_TRAIT_FUSED_MHA = 1 << 3 /* a fused kernel native MHA hands SDPA to */
};
/* Which of PyTorch's SDPA kernels a backend is the counterpart of: `--policy pytorch`
 * (docs/DISPATCH.md) orders and gates backends as PyTorch orders these kernels. */
enum {
  SDPA_CTS_PYTORCH_NONE = 0,      /* no PyTorch counterpart */
  SDPA_CTS_PYTORCH_MATH = 1,      /* the materialising math path */
  SDPA_CTS_PYTORCH_FLASH = 2,     /* FlashAttention */
  SDPA_CTS_PYTORCH_EFFICIENT = 3, /* memory-efficient attention */
  SDPA_CTS_PYTORCH_CUDNN = 4      /* the cuDNN SDPA graph */
};
typedef struct sdpa_cts_capabilities {
  uint32_t struct_size;      /* sizeof(sdpa_cts_capabilities) as the plugin built it */
  uint32_t dtypes;           /* bit (1 << SDPA_CTS_DTYPE_*) per element type accepted */
  int32_t device_kind;       /* SDPA_CTS_DEVICE_* it runs on */
  int64_t max_head_dim;      /* 0 = no limit; applies to Dqk and Dv */
  int64_t head_dim_multiple; /* Dqk and Dv must be multiples of this (>= 1) */
  uint32_t flags;            /* SDPA_CTS_CAP_* bits */
  uint32_t traits;           /* SDPA_CTS_TRAIT_* bits */
  int32_t memory;            /* SDPA_CTS_MEMORY_* every tensor pointer run() gets points into */
  int32_t pytorch_kernel;    /* SDPA_CTS_PYTORCH_* it models (NONE for most plugins) */
} sdpa_cts_capabilities;

/* How a backend rounds, for the judge's per-element bound (docs/CONFORMANCE.md). */
typedef struct sdpa_cts_precision {
  uint32_t struct_size;   /* sizeof(sdpa_cts_precision) as the host built it */
  int32_t accumulate;     /* SDPA_CTS_DTYPE_* of the QK^T and PV accumulators */
  int32_t p_type;         /* SDPA_CTS_DTYPE_* P is rounded to before PV (F32: not rounded) */
  int32_t online_softmax; /* 1: rescales running sums per key block (flash style) */
  int64_t key_block;      /* keys per block of the online softmax / split (0 = none) */
  /* (2.1) The backward's roundings (docs/CONFORMANCE.md, "The gradients' bound"); the host
   * presets ds_type to -1 and reads -1 (a plugin that does not set it) as `accumulate`. */
  int32_t ds_type;              /* SDPA_CTS_DTYPE_* P and dS are rounded to before the
                                   gradient products (the accumulate type: not rounded) */
  int32_t dkv_rounded_per_head; /* 1: dK, dV of each query head rounded to the input type
                                   before the sum over a GQA group */
  /* (2.2) Tensor-core accumulation (docs/CONFORMANCE.md, "Tensor-core accumulation"): the
   * QK^T and PV sums run through block FMAs of mma_block products (1 to 64) that keep
   * mma_extra_bits alignment bits (0 to 24) below the accumulator's significand and truncate,
   * as NVIDIA's tensor cores do (A100: 8 and 1; H100: 16 and 2). 0 = sums rounded to nearest.
   * Write them only when struct_size covers them (a host of 2.1 does not have them). */
  int32_t mma_block;
  int32_t mma_extra_bits;
} sdpa_cts_precision;

/* supports() calls this once per reason it declines: one full sentence naming the value at
 * fault ("head dim 300 exceeds 256"). No call means the backend can run the problem. A
 * reason identical to one the host's own capability check gave is recorded once. */
typedef void (*sdpa_cts_decline_fn)(void* context, const char* reason);

typedef struct sdpa_cts_backend {
  uint32_t struct_size;               /* sizeof(sdpa_cts_backend) as the plugin built it */
  const char* name;                   /* stable and unique among all backends, "vendor.fa3" */
  void* state;                        /* the plugin's own, passed back to every call */
  sdpa_cts_capabilities capabilities; /* what it can do, checked by the host first */
  /* Fills *out for `dtype`; returns 0, or non-zero when the dtype is unknown to it. */
  int32_t (*precision)(void* state, int32_t dtype, sdpa_cts_precision* out);
  /* Every reason it cannot run `params` on `device`, through decline(). The host checks
   * `capabilities` itself first, so only what they cannot say is needed here. Every tensor
   * pointer of `params` is NULL. Must not keep the pointers. */
  void (*supports)(void* state, const sdpa_cts_params* params, const sdpa_cts_device* device,
                   sdpa_cts_decline_fn decline, void* decline_context);
  /* Computes O (and LSE, weights when params asks) into the pointers of `params` on `device`
   * with `threads` threads (0 = its default). Called only after supports() declined nothing.
   * Returns 0, or non-zero with a NUL-terminated message in error[0, error_size): a failure
   * after accepting is a FAIL ("decline or be correct"). Must not keep the pointers. */
  int32_t (*run)(void* state, const sdpa_cts_params* params, const sdpa_cts_device* device,
                 int32_t threads, char* error, size_t error_size);
  /* (2.1) The backward, for a backend whose capabilities have SDPA_CTS_CAP_BACKWARD (NULL
   * otherwise): dQ, dK, dV into params->d_q, d_k, d_v (the layouts of Q, K, V: d_q_stride ==
   * q_stride, ...; every element written, 0 at padding rows and absent keys) for the upstream
   * gradient params->d_o (O's layout), after this backend's own run() of the same problem
   * wrote params->o and params->lse (NULL when the case does not ask for the LSE; with
   * SDPA_CTS_CAP_BACKWARD_NEEDS_LSE the host declines such a case for the backend), which
   * are inputs here (never written). Called after
   * supports() accepted the problem and run() succeeded; returns like run(). The host calls
   * it twice, at two thread counts, and compares the bytes (docs/SEMANTICS.md, "Backward"). */
  int32_t (*run_backward)(void* state, const sdpa_cts_params* params, const sdpa_cts_device* device,
                          int32_t threads, char* error, size_t error_size);
} sdpa_cts_backend;

/* What sdpa_cts_plugin_entry returns. abi_major and abi_minor are its first two fields in
 * every ABI version, so any host can read them from a plugin of any version. */
typedef struct sdpa_cts_plugin {
  uint32_t abi_major;               /* SDPA_CTS_PLUGIN_ABI_MAJOR the plugin was built with */
  uint32_t abi_minor;               /* SDPA_CTS_PLUGIN_ABI_MINOR the plugin was built with */
  uint32_t sizeof_params;           /* sizeof(sdpa_cts_params) as the plugin was built */
  uint32_t sizeof_device;           /* sizeof(sdpa_cts_device) as the plugin was built */
  uint32_t sizeof_capabilities;     /* sizeof(sdpa_cts_capabilities) as the plugin was built */
  uint32_t sizeof_precision;        /* sizeof(sdpa_cts_precision) as the plugin was built */
  uint32_t sizeof_backend;          /* sizeof(sdpa_cts_backend): the stride of `backends` */
  const char* name;                 /* the plugin's name, e.g. "vendor-attention" */
  const char* version;              /* its version, e.g. "2.1.0" */
  uint32_t backend_count;           /* >= 1 */
  const sdpa_cts_backend* backends; /* backend_count entries */
} sdpa_cts_plugin;

/* The first fields of an sdpa_cts_plugin, filled for the ABI this header defines. */
#define SDPA_CTS_PLUGIN_ABI_FIELDS                                                        \
  SDPA_CTS_PLUGIN_ABI_MAJOR, SDPA_CTS_PLUGIN_ABI_MINOR, sizeof(sdpa_cts_params),          \
      sizeof(sdpa_cts_device), sizeof(sdpa_cts_capabilities), sizeof(sdpa_cts_precision), \
      sizeof(sdpa_cts_backend)

#if defined(_WIN32)
#define SDPA_CTS_PLUGIN_EXPORT __declspec(dllexport)
#else
#define SDPA_CTS_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* The one symbol a plugin exports. The host passes its own ABI version; a plugin may
 * return NULL when it cannot serve that host (the load then fails, naming the file).
 * Called once per process that loads the plugin; only when it returns NULL does the host
 * call it again, as a host of each older major would (minor 0), to read abi_major and
 * abi_minor of what it returns and name that version in the error: the load fails anyway. */
typedef const sdpa_cts_plugin* (*sdpa_cts_plugin_entry_fn)(uint32_t host_abi_major,
                                                           uint32_t host_abi_minor);
#define SDPA_CTS_PLUGIN_ENTRY_SYMBOL "sdpa_cts_plugin_entry"

#ifdef __cplusplus
}
#endif

#endif /* SDPA_CTS_PLUGIN_H */
