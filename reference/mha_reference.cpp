#include "reference/mha_reference.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>

namespace sdpa::reference {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Dot2 of Ogita, Rump and Oishi (2005): TwoProduct (one fma) and TwoSum on every term, the
// errors summed separately. The result is as accurate as a dot product computed in twice
// the working precision and then rounded to f64: |error| <= u |x| + gamma_n^2 sum |terms|.
// `init` (a bias) is the first term. Strides are in elements.
double dot2(double init, const double* a, std::int64_t sa, const double* b, std::int64_t sb,
            std::int64_t n) {
  double s = init, c = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    const double x = a[k * sa], y = b[k * sb];
    const double prod = x * y;
    const double prod_err = std::fma(x, y, -prod);
    const double t = s + prod;
    const double bp = t - s;
    const double sum_err = (s - (t - bp)) + (prod - bp);
    s = t;
    c += prod_err + sum_err;
  }
  return s + c;
}

std::string dim_error(const char* name, std::int64_t value, const char* rule) {
  return std::string(name) + ": " + std::to_string(value) + " " + rule;
}

bool mul_overflows(std::initializer_list<std::int64_t> factors) {
  std::int64_t n = 1;
  for (std::int64_t f : factors) {
    if (__builtin_mul_overflow(n, f, &n)) return true;
  }
  return n > std::numeric_limits<std::int64_t>::max() / 8;  // bytes of an f64 array
}

void check_size(const std::vector<double>& a, std::int64_t expected, const char* name) {
  if (static_cast<std::int64_t>(a.size()) != expected) {
    throw std::invalid_argument(std::string(name) + ": expected " + std::to_string(expected) +
                                " values, got " + std::to_string(a.size()));
  }
}

// A boolean mask must hold only 0 and 1.
void check_boolean(const std::vector<double>& a, const char* name) {
  for (std::size_t n = 0; n < a.size(); ++n) {
    if (a[n] != 0 && a[n] != 1) {
      throw std::invalid_argument(std::string(name) + ": boolean mask value " +
                                  std::to_string(a[n]) + " at index " + std::to_string(n) +
                                  " is not 0 or 1");
    }
  }
}

// PyTorch's _canonical_mask: a boolean mask becomes 0 / -inf, a float mask stays.
double canonical(MhaMaskKind kind, double x) {
  return kind == MhaMaskKind::boolean ? (x != 0 ? kNegInf : 0.0) : x;
}

void check_inputs(const MhaProblem& p, const MhaInputs& in) {
  const std::int64_t E = p.embed_dim, B = p.batch, L = p.len_q, S = p.len_kv, H = p.num_heads;
  const std::int64_t kd = key_dim(p), vd = value_dim(p);
  const bool sep = p.use_separate_proj_weight;
  check_size(in.query, L * B * E, "query");
  check_size(in.key, S * B * kd, "key");
  check_size(in.value, S * B * vd, "value");
  check_size(in.in_proj_weight, sep ? 0 : 3 * E * E, "in_proj_weight");
  check_size(in.q_proj_weight, sep ? E * E : 0, "q_proj_weight");
  check_size(in.k_proj_weight, sep ? E * kd : 0, "k_proj_weight");
  check_size(in.v_proj_weight, sep ? E * vd : 0, "v_proj_weight");
  check_size(in.in_proj_bias, p.bias ? 3 * E : 0, "in_proj_bias");
  check_size(in.bias_k, p.add_bias_kv ? E : 0, "bias_k");
  check_size(in.bias_v, p.add_bias_kv ? E : 0, "bias_v");
  check_size(in.out_proj_weight, E * E, "out_proj_weight");
  check_size(in.out_proj_bias, p.bias ? E : 0, "out_proj_bias");
  check_size(in.key_padding_mask, p.key_padding_mask != MhaMaskKind::none ? B * S : 0,
             "key_padding_mask");
  const std::int64_t attn_n = p.attn_mask == MhaMaskKind::none ? 0
                              : p.attn_mask_rank == 3          ? B * H * L * S
                                                               : L * S;
  check_size(in.attn_mask, attn_n, "attn_mask");
  if (p.key_padding_mask == MhaMaskKind::boolean) {
    check_boolean(in.key_padding_mask, "key_padding_mask");
  }
  if (p.attn_mask == MhaMaskKind::boolean) check_boolean(in.attn_mask, "attn_mask");
  // The is_causal hint must be true: PyTorch's need_weights=false path replaces the mask by
  // SDPA's is_causal, its need_weights=true path uses the mask, so a wrong hint has no
  // single answer. Allowed entries must be false / 0, masked entries true / -inf.
  if (p.is_causal) {
    const std::int64_t slices = p.attn_mask_rank == 3 ? B * H : 1;
    for (std::int64_t s = 0; s < slices; ++s)
      for (std::int64_t i = 0; i < L; ++i)
        for (std::int64_t j = 0; j < S; ++j) {
          const double x = canonical(p.attn_mask, in.attn_mask[(s * L + i) * S + j]);
          if (x != (j > i ? kNegInf : 0.0)) {
            throw std::invalid_argument(
                "attn_mask: the is_causal hint is given but attn_mask is not the top-left "
                "causal mask (first difference at slice " +
                std::to_string(s) + ", row " + std::to_string(i) + ", column " + std::to_string(j) +
                ")");
          }
        }
  }
}

}  // namespace

