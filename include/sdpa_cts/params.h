/* sdpa-cts: the lowered problem, one attention call as plain data.
 *
 * Every kernel of the suite consumes this struct: the CPU kernels, the CUDA kernels and their
 * host emulator, and the backends loaded through the plugin ABI (sdpa_cts/plugin.h). It is
 * made in one place from the suite's problem descriptor and the run's buffers
 * (kernels/lowered_problem.hpp), so a field's meaning is defined once, here.
 *
 * Conventions (docs/SEMANTICS.md): index order [B, H, rows, D]; strides and offsets are in
 * elements; every tensor pointer is element 0 of its view; with `packed`, the batch
 * dimension disappears and row i of batch element b is stored row cu_seqlens[b] + i (the
 * batch stride is then unused). Integers are int64_t, flags int32_t (0 = false).
 *
 * Part of the plugin ABI (sdpa_cts/plugin.h, docs/PLUGINS.md): a plugin built against one
 * version of this struct reads it from any host of the same ABI major. So fields are only
 * appended (then SDPA_CTS_PLUGIN_ABI_MINOR grows); removing, moving or retyping one, or
 * changing its meaning, is a new SDPA_CTS_PLUGIN_ABI_MAJOR.
 *
 * Plain C, no padding surprises: the fields are ordered by size class within each group and
 * the host checks `struct_size`. Fields marked "(reserved)" are slots for what is coming
 * (paged KV caches, fp8 scales, attention sinks): they are zero / NULL today and a kernel
 * must decline a problem that sets one it does not implement. The backward's fields have
 * their meaning since ABI 2.1: NULL except in a backward call (run_backward()).
 */
#ifndef SDPA_CTS_PARAMS_H
#define SDPA_CTS_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types: the one encoding of the suite (the C++ DType has the same values). */
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

