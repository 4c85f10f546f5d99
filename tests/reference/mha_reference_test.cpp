// The MHA reference against an independent naive computation written here with plain loops,
// step by step as torch.nn.functional.multi_head_attention_forward does it: project in the
// [L, B, E] layout, append bias_k / bias_v, split into B*H heads (slice b*H + h), append the
// zero key, canonicalise and pad the masks, add them, softmax (fully masked rows -> 0, the
// SEMANTICS.md rule), dropout with the SDPA keep-mask, weighted sum, out_proj.
#include "reference/mha_reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/philox.hpp"

namespace sdpa::reference {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Deterministic test data (splitmix64), uniform in [-1, 1).
struct Rng {
  std::uint64_t s;
  double next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
  }
  std::vector<double> fill(std::int64_t n, double scale = 1.0) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (auto& x : v) x = scale * next();
    return v;
  }
  // 0/1 values, 1 with probability about `p_true`.
  std::vector<double> bools(std::int64_t n, double p_true) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (auto& x : v) x = (next() + 1) / 2 < p_true ? 1.0 : 0.0;
    return v;
  }
};

std::int64_t kdim_of(const MhaProblem& p) { return p.kdim ? *p.kdim : p.embed_dim; }
std::int64_t vdim_of(const MhaProblem& p) { return p.vdim ? *p.vdim : p.embed_dim; }

// Random weights and activations for p (no masks: the tests set those).
MhaInputs random_inputs(const MhaProblem& p, std::uint64_t seed) {
  Rng g{seed};
  const std::int64_t E = p.embed_dim, B = p.batch, L = p.len_q, S = p.len_kv;
  const std::int64_t kd = kdim_of(p), vd = vdim_of(p);
  MhaInputs in;
  in.query = g.fill(L * B * E);
  in.key = g.fill(S * B * kd);
  in.value = g.fill(S * B * vd);
  if (p.use_separate_proj_weight) {
    in.q_proj_weight = g.fill(E * E, 0.6);
    in.k_proj_weight = g.fill(E * kd, 0.6);
    in.v_proj_weight = g.fill(E * vd, 0.6);
  } else {
    in.in_proj_weight = g.fill(3 * E * E, 0.6);
  }
  if (p.bias) {
    in.in_proj_bias = g.fill(3 * E, 0.5);
    in.out_proj_bias = g.fill(E, 0.5);
  }
  if (p.add_bias_kv) {
    in.bias_k = g.fill(E);
    in.bias_v = g.fill(E);
  }
  in.out_proj_weight = g.fill(E * E, 0.6);
  return in;
}

struct Naive {
  std::vector<double> out;      // [L, B, E] or [B, L, E]
  std::vector<double> weights;  // [B, H, L, S'] per head, after dropout
  std::vector<double> attn;     // [B, H, L, D] before out_proj
  std::int64_t s_total = 0;     // S'
};