std::int64_t key_dim(const MhaProblem& p) { return p.kdim ? *p.kdim : p.embed_dim; }
std::int64_t value_dim(const MhaProblem& p) { return p.vdim ? *p.vdim : p.embed_dim; }
std::int64_t head_dim(const MhaProblem& p) {
  return p.num_heads > 0 ? p.embed_dim / p.num_heads : 0;
}
std::int64_t attended_len_kv(const MhaProblem& p) {
  return p.len_kv + (p.add_bias_kv ? 1 : 0) + (p.add_zero_attn ? 1 : 0);
}

std::string validate(const MhaProblem& p) {
  if (p.embed_dim <= 0) return dim_error("embed_dim", p.embed_dim, "must be > 0");
  if (p.num_heads <= 0) return dim_error("num_heads", p.num_heads, "must be > 0");
  if (p.embed_dim % p.num_heads != 0) {
    return "num_heads: embed_dim (" + std::to_string(p.embed_dim) +
           ") is not divisible by num_heads (" + std::to_string(p.num_heads) + ")";
  }
  if (p.kdim && *p.kdim < 0) return dim_error("kdim", *p.kdim, "must be >= 0");
  if (p.vdim && *p.vdim < 0) return dim_error("vdim", *p.vdim, "must be >= 0");
  if (!p.use_separate_proj_weight && (key_dim(p) != p.embed_dim || value_dim(p) != p.embed_dim)) {
    return "use_separate_proj_weight: the packed in_proj_weight needs kdim == vdim == "
           "embed_dim (kdim " +
           std::to_string(key_dim(p)) + ", vdim " + std::to_string(value_dim(p)) + ", embed_dim " +
           std::to_string(p.embed_dim) + ")";
  }
  if (p.batch < 0) return dim_error("batch", p.batch, "must be >= 0");
  if (p.len_q < 0) return dim_error("len_q", p.len_q, "must be >= 0");
  if (p.len_kv < 0) return dim_error("len_kv", p.len_kv, "must be >= 0");
  if (p.attn_mask != MhaMaskKind::none && p.attn_mask_rank != 2 && p.attn_mask_rank != 3) {
    return "attn_mask_rank: " + std::to_string(p.attn_mask_rank) +
           " is not supported (2: [L, S], 3: [B*H, L, S])";
  }
  if (p.is_causal && p.attn_mask == MhaMaskKind::none) {
    return "is_causal: the is_causal hint needs an attn_mask (PyTorch: \"Need attn_mask if "
           "specifying the is_causal hint\")";
  }
  if (!std::isfinite(p.dropout_p) || p.dropout_p < 0 || p.dropout_p >= 1) {
    return "dropout_p: must be in [0, 1)";
  }
  const std::int64_t E = p.embed_dim, kd = key_dim(p), vd = value_dim(p);
  if (mul_overflows({p.len_q, p.batch, E})) return "query: element count overflows int64";
  if (mul_overflows({p.len_kv, p.batch, kd})) return "key: element count overflows int64";
  if (mul_overflows({p.len_kv, p.batch, vd})) return "value: element count overflows int64";
  if (mul_overflows({3, E, E})) return "in_proj_weight: element count overflows int64";
  if (mul_overflows({E, kd}) || mul_overflows({E, vd})) {
    return "k_proj_weight: element count overflows int64";
  }
  if (mul_overflows({p.batch, p.num_heads, p.len_q, attended_len_kv(p)})) {
    return "attn_mask: [B*H, L, S'] element count overflows int64";
  }
  if (auto r = sdpa::validate(mha_sdpa_problem(p)); !r.empty()) return "sdpa problem: " + r;
  return "";
}

