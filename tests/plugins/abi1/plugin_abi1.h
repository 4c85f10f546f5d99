/* FROZEN: include/sdpa_cts/plugin.h as it was at plugin ABI 1.0 (commit 478d5e5), verbatim
 * below this comment, so that tests/plugins/abi1_plugin.c is built exactly as a plugin of
 * that version was. Never edit it: the host must refuse what it builds, naming both ABI
 * versions (tests/plugins/CMakeLists.txt, plugins.abi1_*). */
/* sdpa-cts plugin ABI: how a backend that lives outside the project is judged.
 *
 * Plain C, no C++ types across the boundary. A plugin is a shared library exporting one
 * symbol, sdpa_cts_plugin_entry, that returns a description of one or more backends: their
 * capabilities as data, a supports() that gives every reason it declines, the precision
 * contract per element type, the memory space run() expects, and run(). The host
 * (`sdpa-cts run --plugin PATH`) checks the ABI version and every struct size at load,
 * and from then on treats the backends exactly like its built-in ones: the dispatcher,
 * the judge and the reports cannot tell them apart. docs/PLUGINS.md states the
 * compatibility rules and walks through plugins/minimal/, the template to copy.
 *
 * Versioning. SDPA_CTS_PLUGIN_ABI_MAJOR changes when a struct loses, moves or retypes a
 * field, or a function changes meaning: the host refuses a plugin of another major.
 * SDPA_CTS_PLUGIN_ABI_MINOR grows when fields are appended to a struct (never inserted) or
 * a new flag bit or enum value is defined: a host accepts a plugin of its major and any
 * minor; structs the host passes carry their struct_size, so a plugin built against an
 * older minor reads only the prefix it knows, and one built against a newer minor must
 * check struct_size before reading a field it added.
 *
 * Conventions. Every tensor pointer is element 0 of its view; strides and offsets are in
 * elements; layouts follow docs/SEMANTICS.md ([B, H, rows, D] index order, packed rows when
 * `packed`). Integers are int64_t, flags int32_t (0 = false). Strings are NUL-terminated
 * UTF-8 and owned by whoever passes them; a plugin's strings must live as long as the
 * library stays loaded.
 */
#ifndef SDPA_CTS_PLUGIN_H
#define SDPA_CTS_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SDPA_CTS_PLUGIN_ABI_MAJOR 1
#define SDPA_CTS_PLUGIN_ABI_MINOR 0

/* Element types. */
enum {
  SDPA_CTS_DTYPE_F64 = 0,
  SDPA_CTS_DTYPE_F32 = 1,
  SDPA_CTS_DTYPE_F16 = 2,
  SDPA_CTS_DTYPE_BF16 = 3
};

/* Causal masks and window alignment (docs/SEMANTICS.md). */
enum { SDPA_CTS_CAUSAL_NONE = 0, SDPA_CTS_CAUSAL_TOP_LEFT = 1, SDPA_CTS_CAUSAL_BOTTOM_RIGHT = 2 };
enum { SDPA_CTS_ALIGN_TOP_LEFT = 0, SDPA_CTS_ALIGN_BOTTOM_RIGHT = 1 };

/* Mask tensor kinds: boolean masks are uint8 (1 = attend), additive ones in the dtype. */
enum { SDPA_CTS_MASK_NONE = 0, SDPA_CTS_MASK_BOOL = 1, SDPA_CTS_MASK_ADDITIVE = 2 };

/* Broadcast dimensions of the mask tensor (stride 0 there), bit flags. */
enum {
  SDPA_CTS_BROADCAST_B = 1,
  SDPA_CTS_BROADCAST_H = 2,
  SDPA_CTS_BROADCAST_L = 4,
  SDPA_CTS_BROADCAST_S = 8
};

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

/* Strides and allocation offset of one tensor. */
typedef struct sdpa_cts_layout {
  int64_t stride[4];   /* element strides of (b, h, row, d); b unused when packed */
  int64_t base_offset; /* elements between the allocation start and element 0 */
} sdpa_cts_layout;