/* One attention call, lowered. */
typedef struct sdpa_cts_params {
  uint32_t struct_size; /* sizeof(sdpa_cts_params) as the host built it */
  int32_t dtype;        /* SDPA_CTS_DTYPE_* of Q, K, V, O, an additive mask and the weights */

  /* Shape. */
  int64_t batch;       /* B */
  int64_t heads_q;     /* Hq, query heads */
  int64_t heads_kv;    /* Hkv, key/value heads; Hq % Hkv == 0, query head h reads h / group */
  int64_t group;       /* Hq / Hkv (1 when Hkv is 0) */
  int64_t len_q;       /* L, query rows (the maximum over batch elements) */
  int64_t len_kv;      /* S, keys (the maximum over batch elements) */
  int64_t head_dim_qk; /* Dqk, head dimension of Q and K */
  int64_t head_dim_v;  /* Dv, head dimension of V and O */

  /* The forward tensors: element 0 and strides of (b, h, row, d). */
  const void* q;       /* Q [B, Hq, L, Dqk] */
  const void* k;       /* K [B, Hkv, S, Dqk] */
  const void* v;       /* V [B, Hkv, S, Dv] */
  void* o;             /* O [B, Hq, L, Dv]; rows i >= L_b of the padded layout are written 0 */
  int64_t q_stride[4]; /* strides of Q */
  int64_t k_stride[4]; /* strides of K */
  int64_t v_stride[4]; /* strides of V */
  int64_t o_stride[4]; /* strides of O */

  /* Lengths. The arrays are always set (B entries, or B + 1 for the offsets), also when
   * every batch element has the full length. */
  const int64_t* seqlens_q;     /* L_b, the valid query rows of batch element b */
  const int64_t* seqlens_kv;    /* S_b, its valid keys */
  const int64_t* cu_seqlens_q;  /* exclusive prefix sums of L_b (B + 1): packed row offsets */
  const int64_t* cu_seqlens_kv; /* exclusive prefix sums of S_b (B + 1) */
  int32_t varlen;               /* 1 when per-batch lengths were given (padded or packed) */
  int32_t packed;               /* 1: rows packed back to back (row of b: cu_seqlens[b] + i) */

  /* Structural masks: a key j is attended by query i of batch element b iff it passes all.
   * With off = S_b - L_b for bottom-right alignment and 0 for top-left: causal needs
   * j <= i + off; the window needs i + off - left <= j <= i + off + right. */
  int32_t causal;       /* SDPA_CTS_CAUSAL_* */
  int32_t window;       /* 1: the sliding window applies */
  int32_t window_align; /* SDPA_CTS_ALIGN_* of the window's diagonal */
  int32_t mask_kind;    /* SDPA_CTS_MASK_*: a mask tensor [B, Hq, L, S] */
  int64_t window_left;  /* keys allowed before the diagonal, < 0 = unbounded */
  int64_t window_right; /* keys allowed after the diagonal, < 0 = unbounded */

  /* The mask tensor (NULL without one). */
  const void* mask;         /* element 0 of the [B, Hq, L, S] mask view */
  int64_t mask_stride[4];   /* its strides: 0 along broadcast dimensions, contiguous over the
                               others in [B, Hq, L, S] order, a size-0 dimension counted as 1 */
  uint32_t mask_broadcast;  /* SDPA_CTS_BROADCAST_* bits of the broadcast dimensions */
  int32_t scale_is_default; /* 1 when scale is the default 1 / sqrt(Dqk) */

  /* Logits: s = scale * q.k, then c * tanh(s / c) when softcap c > 0, then the masks. */
  double scale;   /* the logit scale */
  double softcap; /* c > 0: softcapping; 0 = off */

  /* Dropout: the keep-mask is docs/SEMANTICS.md's Philox4x32-10 stream. */
  double dropout_p;           /* probability of dropping, in [0, 1); 0 = no dropout */
  double keep_scale;          /* 1 / (1 - dropout_p): kept probabilities are scaled by it */
  uint64_t dropout_seed;      /* Philox key */
  uint64_t dropout_offset;    /* Philox counter offset */
  uint32_t dropout_threshold; /* keep iff the element's Philox word >= this (0 with p = 0) */
  int32_t want_lse;           /* 1: write lse */
  int32_t want_weights;       /* 1: write weights */
  int32_t reserved_flags;     /* (reserved) 0 */

  /* Extra forward outputs (NULL unless asked for). */
  float* lse;    /* LSE [B, Hq, L] f32, contiguous (never packed); every entry written, -inf
                    for rows without an attended key and padding rows i >= L_b */
  void* weights; /* attention weights [B, Hq, L, S] in dtype, contiguous, after dropout */

  /* The backward pass (ABI 2.1; NULL and 0 outside a backward call). In a backward call, o
   * and lse above hold the backend's own forward outputs for this problem: inputs, never
   * written (lse is NULL when the case does not ask for it, want_lse 0: a backend whose
   * backward reads it declares SDPA_CTS_CAP_BACKWARD_NEEDS_LSE). docs/SEMANTICS.md,
   * "Backward". */
  const void* d_o;       /* dO [B, Hq, L, Dv], in O's layout */
  void* d_q;             /* dQ [B, Hq, L, Dqk], in Q's layout; rows i >= L_b (padded) 0 */
  void* d_k;             /* dK [B, Hkv, S, Dqk], in K's layout, summed over each group */
  void* d_v;             /* dV [B, Hkv, S, Dv], in V's layout, summed over each group */
  int64_t d_o_stride[4]; /* == o_stride */
  int64_t d_q_stride[4]; /* == q_stride */
  int64_t d_k_stride[4]; /* == k_stride */
  int64_t d_v_stride[4]; /* == v_stride */

  /* (reserved) Paged KV cache: K and V rows live in pages of page_size rows; the block
   * table maps (b, logical page) to a physical page. NULL = contiguous K and V. */
  const int32_t* block_table; /* [B, max_pages] */
  int64_t block_table_stride; /* between batch elements of the block table */
  int64_t page_size;          /* rows per page */

  /* (reserved) Per-tensor scales of quantised inputs (fp8): the real value is the stored
   * one times its scale. 1 = no scaling. */
  float q_scale;
  float k_scale;
  float v_scale;
  float o_scale;

  /* (reserved) Attention sinks: one extra logit per query head that enters the softmax
   * denominator and attends no value. NULL = none. */
  const float* sink_logits; /* [Hq] */

  /* (2.1, appended) d bias, the gradient of an additive mask (case flag `dbias`), written by
   * run_backward(): NULL except in a backward call of a case that asks for it, and only for
   * a backend that declares SDPA_CTS_CAP_BIAS_GRADIENT. It has the mask's storage: the mask's
   * type, the strides mask_stride (0 along the broadcast dimensions), so each stored element
   * is the sum of dS over the broadcast dimensions (docs/SEMANTICS.md, "Backward"). */
  void* d_bias;

  /* (2.3, appended) What the case asks of the whole call, set in supports() and run() alike,
   * so that a backend declines a backward it cannot compute before its forward runs. Read
   * them only when struct_size covers them (a 2.2 host does not pass them). */
  int32_t backward;  /* 1: the case also asks for dQ, dK, dV (case flag `bwd`); run() is
                        still the forward, run_backward() follows it */
  int32_t bias_grad; /* 1: the backward also asks for d bias (case flag `dbias`) */
} sdpa_cts_params;

#ifdef __cplusplus
}
#endif

#endif /* SDPA_CTS_PARAMS_H */