Naive naive_mha(const MhaProblem& p, const MhaInputs& in) {
  const std::int64_t E = p.embed_dim, H = p.num_heads, D = E / H, B = p.batch, L = p.len_q,
                     S = p.len_kv, kd = kdim_of(p), vd = vdim_of(p);
  const bool packed = !p.use_separate_proj_weight;
  auto x_at = [&](const std::vector<double>& x, std::int64_t T, std::int64_t F, std::int64_t t,
                  std::int64_t b, std::int64_t f) {
    return p.batch_first ? x[(b * T + t) * F + f] : x[(t * B + b) * F + f];
  };
  auto linear = [&](const std::vector<double>& x, std::int64_t T, std::int64_t F,
                    std::function<double(std::int64_t, std::int64_t)> w, std::int64_t bias_off) {
    std::vector<double> y(static_cast<std::size_t>(T * B * E));  // [T, B, E]
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t r = 0; r < E; ++r) {
          double acc = p.bias ? in.in_proj_bias[bias_off + r] : 0.0;
          for (std::int64_t c = 0; c < F; ++c) acc += w(r, c) * x_at(x, T, F, t, b, c);
          y[(t * B + b) * E + r] = acc;
        }
    return y;
  };
  auto wq = [&](std::int64_t r, std::int64_t c) {
    return packed ? in.in_proj_weight[r * E + c] : in.q_proj_weight[r * E + c];
  };
  auto wk = [&](std::int64_t r, std::int64_t c) {
    return packed ? in.in_proj_weight[(E + r) * E + c] : in.k_proj_weight[r * kd + c];
  };
  auto wv = [&](std::int64_t r, std::int64_t c) {
    return packed ? in.in_proj_weight[(2 * E + r) * E + c] : in.v_proj_weight[r * vd + c];
  };
  std::vector<double> q = linear(in.query, L, E, wq, 0);
  std::vector<double> k = linear(in.key, S, kd, wk, E);
  std::vector<double> v = linear(in.value, S, vd, wv, 2 * E);
  std::int64_t Sc = S;  // current source length

  // Canonical float masks: attn [A, L, Sc] (A = 1 or B*H), kpm [B, Sc].
  const std::int64_t A = p.attn_mask_rank == 3 ? B * H : 1;
  std::vector<std::vector<double>> attn_mask;  // [A * L][Sc]
  std::vector<std::vector<double>> kpm;        // [B][Sc]
  if (p.attn_mask != MhaMaskKind::none) {
    for (std::int64_t a = 0; a < A; ++a)
      for (std::int64_t i = 0; i < L; ++i) {
        std::vector<double> rowv;
        for (std::int64_t j = 0; j < S; ++j) {
          const double x = in.attn_mask[(a * L + i) * S + j];
          rowv.push_back(p.attn_mask == MhaMaskKind::boolean ? (x == 1 ? -kInf : 0.0) : x);
        }
        attn_mask.push_back(rowv);
      }
  }
  if (p.key_padding_mask != MhaMaskKind::none) {
    for (std::int64_t b = 0; b < B; ++b) {
      std::vector<double> rowv;
      for (std::int64_t j = 0; j < S; ++j) {
        const double x = in.key_padding_mask[b * S + j];
        rowv.push_back(p.key_padding_mask == MhaMaskKind::boolean ? (x == 1 ? -kInf : 0.0) : x);
      }
      kpm.push_back(rowv);
    }
  }
  auto pad_masks = [&] {
    for (auto& r : attn_mask) r.push_back(0.0);
    for (auto& r : kpm) r.push_back(0.0);
  };

  // add_bias_kv: k = cat([k, bias_k.repeat(1, B, 1)]) along the sequence.
  if (p.add_bias_kv) {
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t r = 0; r < E; ++r) {
        k.push_back(in.bias_k[r]);
        v.push_back(in.bias_v[r]);
      }
    ++Sc;
    pad_masks();
  }
  // Split heads: [T, B, E] -> [B*H][T][D], slice bh = b*H + h.
  auto heads = [&](const std::vector<double>& x, std::int64_t T) {
    std::vector<std::vector<std::vector<double>>> y(
        static_cast<std::size_t>(B * H),
        std::vector<std::vector<double>>(static_cast<std::size_t>(T),
                                         std::vector<double>(static_cast<std::size_t>(D))));
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t h = 0; h < H; ++h)
          for (std::int64_t d = 0; d < D; ++d) y[b * H + h][t][d] = x[(t * B + b) * E + h * D + d];
    return y;
  };
  auto qh = heads(q, L), kh = heads(k, Sc), vh = heads(v, Sc);
  if (p.add_zero_attn) {
    for (auto& s : kh) s.push_back(std::vector<double>(static_cast<std::size_t>(D), 0.0));
    for (auto& s : vh) s.push_back(std::vector<double>(static_cast<std::size_t>(D), 0.0));
    ++Sc;
    pad_masks();
  }

  Naive n;
  n.s_total = Sc;
  n.weights.assign(static_cast<std::size_t>(B * H * L * Sc), 0.0);
  n.attn.assign(static_cast<std::size_t>(B * H * L * D), 0.0);
  const std::uint32_t thr = dropout_threshold(p.dropout_p);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h) {
      const std::int64_t bh = b * H + h;
      for (std::int64_t i = 0; i < L; ++i) {
        std::vector<double> s(static_cast<std::size_t>(Sc));
        double m = -kInf;
        for (std::int64_t j = 0; j < Sc; ++j) {
          double dot = 0;
          for (std::int64_t d = 0; d < D; ++d) dot += qh[bh][i][d] * kh[bh][j][d];
          s[j] = dot / std::sqrt(static_cast<double>(D));
          if (!attn_mask.empty()) s[j] += attn_mask[(A == 1 ? 0 : bh) * L + i][j];
          if (!kpm.empty()) s[j] += kpm[b][j];
          m = std::max(m, s[j]);
        }
        if (m == -kInf) continue;  // fully masked: weights and output stay 0
        double z = 0;
        for (std::int64_t j = 0; j < Sc; ++j) z += std::exp(s[j] - m);
        for (std::int64_t j = 0; j < Sc; ++j) {
          double w = std::exp(s[j] - m) / z;
          if (p.dropout_p > 0) {
            const bool keep =
                dropout_keep(p.dropout_seed, p.dropout_offset, thr, b, h, i, j, H, L, Sc);
            w = keep ? w / (1 - p.dropout_p) : 0.0;
          }
          n.weights[((b * H + h) * L + i) * Sc + j] = w;
          for (std::int64_t d = 0; d < D; ++d)
            n.attn[((b * H + h) * L + i) * D + d] += w * vh[bh][j][d];
        }
      }
    }
  // out_proj on the concatenated heads.
  n.out.assign(static_cast<std::size_t>(L * B * E), 0.0);
  for (std::int64_t t = 0; t < L; ++t)
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t r = 0; r < E; ++r) {
        double acc = p.bias ? in.out_proj_bias[r] : 0.0;
        for (std::int64_t c = 0; c < E; ++c)
          acc += in.out_proj_weight[r * E + c] * n.attn[((b * H + c / D) * L + t) * D + c % D];
        n.out[(p.batch_first ? b * L + t : t * B + b) * E + r] = acc;
      }
  return n;
}

// Head average of per-head weights [B, H, L, S'] -> [B, L, S'].
std::vector<double> head_mean(const std::vector<double>& w, std::int64_t B, std::int64_t H,
                              std::int64_t L, std::int64_t S) {
  std::vector<double> m(static_cast<std::size_t>(B * L * S), 0.0);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t x = 0; x < L * S; ++x) m[b * L * S + x] += w[(b * H + h) * L * S + x] / H;
  return m;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want,
                  const std::string& what, double tol = 1e-12) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (std::size_t x = 0; x < got.size(); ++x) {
    const bool ok = std::abs(got[x] - want[x]) <= tol * (1 + std::abs(want[x]));
    if (!ok && bad++ < 5) {
      ADD_FAILURE() << what << "[" << x << "]: got " << got[x] << ", want " << want[x];
    }
  }
  EXPECT_EQ(bad, 0) << what << ": elements outside tolerance";
}

