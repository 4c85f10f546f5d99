#include "naive_attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double load(int32_t dtype, const void* base, int64_t index) {
  if (dtype == SDPA_CTS_DTYPE_F64) return ((const double*)base)[index];
  return ((const float*)base)[index];
}

static void store(int32_t dtype, void* base, int64_t index, double x) {
  if (dtype == SDPA_CTS_DTYPE_F64) {
    ((double*)base)[index] = x;
  } else {
    ((float*)base)[index] = (float)x;
  }
}

/* Element offset of (b, h, row, d) in a tensor of these strides (dense: no packing). */
static int64_t at(const int64_t stride[4], int64_t b, int64_t h, int64_t row, int64_t d) {
  return b * stride[0] + h * stride[1] + row * stride[2] + d * stride[3];
}

static int causal_allows(const sdpa_cts_params* p, int64_t i, int64_t j,
                         const naive_attention_bugs* bugs) {
  if (p->causal == SDPA_CTS_CAUSAL_TOP_LEFT) return j <= i;
  if (p->causal == SDPA_CTS_CAUSAL_BOTTOM_RIGHT) {
    return bugs->bottom_right_as_top_left ? j <= i : j <= i + (p->len_kv - p->len_q);
  }
  return 1;
}

int naive_attention(const sdpa_cts_params* p) {
  const naive_attention_bugs none = {0, 0, 0};
  return naive_attention_with_bugs(p, &none);
}

int naive_attention_with_bugs(const sdpa_cts_params* p, const naive_attention_bugs* bugs) {
  const int64_t L = p->len_q, Dqk = p->head_dim_qk, Dv = p->head_dim_v;
  const int64_t S = p->len_kv;
  const int64_t group = p->group;
  const int64_t block = bugs->drop_partial_block;
  const int64_t keys = block > 0 && S % block != 0 ? S / block * block : S;
  /* The mask's strides come with the problem (0 along broadcast dimensions). */
  const int64_t* ms = p->mask_stride;
  double* s = (double*)malloc((size_t)(S > 0 ? S : 1) * sizeof(double));
  unsigned char* attends = (unsigned char*)malloc((size_t)(S > 0 ? S : 1));
  if (!s || !attends) {
    free(s);
    free(attends);
    return -1;
  }
  for (int64_t b = 0; b < p->batch; ++b)
    for (int64_t h = 0; h < p->heads_q; ++h)
      for (int64_t i = 0; i < L; ++i) {
        const int64_t kv_head = bugs->gqa_tiled ? h % p->heads_kv : h / group;
        double m = -INFINITY;
        int nan = 0;
        for (int64_t j = 0; j < S; ++j) {
          /* Attended: allowed by the causal rule and the mask (-inf additive entries mask). */
          const int64_t mo = b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3];
          const double bias =
              p->mask_kind == SDPA_CTS_MASK_ADDITIVE ? load(p->dtype, p->mask, mo) : 0.0;
          int attended = j < keys && causal_allows(p, i, j, bugs) && bias != -INFINITY;
          if (p->mask_kind == SDPA_CTS_MASK_BOOL) {
            attended = attended && ((const unsigned char*)p->mask)[mo] != 0;
          }
          double x = -INFINITY;
          if (attended) {
            double dot = 0;
            for (int64_t e = 0; e < Dqk; ++e) {
              dot += load(p->dtype, p->q, at(p->q_stride, b, h, i, e)) *
                     load(p->dtype, p->k, at(p->k_stride, b, kv_head, j, e));
            }
            x = dot * p->scale + bias;
          }
          nan = nan || isnan(x);
          attends[j] = (unsigned char)attended;
          s[j] = x;
          if (x > m) m = x;
        }
        /* Softmax and P V; a row without an attended key gives O = 0 and LSE = -inf. A NaN
         * sum from +inf logits (inf - inf) propagates. */
        double z = 0;
        if (m > -INFINITY && !nan) {
          for (int64_t j = 0; j < S; ++j) z += (s[j] = exp(s[j] - m));
        }
        for (int64_t d = 0; d < Dv; ++d) {
          double o = 0;
          if (nan) {
            o = NAN;
          } else if (z != 0) {
            for (int64_t j = 0; j < S; ++j) {
              if (attends[j]) o += s[j] * load(p->dtype, p->v, at(p->v_stride, b, kv_head, j, d));
            }
            o /= z;
          }
          store(p->dtype, p->o, at(p->o_stride, b, h, i, d), o);
        }
        if (p->lse) {
          const int64_t row = (b * p->heads_q + h) * L + i;
          p->lse[row] = (float)(nan ? NAN : z != 0 ? m + log(z) : -INFINITY);
        }
      }
  free(s);
  free(attends);
  return 0;
}

/* One row's logits over every key; attends[j] as the forward decides it. Returns 1 when the
 * row attends some key. */
static int row_logits(const sdpa_cts_params* p, int64_t b, int64_t h, int64_t i, int64_t kv_head,
                      double* s, unsigned char* attends) {
  const naive_attention_bugs none = {0, 0, 0};
  const int64_t* ms = p->mask_stride;
  int any = 0;
  for (int64_t j = 0; j < p->len_kv; ++j) {
    const int64_t mo = b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3];
    const double bias = p->mask_kind == SDPA_CTS_MASK_ADDITIVE ? load(p->dtype, p->mask, mo) : 0.0;
    int attended = causal_allows(p, i, j, &none) && bias != -INFINITY;
    if (p->mask_kind == SDPA_CTS_MASK_BOOL) {
      attended = attended && ((const unsigned char*)p->mask)[mo] != 0;
    }
    double x = -INFINITY;
    if (attended) {
      double dot = 0;
      for (int64_t e = 0; e < p->head_dim_qk; ++e) {
        dot += load(p->dtype, p->q, at(p->q_stride, b, h, i, e)) *
               load(p->dtype, p->k, at(p->k_stride, b, kv_head, j, e));
      }
      x = dot * p->scale + bias;
    }
    attends[j] = (unsigned char)attended;
    s[j] = x;
    any = any || attended;
  }
  return any;
}