Problem mha_sdpa_problem(const MhaProblem& p) {
  Problem s;
  s.batch = p.batch;
  s.heads_q = s.heads_kv = p.num_heads;
  s.len_q = p.len_q;
  s.len_kv = attended_len_kv(p);
  s.head_dim_qk = s.head_dim_v = head_dim(p);
  s.dtype = DType::f64;
  const bool kpm = p.key_padding_mask != MhaMaskKind::none;
  const bool attn = p.attn_mask != MhaMaskKind::none;
  if (kpm || attn) {
    s.mask = MaskKind::additive;
    // The merged mask varies over b with a key padding mask or a 3-D attn_mask, over h only
    // with a 3-D attn_mask, over rows only with an attn_mask; it always varies over keys.
    std::uint8_t bc = 0;
    if (!kpm && !(attn && p.attn_mask_rank == 3)) bc |= kBroadcastB;
    if (!(attn && p.attn_mask_rank == 3)) bc |= kBroadcastH;
    if (!attn) bc |= kBroadcastL;
    s.mask_broadcast = bc;
  }
  s.dropout_p = p.dropout_p;
  s.dropout_seed = p.dropout_seed;
  s.dropout_offset = p.dropout_offset;
  s.want_weights = p.need_weights;
  apply_layout(s, LayoutKind::bhsd, 0, 0);
  return s;
}