// Runs the reference and the naive computation and compares out, the SDPA output before
// out_proj and the weights (averaged or per head, as the problem asks).
void check_against_naive(const MhaProblem& p, const MhaInputs& in) {
  ASSERT_EQ(validate(p), "");
  const MhaResult r = run_mha(p, in);
  const Naive n = naive_mha(p, in);
  const std::int64_t H = p.num_heads;
  ASSERT_EQ(attended_len_kv(p), n.s_total);
  expect_close(r.out, n.out, "out");
  expect_close(r.sdpa.o, n.attn, "attention output before out_proj");
  if (!p.need_weights) {
    EXPECT_TRUE(r.weights.empty());
  } else if (p.average_attn_weights) {
    expect_close(r.weights, head_mean(n.weights, p.batch, H, p.len_q, n.s_total), "mean weights");
  } else {
    expect_close(r.weights, n.weights, "per-head weights");
  }
}

MhaProblem base_problem() {
  MhaProblem p;
  p.embed_dim = 12;
  p.num_heads = 3;
  p.batch = 2;
  p.len_q = 4;
  p.len_kv = 6;
  return p;
}

TEST(MhaReference, PackedProjectionWithBiases) {
  MhaProblem p = base_problem();
  check_against_naive(p, random_inputs(p, 1));
}

TEST(MhaReference, PackedProjectionWithoutBiases) {
  MhaProblem p = base_problem();
  p.bias = false;
  check_against_naive(p, random_inputs(p, 2));
}

TEST(MhaReference, SeparateProjectionsWithKdimVdim) {
  MhaProblem p = base_problem();
  p.kdim = 5;
  p.vdim = 7;
  p.use_separate_proj_weight = true;
  check_against_naive(p, random_inputs(p, 3));
  p.bias = false;
  check_against_naive(p, random_inputs(p, 4));
}

// The packed weight split into q | k | v gives bit-identical results through the separate path.
TEST(MhaReference, PackedEqualsSeparateWithSameWeights) {
  MhaProblem p = base_problem();
  const MhaInputs packed = random_inputs(p, 5);
  MhaProblem ps = p;
  ps.use_separate_proj_weight = true;
  MhaInputs sep = packed;
  const std::int64_t E = p.embed_dim;
  const auto part = [&](std::int64_t k) {
    return std::vector<double>(packed.in_proj_weight.begin() + k * E * E,
                               packed.in_proj_weight.begin() + (k + 1) * E * E);
  };
  sep.in_proj_weight.clear();
  sep.q_proj_weight = part(0);
  sep.k_proj_weight = part(1);
  sep.v_proj_weight = part(2);
  const MhaResult a = run_mha(p, packed), b = run_mha(ps, sep);
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.weights, b.weights);
  // And a different key weight does change the result (the k block is really used).
  sep.k_proj_weight[3] += 0.25;
  EXPECT_NE(run_mha(ps, sep).out, a.out);
}

TEST(MhaReference, AddBiasKv) {
  MhaProblem p = base_problem();
  p.add_bias_kv = true;
  check_against_naive(p, random_inputs(p, 6));
  EXPECT_EQ(attended_len_kv(p), p.len_kv + 1);
}

TEST(MhaReference, AddZeroAttn) {
  MhaProblem p = base_problem();
  p.add_zero_attn = true;
  check_against_naive(p, random_inputs(p, 7));
  EXPECT_EQ(attended_len_kv(p), p.len_kv + 1);
}

TEST(MhaReference, AddBiasKvAndZeroAttnWithMasks) {
  MhaProblem p = base_problem();
  p.add_bias_kv = true;
  p.add_zero_attn = true;
  p.need_weights = true;
  p.average_attn_weights = false;
  p.key_padding_mask = MhaMaskKind::boolean;
  p.attn_mask = MhaMaskKind::floating;
  MhaInputs in = random_inputs(p, 8);
  Rng g{80};
  in.key_padding_mask = g.bools(p.batch * p.len_kv, 0.3);
  in.attn_mask = g.fill(p.len_q * p.len_kv, 2.0);
  check_against_naive(p, in);
  // The two appended keys are never masked: their padded mask columns are 0 (attend).
  const MhaResult r = run_mha(p, in);
  const std::int64_t Sp = attended_len_kv(p);
  for (std::int64_t bhi = 0; bhi < p.batch * p.num_heads * p.len_q; ++bhi) {
    EXPECT_GT(r.weights[bhi * Sp + Sp - 2], 0.0);
    EXPECT_GT(r.weights[bhi * Sp + Sp - 1], 0.0);
  }
}

TEST(MhaReference, KeyPaddingMaskBool) {
  MhaProblem p = base_problem();
  p.key_padding_mask = MhaMaskKind::boolean;
  MhaInputs in = random_inputs(p, 9);
  in.key_padding_mask = Rng{90}.bools(p.batch * p.len_kv, 0.4);
  check_against_naive(p, in);
}

