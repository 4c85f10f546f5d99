/* The attention of docs/SEMANTICS.md in plain C loops (f64 arithmetic, host memory): what
 * the minimal plugin's run() computes. Dense problems (no per-batch lengths), no dropout,
 * no window, no softcap; any strides; f32 and f64 elements; masks, causal alignments, GQA,
 * fully masked rows (O = 0, LSE = -inf) and NaN propagation as the contract says. */
#ifndef SDPA_CTS_MINIMAL_NAIVE_ATTENTION_H
#define SDPA_CTS_MINIMAL_NAIVE_ATTENTION_H

#include "sdpa_cts/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Computes O (and LSE when p->lse is set) from the pointers of `p`. Returns 0, or -1 when
 * out of memory. */
int naive_attention(const sdpa_cts_params* p);

/* Deliberate bugs, for plugins/faulty only (the judge must catch each); all 0 = correct. */
typedef struct naive_attention_bugs {
  int bottom_right_as_top_left; /* causal bottom-right computed as top-left */
  int64_t drop_partial_block;   /* > 0: keys of a last partial block of this size ignored */
  int gqa_tiled;                /* kv head h % Hkv (ONNX's tile) instead of h / group */
} naive_attention_bugs;
int naive_attention_with_bugs(const sdpa_cts_params* p, const naive_attention_bugs* bugs);

/* The backward (ABI 2.1, docs/SEMANTICS.md "Backward"): dQ, dK, dV into p->d_q, d_k, d_v for
 * dO in p->d_o, with O from p->o (the forward's output), and d bias into p->d_bias when it is
 * not NULL (the mask's storage: dS summed over its broadcast dimensions); f64 sums. Returns
 * 0, or -1 when out of memory. */
int naive_attention_backward(const sdpa_cts_params* p);

#ifdef __cplusplus
}
#endif

#endif