MhaResult run_mha(const MhaProblem& p, const MhaInputs& in, int threads) {
  if (auto r = validate(p); !r.empty()) throw std::invalid_argument("invalid MHA problem: " + r);
  check_inputs(p, in);
  const std::int64_t E = p.embed_dim, H = p.num_heads, D = head_dim(p), B = p.batch, L = p.len_q,
                     S = p.len_kv, Sp = attended_len_kv(p);
  const std::int64_t kd = key_dim(p), vd = value_dim(p);
  const bool sep = p.use_separate_proj_weight;
  const int nt = threads > 0 ? threads : omp_get_max_threads();

  MhaResult res;
  res.sdpa_problem = mha_sdpa_problem(p);
  const Problem& sp = res.sdpa_problem;

  // Element (t, b, 0) of a [T, B, F] input, or of [B, T, F] with batch_first.
  const auto row = [&](const std::vector<double>& x, std::int64_t T, std::int64_t F, std::int64_t t,
                       std::int64_t b) {
    return x.data() + (p.batch_first ? (b * T + t) : (t * B + b)) * F;
  };
  // Projection weight rows: feature r of q / k / v and its input width.
  const double* wq = sep ? in.q_proj_weight.data() : in.in_proj_weight.data();
  const double* wk = sep ? in.k_proj_weight.data() : in.in_proj_weight.data() + E * E;
  const double* wv = sep ? in.v_proj_weight.data() : in.in_proj_weight.data() + 2 * E * E;
  const auto bias_of = [&](std::int64_t part, std::int64_t r) {
    return p.bias ? in.in_proj_bias[static_cast<std::size_t>(part * E + r)] : 0.0;
  };

  // Q [B, H, L, D], K [B, H, S', D], V [B, H, S', D]: the projections, split into heads; row
  // S of K / V is bias_k / bias_v (add_bias_kv), the next row zero (add_zero_attn).
  std::vector<double> q(static_cast<std::size_t>(B * H * L * D));
  std::vector<double> k(static_cast<std::size_t>(B * H * Sp * D), 0.0);
  std::vector<double> v(k.size(), 0.0);
#pragma omp parallel for collapse(2) schedule(static) num_threads(nt)
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t t = 0; t < std::max(L, S); ++t)
      for (std::int64_t r = 0; r < E; ++r) {
        const std::int64_t h = r / D, d = r % D;
        if (t < L) {
          q[((b * H + h) * L + t) * D + d] =
              dot2(bias_of(0, r), wq + r * E, 1, row(in.query, L, E, t, b), 1, E);
        }
        if (t < S) {
          k[((b * H + h) * Sp + t) * D + d] =
              dot2(bias_of(1, r), wk + r * kd, 1, row(in.key, S, kd, t, b), 1, kd);
          v[((b * H + h) * Sp + t) * D + d] =
              dot2(bias_of(2, r), wv + r * vd, 1, row(in.value, S, vd, t, b), 1, vd);
        }
      }
  if (p.add_bias_kv) {
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t r = 0; r < E; ++r) {
        const std::int64_t h = r / D, d = r % D;
        k[((b * H + h) * Sp + S) * D + d] = in.bias_k[static_cast<std::size_t>(r)];
        v[((b * H + h) * Sp + S) * D + d] = in.bias_v[static_cast<std::size_t>(r)];
      }
  }

  // The merged additive mask [B, H, L, S'] (broadcast dimensions stored once): canonical
  // attn_mask (slice b*H + h for rank 3) plus canonical key_padding_mask[b], both padded
  // with 0 (attend) for the appended keys; PyTorch adds the two when both are given.
  std::vector<double> mask;
  if (sp.mask == MaskKind::additive) {
    const StridedView mv = mask_view(sp);
    std::int64_t n = 1;
    for (int d = 0; d < 4; ++d)
      if (mv.stride[d] != 0) n *= mv.shape[d];
    mask.assign(static_cast<std::size_t>(std::max<std::int64_t>(n, 1)), 0.0);
    const bool has_attn = p.attn_mask != MhaMaskKind::none;
    const bool has_kpm = p.key_padding_mask != MhaMaskKind::none;
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t i = 0; i < L; ++i)
          for (std::int64_t j = 0; j < Sp; ++j) {
            double x = 0;
            if (j < S) {
              const std::int64_t slice = p.attn_mask_rank == 3 ? b * H + h : 0;
              const double a =
                  has_attn ? canonical(p.attn_mask, in.attn_mask[(slice * L + i) * S + j]) : 0.0;
              const double kp =
                  has_kpm ? canonical(p.key_padding_mask, in.key_padding_mask[b * S + j]) : 0.0;
              x = has_attn && has_kpm ? a + kp : has_attn ? a : kp;
            }
            mask[b * mv.stride[0] + h * mv.stride[1] + i * mv.stride[2] + j * mv.stride[3]] = x;
          }
  }

  Inputs sin;
  sin.q = q.data();
  sin.k = k.data();
  sin.v = v.data();
  sin.mask = mask.empty() ? nullptr : mask.data();
  res.sdpa = run_sdpa(sp, sin, Precision::f64, threads);
  const std::vector<double>& o = res.sdpa.o;  // [B, H, L, D]

  // out_proj over the concatenated heads: out[t, b, r] = W_o[r, :] . concat_h o[b, h, t, :].
  res.out.assign(static_cast<std::size_t>(L * B * E), 0.0);
  std::vector<double> cat(static_cast<std::size_t>(B * L * E));
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t t = 0; t < L; ++t)
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t d = 0; d < D; ++d)
          cat[(b * L + t) * E + h * D + d] = o[((b * H + h) * L + t) * D + d];
#pragma omp parallel for collapse(2) schedule(static) num_threads(nt)
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t t = 0; t < L; ++t) {
      double* dst = res.out.data() + (p.batch_first ? (b * L + t) : (t * B + b)) * E;
      for (std::int64_t r = 0; r < E; ++r) {
        const double b0 = p.bias ? in.out_proj_bias[static_cast<std::size_t>(r)] : 0.0;
        dst[r] = dot2(b0, in.out_proj_weight.data() + r * E, 1, cat.data() + (b * L + t) * E, 1, E);
      }
    }

  // Weights: per head as SDPA returns them, or their mean over heads (compensated sum / H,
  // as torch.mean: sum, then one division).
  if (p.need_weights) {
    if (!p.average_attn_weights) {
      res.weights = res.sdpa.weights;
    } else {
      res.weights.assign(static_cast<std::size_t>(B * L * Sp), 0.0);
      static const double kOne = 1.0;
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t i = 0; i < L; ++i)
          for (std::int64_t j = 0; j < Sp; ++j) {
            const double* first = res.sdpa.weights.data() + (b * H * L + i) * Sp + j;
            res.weights[(b * L + i) * Sp + j] =
                dot2(0.0, first, L * Sp, &kOne, 0, H) / static_cast<double>(H);
          }
    }
  }
  return res;
}

}  // namespace sdpa::reference