TEST(MhaReference, KeyPaddingMaskFloat) {
  MhaProblem p = base_problem();
  p.key_padding_mask = MhaMaskKind::floating;
  MhaInputs in = random_inputs(p, 10);
  in.key_padding_mask = Rng{100}.fill(p.batch * p.len_kv, 3.0);
  in.key_padding_mask[1] = -kInf;
  in.key_padding_mask[p.len_kv + 2] = -kInf;
  check_against_naive(p, in);
  const MhaResult r = run_mha(p, in);
  for (std::int64_t i = 0; i < p.len_q; ++i) {
    EXPECT_EQ(r.weights[(0 * p.len_q + i) * p.len_kv + 1], 0.0);
    EXPECT_EQ(r.weights[(1 * p.len_q + i) * p.len_kv + 2], 0.0);
  }
}

TEST(MhaReference, AttnMaskBool2D) {
  MhaProblem p = base_problem();
  p.attn_mask = MhaMaskKind::boolean;
  MhaInputs in = random_inputs(p, 11);
  in.attn_mask = Rng{110}.bools(p.len_q * p.len_kv, 0.4);
  check_against_naive(p, in);
}

TEST(MhaReference, AttnMaskFloat2D) {
  MhaProblem p = base_problem();
  p.attn_mask = MhaMaskKind::floating;
  MhaInputs in = random_inputs(p, 12);
  in.attn_mask = Rng{120}.fill(p.len_q * p.len_kv, 3.0);
  in.attn_mask[3] = -kInf;
  check_against_naive(p, in);
}

TEST(MhaReference, AttnMaskBool3D) {
  MhaProblem p = base_problem();
  p.attn_mask = MhaMaskKind::boolean;
  p.attn_mask_rank = 3;
  p.average_attn_weights = false;
  MhaInputs in = random_inputs(p, 13);
  in.attn_mask = Rng{130}.bools(p.batch * p.num_heads * p.len_q * p.len_kv, 0.4);
  check_against_naive(p, in);
  // Slice b*H + h belongs to (b, h): a masked entry gives weight 0 at exactly that place.
  const MhaResult r = run_mha(p, in);
  for (std::size_t x = 0; x < in.attn_mask.size(); ++x) {
    if (in.attn_mask[x] == 1) {
      EXPECT_EQ(r.weights[x], 0.0) << x;
    }
  }
}

TEST(MhaReference, AttnMaskFloat3D) {
  MhaProblem p = base_problem();
  p.attn_mask = MhaMaskKind::floating;
  p.attn_mask_rank = 3;
  p.average_attn_weights = false;
  MhaInputs in = random_inputs(p, 14);
  in.attn_mask = Rng{140}.fill(p.batch * p.num_heads * p.len_q * p.len_kv, 3.0);
  check_against_naive(p, in);
}

// Both masks together are added (bool -> 0 / -inf first), also with mixed kinds.
TEST(MhaReference, KeyPaddingAndAttnMaskMerged) {
  for (MhaMaskKind kk : {MhaMaskKind::boolean, MhaMaskKind::floating})
    for (MhaMaskKind ak : {MhaMaskKind::boolean, MhaMaskKind::floating})
      for (int rank : {2, 3}) {
        SCOPED_TRACE(testing::Message()
                     << "kpm " << int(kk) << " attn " << int(ak) << " rank " << rank);
        MhaProblem p = base_problem();
        p.key_padding_mask = kk;
        p.attn_mask = ak;
        p.attn_mask_rank = rank;
        p.average_attn_weights = false;
        MhaInputs in = random_inputs(p, 15);
        Rng g{150};
        const std::int64_t na = (rank == 3 ? p.batch * p.num_heads : 1) * p.len_q * p.len_kv;
        in.key_padding_mask = kk == MhaMaskKind::boolean ? g.bools(p.batch * p.len_kv, 0.3)
                                                         : g.fill(p.batch * p.len_kv, 2.0);
        in.attn_mask = ak == MhaMaskKind::boolean ? g.bools(na, 0.3) : g.fill(na, 2.0);
        check_against_naive(p, in);
      }
}

// MHA bool masks: true = IGNORE / NOT allowed, the inverse of SDPA's bool mask.
TEST(MhaReference, BoolMasksTrueMeansMasked) {
  MhaProblem p = base_problem();
  p.key_padding_mask = MhaMaskKind::boolean;
  p.average_attn_weights = false;
  MhaInputs in = random_inputs(p, 16);
  in.key_padding_mask.assign(static_cast<std::size_t>(p.batch * p.len_kv), 0.0);
  in.key_padding_mask[1] = 1;             // batch 0 ignores key 1
  in.key_padding_mask[p.len_kv + 4] = 1;  // batch 1 ignores key 4
  MhaResult r = run_mha(p, in);
  const std::int64_t S = p.len_kv;
  for (std::int64_t b = 0; b < p.batch; ++b)
    for (std::int64_t h = 0; h < p.num_heads; ++h)
      for (std::int64_t i = 0; i < p.len_q; ++i)
        for (std::int64_t j = 0; j < S; ++j) {
          const double w = r.weights[((b * p.num_heads + h) * p.len_q + i) * S + j];
          if (in.key_padding_mask[b * S + j] == 1) {
            EXPECT_EQ(w, 0.0) << b << " " << h << " " << i << " " << j;
          } else {
            EXPECT_GT(w, 0.0) << b << " " << h << " " << i << " " << j;
          }
        }
  // Same for attn_mask: entry (i, j) true forbids key j for query i.
  MhaProblem pa = base_problem();
  pa.attn_mask = MhaMaskKind::boolean;
  MhaInputs ia = random_inputs(pa, 17);
  ia.attn_mask.assign(static_cast<std::size_t>(pa.len_q * pa.len_kv), 0.0);
  ia.attn_mask[2 * pa.len_kv + 3] = 1;
  r = run_mha(pa, ia);
  for (std::int64_t b = 0; b < pa.batch; ++b)
    for (std::int64_t i = 0; i < pa.len_q; ++i)
      for (std::int64_t j = 0; j < pa.len_kv; ++j) {
        const double w = r.weights[(b * pa.len_q + i) * pa.len_kv + j];
        if (i == 2 && j == 3) {
          EXPECT_EQ(w, 0.0);
        } else {
          EXPECT_GT(w, 0.0);
        }
      }
}

