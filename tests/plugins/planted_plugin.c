/* A plugin with one planted bug, for the certification tests (tests/plugins/CMakeLists.txt,
 * certify_planted.sh). Plain attention loops (f64 arithmetic) on every element type, with
 * per-batch lengths (padded layout), causal masks of both alignments, GQA, masks, any
 * strides and the LSE: what the inference profiles require. Two backends, the same code:
 *
 *   planted.control    the contract of docs/SEMANTICS.md;
 *   planted.br_padded  causal bottom-right with the offset of the padded problem, S - L,
 *                      instead of each sequence's S_b - L_b: the bug an outside plugin had,
 *                      which a profile must catch in its fixed part (docs/CERTIFICATION.md).
 *
 * Declines windows, softcap, dropout, packed rows and the weights (its capabilities), and
 * problems whose work B * Hq * L * S * max(Dqk, Dv) exceeds 2^22: judging one costs the
 * reference about a second or more, a certification runs each profile four times, and the
 * planted bug shows on small problems. Never a template: plugins/minimal is. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "sdpa_cts/plugin.h"

enum planted { PLANTED_CONTROL, PLANTED_BR_PADDED, PLANTED_COUNT };
static const enum planted kPlanted[PLANTED_COUNT] = {PLANTED_CONTROL, PLANTED_BR_PADDED};

/* f16 (5 exponent bits, 10 mantissa bits) and bf16 (8, 7) to and from double, rounding to
 * nearest even once (no detour through float, which would round twice). */
static double small_to_double(uint16_t h, int mbits, int ebits) {
  const int bias = (1 << (ebits - 1)) - 1;
  const double sign = (h >> (mbits + ebits)) & 1u ? -1.0 : 1.0;
  const int e = (h >> mbits) & ((1 << ebits) - 1);
  const int m = h & ((1 << mbits) - 1);
  if (e == (1 << ebits) - 1) return m ? NAN : sign * INFINITY;
  if (e == 0) return sign * ldexp((double)m, 1 - bias - mbits);
  return sign * ldexp((double)(m + (1 << mbits)), e - bias - mbits);
}

static uint16_t double_to_small(double x, int mbits, int ebits) {
  const int bias = (1 << (ebits - 1)) - 1;
  const uint32_t sign = signbit(x) ? 1u << (mbits + ebits) : 0u;
  const uint32_t inf = ((1u << ebits) - 1u) << mbits;
  if (isnan(x)) return (uint16_t)(sign | inf | (1u << (mbits - 1)));
  const double a = fabs(x);
  if (isinf(a)) return (uint16_t)(sign | inf);
  if (a < ldexp(1.0, 1 - bias)) { /* subnormal (2^mbits rounds up to the smallest normal) */
    return (uint16_t)(sign | (uint32_t)nearbyint(ldexp(a, bias - 1 + mbits)));
  }
  int k;
  const double f = frexp(a, &k); /* a = f 2^k, f in [0.5, 1) */
  const int e = k - 1;
  if (e > bias) return (uint16_t)(sign | inf);
  const uint32_t m = (uint32_t)nearbyint(ldexp(f, mbits + 1)); /* in [2^mbits, 2^(mbits+1)] */
  const uint32_t bits = ((uint32_t)(e + bias) << mbits) + m - (1u << mbits); /* carries */
  return (uint16_t)(sign | (bits > inf ? inf : bits));
}

/* Every f16 and bf16 value as a double, filled on first use (run() is called by one thread
 * of a worker process at a time). */
static double kF16[65536], kBF16[65536];
static int tables_filled = 0;
static void fill_tables(void) {
  if (tables_filled) return;
  for (uint32_t h = 0; h < 65536; ++h) {
    kF16[h] = small_to_double((uint16_t)h, 10, 5);
    kBF16[h] = small_to_double((uint16_t)h, 7, 8);
  }
  tables_filled = 1;
}

static double load(int32_t dtype, const void* base, int64_t index) {
  switch (dtype) {
    case SDPA_CTS_DTYPE_F64:
      return ((const double*)base)[index];
    case SDPA_CTS_DTYPE_F32:
      return ((const float*)base)[index];
    case SDPA_CTS_DTYPE_F16:
      return kF16[((const uint16_t*)base)[index]];
    default:
      return kBF16[((const uint16_t*)base)[index]];
  }
}

static void store(int32_t dtype, void* base, int64_t index, double x) {
  switch (dtype) {
    case SDPA_CTS_DTYPE_F64:
      ((double*)base)[index] = x;
      break;
    case SDPA_CTS_DTYPE_F32:
      ((float*)base)[index] = (float)x;
      break;
    case SDPA_CTS_DTYPE_F16:
      ((uint16_t*)base)[index] = double_to_small(x, 10, 5);
      break;
    default:
      ((uint16_t*)base)[index] = double_to_small(x, 7, 8);
      break;
  }
}