/* One SDPA call: everything docs/SEMANTICS.md defines. */
typedef struct sdpa_cts_problem {
  uint32_t struct_size;   /* sizeof(sdpa_cts_problem) as the host built it */
  int64_t batch;          /* B */
  int64_t heads_q;        /* Hq, query heads */
  int64_t heads_kv;       /* Hkv, key/value heads; Hq % Hkv == 0, groups contiguous */
  int64_t len_q;          /* L, query length (the maximum over batch elements) */
  int64_t len_kv;         /* S, key length (the maximum over batch elements) */
  int64_t head_dim_qk;    /* Dqk */
  int64_t head_dim_v;     /* Dv */
  int32_t dtype;          /* SDPA_CTS_DTYPE_* of Q, K, V, O and an additive mask */
  sdpa_cts_layout q;      /* layout of Q [B, Hq, L, Dqk] */
  sdpa_cts_layout k;      /* layout of K [B, Hkv, S, Dqk] */
  sdpa_cts_layout v;      /* layout of V [B, Hkv, S, Dv] */
  sdpa_cts_layout o;      /* layout of O [B, Hq, L, Dv] */
  int32_t causal;         /* SDPA_CTS_CAUSAL_* */
  int32_t window;         /* 1: sliding window i + off - left <= j <= i + off + right */
  int64_t window_left;    /* keys before the diagonal, < 0 = unbounded */
  int64_t window_right;   /* keys after the diagonal, < 0 = unbounded */
  int32_t window_align;   /* SDPA_CTS_ALIGN_* of the window's diagonal */
  int32_t mask;           /* SDPA_CTS_MASK_*: a mask tensor [B, Hq, L, S] */
  uint32_t mask_broadcast; /* SDPA_CTS_BROADCAST_* bits; contiguous otherwise */
  const int64_t* seqlens_q;  /* L_b per batch element, or NULL (all L) */
  const int64_t* seqlens_kv; /* S_b per batch element, or NULL (all S) */
  int32_t packed;         /* 1: rows packed back to back (row of b: cu_seqlens[b] + i) */
  double softcap;         /* c > 0: s = c * tanh(s / c) before masks; 0 = off */
  double scale;           /* the logit scale to use (1 / sqrt(Dqk) unless set) */
  int32_t scale_is_default; /* 1 when scale is the default 1 / sqrt(Dqk) */
  double dropout_p;       /* dropout probability in [0, 1) */
  uint64_t dropout_seed;  /* Philox4x32-10 key of the keep-mask (docs/SEMANTICS.md) */
  uint64_t dropout_offset; /* Philox counter offset of the keep-mask */
  int32_t want_lse;       /* 1: also write LSE [B, Hq, L] f32 contiguous */
  int32_t want_weights;   /* 1: also write the weights [B, Hq, L, S] in dtype, contiguous */
} sdpa_cts_problem;

/* The device a backend is asked about, or runs on. */
typedef struct sdpa_cts_device {
  uint32_t struct_size;   /* sizeof(sdpa_cts_device) as the host built it */
  int32_t kind;           /* SDPA_CTS_DEVICE_* */
  const char* name;       /* "cpu", "cpu-avx2", "sm90:cudnn=9.12.0", ... */
  int32_t simulated;      /* 1 when made from a name, not detected */
  uint32_t cpu_features;  /* SDPA_CTS_CPU_* bits (CPU) */
  int32_t cpu_isa;        /* SDPA_CTS_ISA_* the backend is to run (CPU) */
  int32_t cpu_cores;      /* hardware threads (CPU) */
  int32_t cuda_sm;        /* compute capability * 10 + minor (CUDA) */
  int32_t cuda_sm_count;  /* streaming multiprocessors (CUDA) */
  int32_t cuda_runtime;   /* e.g. 12080 for 12.8 (CUDA) */
  int32_t cudnn_version;  /* major * 10000 + minor * 100 + patch; 0 = none (CUDA) */
} sdpa_cts_device;

/* What a backend can do, as data (the host declines what these exclude, with reasons,
 * before calling supports()). */