TEST(MhaReference, NeedWeightsAveragedAndPerHead) {
  MhaProblem p = base_problem();
  p.attn_mask = MhaMaskKind::boolean;
  MhaInputs in = random_inputs(p, 18);
  in.attn_mask = Rng{180}.bools(p.len_q * p.len_kv, 0.3);
  p.average_attn_weights = true;
  check_against_naive(p, in);
  const MhaResult avg = run_mha(p, in);
  EXPECT_EQ(avg.weights.size(), static_cast<std::size_t>(p.batch * p.len_q * p.len_kv));
  p.average_attn_weights = false;
  check_against_naive(p, in);
  const MhaResult per = run_mha(p, in);
  EXPECT_EQ(per.weights.size(),
            static_cast<std::size_t>(p.batch * p.num_heads * p.len_q * p.len_kv));
  expect_close(avg.weights, head_mean(per.weights, p.batch, p.num_heads, p.len_q, p.len_kv),
               "average of per-head weights", 1e-15);
  // Every row of weights sums to 1 (no dropout, no fully masked row here).
  for (std::int64_t r = 0; r < p.batch * p.len_q; ++r) {
    double s = 0;
    for (std::int64_t j = 0; j < p.len_kv; ++j) s += avg.weights[r * p.len_kv + j];
    if (s != 0) {
      EXPECT_NEAR(s, 1.0, 1e-14) << r;
    }
  }
  // need_weights = false: no weights, the same output bits.
  p.need_weights = false;
  check_against_naive(p, in);
  const MhaResult none = run_mha(p, in);
  EXPECT_TRUE(none.weights.empty());
  EXPECT_EQ(none.out, avg.out);
}

TEST(MhaReference, BatchFirstEqualsTransposedInput) {
  MhaProblem p = base_problem();
  p.kdim = 5;
  p.vdim = 3;
  p.use_separate_proj_weight = true;
  p.key_padding_mask = MhaMaskKind::boolean;
  p.average_attn_weights = false;
  MhaInputs in = random_inputs(p, 19);
  in.key_padding_mask = Rng{190}.bools(p.batch * p.len_kv, 0.3);
  const std::int64_t B = p.batch;
  // [T, B, F] -> [B, T, F]
  auto transpose = [&](const std::vector<double>& x, std::int64_t T, std::int64_t F) {
    std::vector<double> y(x.size());
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t f = 0; f < F; ++f) y[(b * T + t) * F + f] = x[(t * B + b) * F + f];
    return y;
  };
  MhaProblem pb = p;
  pb.batch_first = true;
  MhaInputs ib = in;
  ib.query = transpose(in.query, p.len_q, p.embed_dim);
  ib.key = transpose(in.key, p.len_kv, 5);
  ib.value = transpose(in.value, p.len_kv, 3);
  const MhaResult a = run_mha(p, in), b = run_mha(pb, ib);
  EXPECT_EQ(transpose(a.out, p.len_q, p.embed_dim), b.out);
  EXPECT_EQ(a.weights, b.weights);
  check_against_naive(pb, ib);
}

std::vector<double> causal_mask(std::int64_t L, std::int64_t S, bool boolean) {
  std::vector<double> m(static_cast<std::size_t>(L * S));
  for (std::int64_t i = 0; i < L; ++i)
    for (std::int64_t j = 0; j < S; ++j) m[i * S + j] = j > i ? (boolean ? 1.0 : -kInf) : 0.0;
  return m;
}

// is_causal is only a hint: with the causal mask it changes nothing.
TEST(MhaReference, IsCausalHintWithCausalMask) {
  for (bool boolean : {true, false}) {
    MhaProblem p = base_problem();  // L = 4 < S = 6: top-left, the last keys unseen
    p.attn_mask = boolean ? MhaMaskKind::boolean : MhaMaskKind::floating;
    p.average_attn_weights = false;
    MhaInputs in = random_inputs(p, 20);
    in.attn_mask = causal_mask(p.len_q, p.len_kv, boolean);
    p.is_causal = true;
    check_against_naive(p, in);
    const MhaResult hinted = run_mha(p, in);
    p.is_causal = false;
    const MhaResult plain = run_mha(p, in);
    EXPECT_EQ(hinted.out, plain.out);
    EXPECT_EQ(hinted.weights, plain.weights);
    for (std::int64_t bhi = 0; bhi < p.batch * p.num_heads * p.len_q; ++bhi) {
      const std::int64_t i = bhi % p.len_q;
      for (std::int64_t j = i + 1; j < p.len_kv; ++j)
        EXPECT_EQ(hinted.weights[bhi * p.len_kv + j], 0.0);
    }
  }
}