/* Element offset of (b, h, row, d) in a tensor of the padded layout. */
static int64_t at(const int64_t* stride, int64_t b, int64_t h, int64_t row, int64_t d) {
  return b * stride[0] + h * stride[1] + row * stride[2] + d * stride[3];
}

static int32_t planted_precision(void* state, int32_t dtype, sdpa_cts_precision* out) {
  (void)state;
  if (dtype < SDPA_CTS_DTYPE_F64 || dtype > SDPA_CTS_DTYPE_BF16) return 1;
  /* Every sum is in f64; the contract claims f32 (f64 for f64 problems), which holds. */
  out->accumulate = dtype == SDPA_CTS_DTYPE_F64 ? SDPA_CTS_DTYPE_F64 : SDPA_CTS_DTYPE_F32;
  out->p_type = out->accumulate;
  out->online_softmax = 0;
  out->key_block = 0;
  return 0;
}

static void planted_supports(void* state, const sdpa_cts_params* p, const sdpa_cts_device* d,
                             sdpa_cts_decline_fn decline, void* context) {
  (void)state;
  (void)d;
  const int64_t dim = p->head_dim_qk > p->head_dim_v ? p->head_dim_qk : p->head_dim_v;
  const int64_t work = p->batch * p->heads_q * p->len_q * p->len_kv * dim;
  if (work > (int64_t)1 << 22) {
    char why[160];
    snprintf(why, sizeof why, "B*Hq*L*S*D = %lld exceeds 2^22: a test plugin judged often",
             (long long)work);
    decline(context, why);
  }
}

/* K or V rows [0, rows) of kv head hk of batch element b as doubles, row-major [rows, dim]. */
static void gather(const sdpa_cts_params* p, const void* base, const int64_t* t, int64_t b,
                   int64_t hk, int64_t rows, int64_t dim, double* out) {
  for (int64_t j = 0; j < rows; ++j)
    for (int64_t e = 0; e < dim; ++e) out[j * dim + e] = load(p->dtype, base, at(t, b, hk, j, e));
}

static int32_t planted_run(void* state, const sdpa_cts_params* p, const sdpa_cts_device* d,
                           int32_t threads, char* error, size_t error_size) {
  const sdpa_cts_params* buf = p; /* the tensors are the params' pointers (ABI 2) */
  (void)d;
  (void)threads;
  const enum planted bug = *(const enum planted*)state;
  const int64_t L = p->len_q, S = p->len_kv, Dqk = p->head_dim_qk, Dv = p->head_dim_v;
  const int64_t group = p->heads_kv > 0 ? p->heads_q / p->heads_kv : 1;
  const size_t keys = (size_t)(S > 0 ? S : 1);
  const int64_t* ms = p->mask_stride;
  fill_tables();
  double* s = (double*)malloc(keys * sizeof(double));
  unsigned char* attends = (unsigned char*)malloc(keys);
  double* q = (double*)malloc((size_t)(Dqk > 0 ? Dqk : 1) * sizeof(double));
  double* k = (double*)malloc(keys * (size_t)(Dqk > 0 ? Dqk : 1) * sizeof(double));
  double* v = (double*)malloc(keys * (size_t)(Dv > 0 ? Dv : 1) * sizeof(double));
  if (!s || !attends || !q || !k || !v) {
    free(s);
    free(attends);
    free(q);
    free(k);
    free(v);
    snprintf(error, error_size, "out of memory");
    return 1;
  }
  for (int64_t b = 0; b < p->batch; ++b) {
    const int64_t lb = p->seqlens_q[b];
    const int64_t sb = p->seqlens_kv[b];
    /* The bottom-right offset: S_b - L_b (docs/SEMANTICS.md step 5). The planted bug takes
     * the padded problem's S - L, which is the same only when L_b = L and S_b = S. */
    const int64_t br = bug == PLANTED_BR_PADDED ? S - L : sb - lb;
    for (int64_t h = 0; h < p->heads_q; ++h) {
      const int64_t hk = h / group;
      if (h % group == 0) { /* the keys that exist (j < S_b) of this kv head */
        gather(p, buf->k, p->k_stride, b, hk, sb, Dqk, k);
        gather(p, buf->v, p->v_stride, b, hk, sb, Dv, v);
      }
      for (int64_t i = 0; i < L; ++i) {
        const int64_t row = (b * p->heads_q + h) * L + i;
        if (i >= lb) { /* padding rows: O = 0, LSE = -inf */
          for (int64_t e = 0; e < Dv; ++e) store(p->dtype, buf->o, at(p->o_stride, b, h, i, e), 0.0);
          if (buf->lse) buf->lse[row] = -INFINITY;
          continue;
        }
        for (int64_t e = 0; e < Dqk; ++e) q[e] = load(p->dtype, buf->q, at(p->q_stride, b, h, i, e));
        double m = -INFINITY;
        int nan = 0;
        for (int64_t j = 0; j < sb; ++j) {
          int attended = 1;
          if (p->causal == SDPA_CTS_CAUSAL_TOP_LEFT) attended = j <= i;
          if (p->causal == SDPA_CTS_CAUSAL_BOTTOM_RIGHT) attended = j <= i + br;
          const int64_t mo = b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3];
          double bias = 0;
          if (p->mask_kind == SDPA_CTS_MASK_ADDITIVE) {
            bias = load(p->dtype, buf->mask, mo);
            attended = attended && bias != -INFINITY;
          }
          if (p->mask_kind == SDPA_CTS_MASK_BOOL) {
            attended = attended && ((const unsigned char*)buf->mask)[mo] != 0;
          }
          double x = -INFINITY;
          if (attended) {
            double dot = 0;
            for (int64_t e = 0; e < Dqk; ++e) dot += q[e] * k[j * Dqk + e];
            x = dot * p->scale + bias;
          }
          nan = nan || isnan(x);
          attends[j] = (unsigned char)attended;
          s[j] = x;
          if (x > m) m = x;
        }
        /* Softmax and P V; a row without an attended key gives O = 0 and LSE = -inf. A NaN
         * sum from +inf logits (inf - inf) propagates. P is normalised before P V, so that the
         * sum stays a convex combination of V (no overflow for f64 values near the maximum). */
        double z = 0;
        if (m > -INFINITY && !nan) {
          for (int64_t j = 0; j < sb; ++j) z += (s[j] = exp(s[j] - m));
          for (int64_t j = 0; j < sb; ++j) s[j] /= z;
        }
        for (int64_t e = 0; e < Dv; ++e) {
          double o = 0;
          if (nan) {
            o = NAN;
          } else if (z != 0) {
            for (int64_t j = 0; j < sb; ++j) {
              if (attends[j]) o += s[j] * v[j * Dv + e];
            }
          }
          store(p->dtype, buf->o, at(p->o_stride, b, h, i, e), o);
        }
        if (buf->lse) buf->lse[row] = (float)(nan ? NAN : z != 0 ? m + log(z) : -INFINITY);
      }
    }
  }
  free(s);
  free(attends);
  free(q);
  free(k);
  free(v);
  return 0;
}