enum {
  SDPA_CTS_CAP_DIFFERENT_V_DIM = 1 << 0,   /* Dv != Dqk */
  SDPA_CTS_CAP_BOOL_MASK = 1 << 1,         /* boolean mask tensor */
  SDPA_CTS_CAP_ADDITIVE_MASK = 1 << 2,     /* additive mask tensor */
  SDPA_CTS_CAP_CAUSAL_TOP_LEFT = 1 << 3,   /* causal top-left */
  SDPA_CTS_CAP_CAUSAL_BOTTOM_RIGHT = 1 << 4, /* causal bottom-right */
  SDPA_CTS_CAP_WINDOW = 1 << 5,            /* sliding windows */
  SDPA_CTS_CAP_SOFTCAP = 1 << 6,           /* logit softcapping */
  SDPA_CTS_CAP_DROPOUT = 1 << 7,           /* dropout p > 0 with the shared keep-mask */
  SDPA_CTS_CAP_GQA = 1 << 8,               /* Hkv < Hq */
  SDPA_CTS_CAP_PADDED_SEQLENS = 1 << 9,    /* per-batch lengths, padded layout */
  SDPA_CTS_CAP_PACKED_SEQLENS = 1 << 10,   /* packed variable-length rows */
  SDPA_CTS_CAP_LSE = 1 << 11,              /* can write LSE */
  SDPA_CTS_CAP_WEIGHTS = 1 << 12,          /* can write attention weights */
  SDPA_CTS_CAP_LAST_DIM_CONTIGUOUS = 1 << 13, /* needs stride 1 in the head dimension */
  SDPA_CTS_CAP_EMPTY_PROBLEMS = 1 << 14,   /* any dimension may be 0 */
  SDPA_CTS_CAP_DETERMINISTIC = 1 << 15,    /* same bits at any thread count and run */
  SDPA_CTS_CAP_BATCH_INVARIANT = 1 << 16   /* a row does not depend on the rest of the batch */
};
/* Traits the dispatcher's ordering rules read (docs/DISPATCH.md). */
enum {
  SDPA_CTS_TRAIT_SPLIT_KV = 1 << 0,  /* splits one query row's keys across workers */
  SDPA_CTS_TRAIT_MATH = 1 << 1,      /* the materialising math path */
  SDPA_CTS_TRAIT_CUDNN = 1 << 2,     /* the cuDNN SDPA graph */
  SDPA_CTS_TRAIT_FUSED_MHA = 1 << 3  /* a fused kernel native MHA hands SDPA to */
};
typedef struct sdpa_cts_capabilities {
  uint32_t struct_size;     /* sizeof(sdpa_cts_capabilities) as the plugin built it */
  uint32_t dtypes;          /* bit (1 << SDPA_CTS_DTYPE_*) per element type accepted */
  int32_t device_kind;      /* SDPA_CTS_DEVICE_* it runs on */
  int64_t max_head_dim;     /* 0 = no limit; applies to Dqk and Dv */
  int64_t head_dim_multiple; /* Dqk and Dv must be multiples of this (>= 1) */
  uint32_t flags;           /* SDPA_CTS_CAP_* bits */
  uint32_t traits;          /* SDPA_CTS_TRAIT_* bits */
  int32_t memory;           /* SDPA_CTS_MEMORY_* run() expects its buffers in */
} sdpa_cts_capabilities;

/* How a backend rounds, for the judge's per-element bound (docs/CONFORMANCE.md). */
typedef struct sdpa_cts_precision {
  uint32_t struct_size;   /* sizeof(sdpa_cts_precision) as the host built it */
  int32_t accumulate;     /* SDPA_CTS_DTYPE_* of the QK^T and PV accumulators */
  int32_t p_type;         /* SDPA_CTS_DTYPE_* P is rounded to before PV (F32: not rounded) */
  int32_t online_softmax; /* 1: rescales running sums per key block (flash style) */
  int64_t key_block;      /* keys per block of the online softmax / split (0 = none) */
} sdpa_cts_precision;