TEST(MhaReference, IsCausalHintRequiresAMaskAndAWrongHintIsRefused) {
  MhaProblem p = base_problem();
  p.is_causal = true;
  EXPECT_EQ(validate(p).rfind("is_causal:", 0), 0u) << validate(p);
  p.attn_mask = MhaMaskKind::boolean;
  EXPECT_EQ(validate(p), "");
  MhaInputs in = random_inputs(p, 21);
  in.attn_mask = causal_mask(p.len_q, p.len_kv, true);
  EXPECT_NO_THROW(run_mha(p, in));
  in.attn_mask[0 * p.len_kv + 1] = 0;  // row 0 may now see key 1: not causal
  try {
    run_mha(p, in);
    ADD_FAILURE() << "a wrong is_causal hint was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("attn_mask:", 0), 0u) << e.what();
  }
  // A float "causal" mask with a non-zero allowed entry is not the causal mask either.
  p.attn_mask = MhaMaskKind::floating;
  in.attn_mask = causal_mask(p.len_q, p.len_kv, false);
  EXPECT_NO_THROW(run_mha(p, in));
  in.attn_mask[1 * p.len_kv + 0] = -0.5;
  EXPECT_THROW(run_mha(p, in), std::invalid_argument);
}

// SEMANTICS.md: a row with no attended key gives 0 (PyTorch MHA's need_weights path gives
// NaN); the MHA output of such a row is then out_proj's bias.
TEST(MhaReference, FullyMaskedRowsGiveZero) {
  MhaProblem p = base_problem();
  p.key_padding_mask = MhaMaskKind::boolean;
  p.attn_mask = MhaMaskKind::boolean;
  p.average_attn_weights = false;
  MhaInputs in = random_inputs(p, 22);
  const std::int64_t B = p.batch, H = p.num_heads, L = p.len_q, S = p.len_kv, E = p.embed_dim;
  in.key_padding_mask.assign(static_cast<std::size_t>(B * S), 0.0);
  for (std::int64_t j = 0; j < S; ++j) in.key_padding_mask[1 * S + j] = 1;  // batch 1: all keys
  in.attn_mask.assign(static_cast<std::size_t>(L * S), 0.0);
  for (std::int64_t j = 0; j < S; ++j) in.attn_mask[2 * S + j] = 1;  // query 2: every key
  check_against_naive(p, in);
  const MhaResult r = run_mha(p, in);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t i = 0; i < L; ++i) {
      const bool dead = b == 1 || i == 2;
      for (std::int64_t h = 0; h < H; ++h) {
        for (std::int64_t j = 0; j < S; ++j) {
          const double w = r.weights[((b * H + h) * L + i) * S + j];
          EXPECT_FALSE(std::isnan(w));
          if (dead) {
            EXPECT_EQ(w, 0.0);
          }
        }
        for (std::int64_t d = 0; d < E / H; ++d) {
          const double o = r.sdpa.o[((b * H + h) * L + i) * (E / H) + d];
          if (dead) {
            EXPECT_EQ(o, 0.0);
          } else {
            EXPECT_NE(o, 0.0);
          }
        }
      }
      if (dead) {
        for (std::int64_t e = 0; e < E; ++e)
          EXPECT_EQ(r.out[(i * B + b) * E + e], in.out_proj_bias[e]);
      }
    }
  // add_zero_attn adds an always-attended key: no row is fully masked any more.
  p.add_zero_attn = true;
  check_against_naive(p, in);
  const MhaResult z = run_mha(p, in);
  for (std::int64_t bhi = 0; bhi < B * H * L; ++bhi) EXPECT_GT(z.weights[bhi * (S + 1) + S], 0.0);
}

// Dropout: weights are P / (1 - p) where the SDPA keep-mask keeps, 0 where it drops.
TEST(MhaReference, DropoutUsesTheSdpaKeepMask) {
  MhaProblem p = base_problem();
  p.add_zero_attn = true;
  p.average_attn_weights = false;
  p.dropout_seed = 0x1234567890ABCDEFull;
  p.dropout_offset = 77;
  MhaInputs in = random_inputs(p, 23);
  const MhaResult plain = run_mha(p, in);
  p.dropout_p = 0.3;
  check_against_naive(p, in);
  const MhaResult r = run_mha(p, in);
  const std::int64_t H = p.num_heads, L = p.len_q, Sp = attended_len_kv(p);
  const std::uint32_t thr = dropout_threshold(p.dropout_p);
  int kept = 0, dropped = 0;
  for (std::int64_t b = 0; b < p.batch; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < L; ++i)
        for (std::int64_t j = 0; j < Sp; ++j) {
          const std::size_t x = static_cast<std::size_t>(((b * H + h) * L + i) * Sp + j);
          if (dropout_keep(p.dropout_seed, p.dropout_offset, thr, b, h, i, j, H, L, Sp)) {
            ++kept;
            EXPECT_NEAR(r.weights[x], plain.weights[x] / (1 - p.dropout_p), 1e-15) << x;
            EXPECT_GT(r.weights[x], 0.0);
          } else {
            ++dropped;
            EXPECT_EQ(r.weights[x], 0.0) << x;
          }
        }
  EXPECT_GT(kept, 0);
  EXPECT_GT(dropped, 0);
  // Another seed gives another pattern.
  p.dropout_seed ^= 1;
  EXPECT_NE(run_mha(p, in).weights, r.weights);
}