#define PLANTED_BACKEND(name, index)                                                              \
  {                                                                                               \
    sizeof(sdpa_cts_backend), name, (void*)&kPlanted[index],                                      \
        {sizeof(sdpa_cts_capabilities),                                                           \
         (1u << SDPA_CTS_DTYPE_F64) | (1u << SDPA_CTS_DTYPE_F32) | (1u << SDPA_CTS_DTYPE_F16) |   \
             (1u << SDPA_CTS_DTYPE_BF16),                                                         \
         SDPA_CTS_DEVICE_CPU,                                                                     \
         0,                                                                                       \
         1,                                                                                       \
         SDPA_CTS_CAP_DIFFERENT_V_DIM | SDPA_CTS_CAP_BOOL_MASK | SDPA_CTS_CAP_ADDITIVE_MASK |     \
             SDPA_CTS_CAP_CAUSAL_TOP_LEFT | SDPA_CTS_CAP_CAUSAL_BOTTOM_RIGHT | SDPA_CTS_CAP_GQA | \
             SDPA_CTS_CAP_PADDED_SEQLENS | SDPA_CTS_CAP_LSE | SDPA_CTS_CAP_EMPTY_PROBLEMS |       \
             SDPA_CTS_CAP_DETERMINISTIC | SDPA_CTS_CAP_BATCH_INVARIANT,                           \
         0,                                                                                       \
         SDPA_CTS_MEMORY_HOST,                                                                    \
         SDPA_CTS_PYTORCH_MATH},                                                                  \
        planted_precision, planted_supports, planted_run, NULL                                    \
  }

static const sdpa_cts_backend kBackends[PLANTED_COUNT] = {
    PLANTED_BACKEND("planted.control", PLANTED_CONTROL),
    PLANTED_BACKEND("planted.br_padded", PLANTED_BR_PADDED),
};

static const sdpa_cts_plugin kPlugin = {
    SDPA_CTS_PLUGIN_ABI_FIELDS, "sdpa-cts-planted", "1.0.0", PLANTED_COUNT, kBackends,
};

SDPA_CTS_PLUGIN_EXPORT const sdpa_cts_plugin* sdpa_cts_plugin_entry(uint32_t host_abi_major,
                                                                    uint32_t host_abi_minor) {
  (void)host_abi_minor;
  return host_abi_major == SDPA_CTS_PLUGIN_ABI_MAJOR ? &kPlugin : NULL;
}