/* Input and output pointers of one run, each element 0 of its view, all in `memory`. */
typedef struct sdpa_cts_buffers {
  uint32_t struct_size;   /* sizeof(sdpa_cts_buffers) as the host built it */
  const void* q;
  const void* k;
  const void* v;
  const void* mask;       /* NULL without a mask tensor */
  void* o;
  float* lse;             /* NULL unless want_lse */
  void* weights;          /* NULL unless want_weights */
  int32_t memory;         /* SDPA_CTS_MEMORY_* of every pointer above */
} sdpa_cts_buffers;

/* supports() calls this once per reason it declines: one full sentence naming the value at
 * fault ("head dim 300 exceeds 256"). No call means the backend can run the problem. */
typedef void (*sdpa_cts_decline_fn)(void* context, const char* reason);

typedef struct sdpa_cts_backend {
  uint32_t struct_size;   /* sizeof(sdpa_cts_backend) as the plugin built it */
  const char* name;       /* stable and unique among all backends, e.g. "vendor.fa3" */
  void* state;            /* the plugin's own, passed back to every call */
  sdpa_cts_capabilities capabilities;
  /* Fills *out for `dtype`; returns 0, or non-zero when the dtype is unknown to it. */
  int32_t (*precision)(void* state, int32_t dtype, sdpa_cts_precision* out);
  /* Every reason it cannot run `problem` on `device`, through decline(). The host also
   * checks `capabilities` itself. Must not keep the pointers. */
  void (*supports)(void* state, const sdpa_cts_problem* problem, const sdpa_cts_device* device,
                   sdpa_cts_decline_fn decline, void* decline_context);
  /* Computes O (and LSE, weights when asked) on `device` with `threads` threads (0 = its
   * default). Called only after supports() declined nothing. Returns 0, or non-zero with a
   * NUL-terminated message in error[0, error_size): a failure after accepting is a FAIL
   * ("decline or be correct"). */
  int32_t (*run)(void* state, const sdpa_cts_problem* problem, const sdpa_cts_buffers* buffers,
                 const sdpa_cts_device* device, int32_t threads, char* error, size_t error_size);
} sdpa_cts_backend;

/* What sdpa_cts_plugin_entry returns. */
typedef struct sdpa_cts_plugin {
  uint32_t abi_major;             /* SDPA_CTS_PLUGIN_ABI_MAJOR the plugin was built with */
  uint32_t abi_minor;             /* SDPA_CTS_PLUGIN_ABI_MINOR the plugin was built with */
  uint32_t sizeof_problem;        /* sizeof of each struct as the plugin was built */
  uint32_t sizeof_device;
  uint32_t sizeof_capabilities;
  uint32_t sizeof_precision;
  uint32_t sizeof_buffers;
  uint32_t sizeof_backend;
  const char* name;               /* the plugin's name, e.g. "vendor-attention" */
  const char* version;            /* its version, e.g. "2.1.0" */
  uint32_t backend_count;         /* >= 1 */
  const sdpa_cts_backend* backends; /* backend_count entries */
} sdpa_cts_plugin;

/* The first fields of an sdpa_cts_plugin, filled for the ABI this header defines. */
#define SDPA_CTS_PLUGIN_ABI_FIELDS                                                        \
  SDPA_CTS_PLUGIN_ABI_MAJOR, SDPA_CTS_PLUGIN_ABI_MINOR, sizeof(sdpa_cts_problem),           \
      sizeof(sdpa_cts_device), sizeof(sdpa_cts_capabilities), sizeof(sdpa_cts_precision), \
      sizeof(sdpa_cts_buffers), sizeof(sdpa_cts_backend)

#if defined(_WIN32)
#define SDPA_CTS_PLUGIN_EXPORT __declspec(dllexport)
#else
#define SDPA_CTS_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* The one symbol a plugin exports. The host passes its own ABI version; a plugin may
 * return NULL when it cannot serve that host (the load then fails, naming the file).
 * Called once per process that loads the plugin. */
typedef const sdpa_cts_plugin* (*sdpa_cts_plugin_entry_fn)(uint32_t host_abi_major,
                                                           uint32_t host_abi_minor);
#define SDPA_CTS_PLUGIN_ENTRY_SYMBOL "sdpa_cts_plugin_entry"

#ifdef __cplusplus
}
#endif

#endif /* SDPA_CTS_PLUGIN_H */