// The kitchen sink: every option at once, against the naive computation.
TEST(MhaReference, AllOptionsTogether) {
  MhaProblem p = base_problem();
  p.embed_dim = 16;
  p.num_heads = 4;
  p.batch = 3;
  p.len_q = 5;
  p.len_kv = 7;
  p.kdim = 9;
  p.vdim = 6;
  p.use_separate_proj_weight = true;
  p.batch_first = true;
  p.add_bias_kv = true;
  p.add_zero_attn = true;
  p.key_padding_mask = MhaMaskKind::floating;
  p.attn_mask = MhaMaskKind::boolean;
  p.attn_mask_rank = 3;
  p.average_attn_weights = false;
  p.dropout_p = 0.2;
  p.dropout_seed = 99;
  MhaInputs in = random_inputs(p, 24);
  Rng g{240};
  in.key_padding_mask = g.fill(p.batch * p.len_kv, 2.0);
  in.key_padding_mask[4] = -kInf;
  in.attn_mask = g.bools(p.batch * p.num_heads * p.len_q * p.len_kv, 0.5);
  check_against_naive(p, in);
  p.average_attn_weights = true;
  check_against_naive(p, in);
}

// Empty source: only the appended keys remain.
TEST(MhaReference, EmptySource) {
  MhaProblem p = base_problem();
  p.len_kv = 0;
  check_against_naive(p, random_inputs(p, 25));
  // S = 0 alone: every row is fully masked, the output is out_proj's bias.
  const MhaInputs in0 = random_inputs(p, 25);
  const MhaResult r0 = run_mha(p, in0);
  for (std::int64_t x = 0; x < p.len_q * p.batch; ++x)
    for (std::int64_t e = 0; e < p.embed_dim; ++e)
      EXPECT_EQ(r0.out[x * p.embed_dim + e], in0.out_proj_bias[e]);
  p.add_bias_kv = true;  // the one key is bias_k: weight 1, output bias_v per head
  const MhaInputs in = random_inputs(p, 26);
  check_against_naive(p, in);
  const MhaResult r = run_mha(p, in);
  const std::int64_t D = p.embed_dim / p.num_heads;
  for (std::int64_t bh = 0; bh < p.batch * p.num_heads; ++bh)
    for (std::int64_t i = 0; i < p.len_q; ++i)
      for (std::int64_t d = 0; d < D; ++d)
        EXPECT_DOUBLE_EQ(r.sdpa.o[(bh * p.len_q + i) * D + d],
                         in.bias_v[(bh % p.num_heads) * D + d]);
  p.add_zero_attn = true;
  check_against_naive(p, random_inputs(p, 27));
}

TEST(MhaReference, EmptyTargetAndBatch) {
  MhaProblem p = base_problem();
  p.len_q = 0;
  MhaResult r = run_mha(p, random_inputs(p, 28));
  EXPECT_TRUE(r.out.empty());
  EXPECT_TRUE(r.weights.empty());
  p = base_problem();
  p.batch = 0;
  r = run_mha(p, random_inputs(p, 29));
  EXPECT_TRUE(r.out.empty());
}

TEST(MhaReference, ThreadCountDoesNotChangeBits) {
  MhaProblem p = base_problem();
  p.key_padding_mask = MhaMaskKind::boolean;
  p.dropout_p = 0.1;
  MhaInputs in = random_inputs(p, 30);
  in.key_padding_mask = Rng{300}.bools(p.batch * p.len_kv, 0.3);
  const MhaResult a = run_mha(p, in, 1), b = run_mha(p, in, 4);
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.weights, b.weights);
}

TEST(MhaReference, SdpaProblemShape) {
  MhaProblem p = base_problem();
  p.add_bias_kv = true;
  p.add_zero_attn = true;
  p.key_padding_mask = MhaMaskKind::boolean;
  p.attn_mask = MhaMaskKind::floating;
  p.dropout_p = 0.25;
  p.dropout_seed = 5;
  p.dropout_offset = 6;
  p.need_weights = false;
  const Problem s = mha_sdpa_problem(p);
  EXPECT_EQ(s.batch, p.batch);
  EXPECT_EQ(s.heads_q, p.num_heads);
  EXPECT_EQ(s.heads_kv, p.num_heads);
  EXPECT_EQ(s.len_q, p.len_q);
  EXPECT_EQ(s.len_kv, p.len_kv + 2);
  EXPECT_EQ(s.head_dim_qk, p.embed_dim / p.num_heads);
  EXPECT_EQ(s.head_dim_v, p.embed_dim / p.num_heads);
  EXPECT_EQ(s.dtype, DType::f64);
  EXPECT_EQ(s.mask, MaskKind::additive);
  EXPECT_EQ(s.causal, Causal::none);
  EXPECT_EQ(s.dropout_p, 0.25);
  EXPECT_EQ(s.dropout_seed, 5u);
  EXPECT_EQ(s.dropout_offset, 6u);
  EXPECT_FALSE(s.want_weights);
  EXPECT_FALSE(s.scale.has_value());
  EXPECT_EQ(sdpa::validate(s), "");
  p.key_padding_mask = MhaMaskKind::none;
  p.attn_mask = MhaMaskKind::none;
  EXPECT_EQ(mha_sdpa_problem(p).mask, MaskKind::none);
}

struct BadCase {
  const char* field;
  std::function<void(MhaProblem&)> mutate;
};