int naive_attention_backward(const sdpa_cts_params* p) {
  const int64_t L = p->len_q, S = p->len_kv, Dqk = p->head_dim_qk, Dv = p->head_dim_v;
  const size_t n_k = (size_t)(p->batch * p->heads_kv * S * Dqk);
  const size_t n_v = (size_t)(p->batch * p->heads_kv * S * Dv);
  double* s = (double*)malloc((size_t)(S > 0 ? S : 1) * sizeof(double));
  unsigned char* attends = (unsigned char*)malloc((size_t)(S > 0 ? S : 1));
  double* dq = (double*)malloc((size_t)(Dqk > 0 ? Dqk : 1) * sizeof(double));
  /* dK and dV of every key/value head, summed over its group in f64, stored once at the end. */
  double* dk = (double*)calloc(n_k > 0 ? n_k : 1, sizeof(double));
  double* dv = (double*)calloc(n_v > 0 ? n_v : 1, sizeof(double));
  /* d bias: the mask's storage, its element of (b, h, i, j) at mask_stride (0 along the
   * broadcast dimensions, which so sum); as many elements as the largest offset + 1. */
  const int64_t* ms = p->mask_stride;
  const size_t n_bias =
      p->d_bias && p->batch * p->heads_q * L * S > 0
          ? (size_t)(at(ms, p->batch - 1, p->heads_q - 1, L - 1, S - 1) + 1)
          : 1;
  double* dbias = p->d_bias ? (double*)calloc(n_bias, sizeof(double)) : NULL;
  if (!s || !attends || !dq || !dk || !dv || (p->d_bias && !dbias)) {
    free(s);
    free(attends);
    free(dq);
    free(dk);
    free(dv);
    free(dbias);
    return -1;
  }
  for (int64_t b = 0; b < p->batch; ++b)
    for (int64_t h = 0; h < p->heads_q; ++h)
      for (int64_t i = 0; i < L; ++i) {
        const int64_t kv_head = h / p->group;
        const int64_t kv = b * p->heads_kv + kv_head;
        for (int64_t e = 0; e < Dqk; ++e) dq[e] = 0;
        if (row_logits(p, b, h, i, kv_head, s, attends)) {
          double m = -INFINITY, z = 0, big_d = 0;
          for (int64_t j = 0; j < S; ++j)
            if (attends[j] && !(s[j] <= m)) m = s[j]; /* NaN propagates */
          for (int64_t j = 0; j < S; ++j) z += attends[j] ? (s[j] = exp(s[j] - m)) : 0.0;
          for (int64_t d = 0; d < Dv; ++d) {
            big_d += load(p->dtype, p->d_o, at(p->d_o_stride, b, h, i, d)) *
                     load(p->dtype, p->o, at(p->o_stride, b, h, i, d));
          }
          for (int64_t j = 0; j < S; ++j) {
            if (!attends[j]) continue;
            const double pj = s[j] / z;
            double dp = 0;
            for (int64_t d = 0; d < Dv; ++d) {
              const double g = load(p->dtype, p->d_o, at(p->d_o_stride, b, h, i, d));
              dp += g * load(p->dtype, p->v, at(p->v_stride, b, kv_head, j, d));
              dv[(kv * S + j) * Dv + d] += pj * g;
            }
            const double ds = pj * (dp - big_d);
            if (dbias) dbias[at(ms, b, h, i, j)] += ds;
            for (int64_t e = 0; e < Dqk; ++e) {
              dq[e] += ds * load(p->dtype, p->k, at(p->k_stride, b, kv_head, j, e));
              dk[(kv * S + j) * Dqk + e] += ds * load(p->dtype, p->q, at(p->q_stride, b, h, i, e));
            }
          }
        }
        for (int64_t e = 0; e < Dqk; ++e)
          store(p->dtype, p->d_q, at(p->d_q_stride, b, h, i, e), p->scale * dq[e]);
      }
  for (int64_t b = 0; b < p->batch; ++b)
    for (int64_t hk = 0; hk < p->heads_kv; ++hk)
      for (int64_t j = 0; j < S; ++j) {
        const int64_t kv = b * p->heads_kv + hk;
        for (int64_t e = 0; e < Dqk; ++e)
          store(p->dtype, p->d_k, at(p->d_k_stride, b, hk, j, e), p->scale * dk[(kv * S + j) * Dqk + e]);
        for (int64_t d = 0; d < Dv; ++d)
          store(p->dtype, p->d_v, at(p->d_v_stride, b, hk, j, d), dv[(kv * S + j) * Dv + d]);
      }
  if (dbias && p->batch * p->heads_q * L * S > 0) {
    for (size_t x = 0; x < n_bias; ++x) store(p->dtype, p->d_bias, (int64_t)x, dbias[x]);
  }
  free(dbias);
  free(s);
  free(attends);
  free(dq);
  free(dk);
  free(dv);
  return 0;
}