TEST(MhaValidate, ErrorsNameTheField) {
  EXPECT_EQ(validate(base_problem()), "");
  const BadCase cases[] = {
      {"embed_dim", [](MhaProblem& p) { p.embed_dim = 0; }},
      {"num_heads", [](MhaProblem& p) { p.num_heads = 0; }},
      {"num_heads", [](MhaProblem& p) { p.num_heads = 5; }},  // 12 % 5 != 0
      {"kdim", [](MhaProblem& p) { p.use_separate_proj_weight = true, p.kdim = -1; }},
      {"vdim", [](MhaProblem& p) { p.use_separate_proj_weight = true, p.vdim = -2; }},
      {"use_separate_proj_weight", [](MhaProblem& p) { p.kdim = 5; }},
      {"use_separate_proj_weight", [](MhaProblem& p) { p.vdim = 7; }},
      {"batch", [](MhaProblem& p) { p.batch = -1; }},
      {"len_q", [](MhaProblem& p) { p.len_q = -1; }},
      {"len_kv", [](MhaProblem& p) { p.len_kv = -1; }},
      {"attn_mask_rank",
       [](MhaProblem& p) { p.attn_mask = MhaMaskKind::boolean, p.attn_mask_rank = 4; }},
      {"is_causal", [](MhaProblem& p) { p.is_causal = true; }},
      {"dropout_p", [](MhaProblem& p) { p.dropout_p = 1.0; }},
      {"dropout_p", [](MhaProblem& p) { p.dropout_p = -0.1; }},
      {"dropout_p", [](MhaProblem& p) { p.dropout_p = std::nan(""); }},
      {"query", [](MhaProblem& p) { p.len_q = std::int64_t{1} << 40, p.batch = 1 << 30; }},
      {"attn_mask",
       [](MhaProblem& p) {
         p.num_heads = 12, p.len_q = std::int64_t{1} << 30, p.len_kv = std::int64_t{1} << 30;
       }},
  };
  for (const auto& c : cases) {
    MhaProblem p = base_problem();
    c.mutate(p);
    const std::string r = validate(p);
    EXPECT_EQ(r.rfind(std::string(c.field) + ":", 0), 0u) << "want " << c.field << ", got " << r;
    // run_mha refuses it with the same reason.
    try {
      run_mha(p, MhaInputs{});
      ADD_FAILURE() << c.field << ": run_mha accepted an invalid problem";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(r), std::string::npos) << e.what();
    }
  }
  // Allowed: separate weights with kdim == vdim == E, kdim 0, a rank ignored without mask.
  MhaProblem ok = base_problem();
  ok.use_separate_proj_weight = true;
  EXPECT_EQ(validate(ok), "");
  ok.kdim = 0;
  EXPECT_EQ(validate(ok), "");
  ok.attn_mask_rank = 7;
  EXPECT_EQ(validate(ok), "");
}

TEST(MhaValidate, InputErrorsNameTheArray) {
  MhaProblem p = base_problem();
  p.key_padding_mask = MhaMaskKind::boolean;
  p.attn_mask = MhaMaskKind::floating;
  MhaInputs good = random_inputs(p, 31);
  good.key_padding_mask.assign(static_cast<std::size_t>(p.batch * p.len_kv), 0.0);
  good.attn_mask.assign(static_cast<std::size_t>(p.len_q * p.len_kv), 0.0);
  EXPECT_NO_THROW(run_mha(p, good));
  const struct {
    const char* field;
    std::function<void(MhaInputs&)> mutate;
  } cases[] = {
      {"query", [](MhaInputs& in) { in.query.pop_back(); }},
      {"key", [](MhaInputs& in) { in.key.push_back(0); }},
      {"value", [](MhaInputs& in) { in.value.clear(); }},
      {"in_proj_weight", [](MhaInputs& in) { in.in_proj_weight.pop_back(); }},
      {"q_proj_weight", [](MhaInputs& in) { in.q_proj_weight.assign(144, 0.0); }},
      {"in_proj_bias", [](MhaInputs& in) { in.in_proj_bias.clear(); }},
      {"bias_k", [](MhaInputs& in) { in.bias_k.assign(12, 0.0); }},  // no add_bias_kv
      {"out_proj_weight", [](MhaInputs& in) { in.out_proj_weight.pop_back(); }},
      {"out_proj_bias", [](MhaInputs& in) { in.out_proj_bias.pop_back(); }},
      {"key_padding_mask", [](MhaInputs& in) { in.key_padding_mask.pop_back(); }},
      {"key_padding_mask", [](MhaInputs& in) { in.key_padding_mask[3] = 0.5; }},  // not 0/1
      {"attn_mask", [](MhaInputs& in) { in.attn_mask.push_back(0); }},
  };
  for (const auto& c : cases) {
    MhaInputs in = good;
    c.mutate(in);
    try {
      run_mha(p, in);
      ADD_FAILURE() << c.field << ": accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()).rfind(std::string(c.field) + ":", 0), 0u)
          << "want " << c.field << ", got " << e.what();
    }
  }
  // A 3-D attn_mask needs B*H*L*S values, a bool attn_mask only 0 / 1.
  p.attn_mask_rank = 3;
  EXPECT_THROW(run_mha(p, good), std::invalid_argument);
  p.attn_mask_rank = 2;
  p.attn_mask = MhaMaskKind::boolean;
  good.attn_mask[0] = 2;
  EXPECT_THROW(run_mha(p, good), std::invalid_argument);
}

}  // namespace
}  // namespace sdpa::reference
