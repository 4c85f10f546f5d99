// Metamorphic properties of the reference on small random problems (RapidCheck): a
// transformation of the inputs that must transform the outputs in a known way. Most hold
// bit for bit, because the reference computes each (b, h) slice on its own in a fixed
// order; the key permutation only changes the order of sums and holds within a few ulps.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "reference/sdpa_reference.hpp"
#include "tests/reference/test_util.hpp"

namespace sdpa::test {
namespace {

struct Options {
  bool structural = true;      // causal and window
  bool mask_tensor = true;     // bool / additive mask with broadcast
  bool varlen = true;          // qlen / kvlen
  bool dropout = false;        // dropout (depends on b, h, i, j: not for permutations)
  std::int64_t min_group = 1;  // smallest GQA group size
};

std::int64_t in_range(std::int64_t lo, std::int64_t hi_inclusive) {
  return *rc::gen::inRange<std::int64_t>(lo, hi_inclusive + 1);
}

bool coin() { return *rc::gen::arbitrary<bool>(); }

Problem gen_problem(const Options& o) {
  const std::int64_t hkv = in_range(1, 3), g = in_range(o.min_group, 3);
  const std::int64_t B = in_range(1, 3), L = in_range(1, 9), S = in_range(1, 9);
  const DType t = *rc::gen::element(DType::f64, DType::f32, DType::f16, DType::bf16);
  Problem p = make_problem(B, hkv * g, hkv, L, S, in_range(1, 9), in_range(1, 9), t);
  if (o.structural) {
    p.causal = *rc::gen::element(Causal::none, Causal::top_left, Causal::bottom_right);
    if (coin()) {
      p.window = {true, in_range(-1, S), in_range(-1, S),
                  *rc::gen::element(Align::top_left, Align::bottom_right)};
    }
  }
  if (o.mask_tensor) {
    p.mask = *rc::gen::element(MaskKind::none, MaskKind::boolean, MaskKind::additive);
    if (p.mask != MaskKind::none) p.mask_broadcast = static_cast<std::uint8_t>(in_range(0, 15));
  }
  if (o.varlen && coin()) {
    for (std::int64_t b = 0; b < B; ++b) {
      p.seqlens_q.push_back(in_range(0, L));
      p.seqlens_kv.push_back(in_range(0, S));
    }
  }
  if (coin()) p.softcap = *rc::gen::element(0.5, 2.0, 30.0);
  if (coin()) p.scale = *rc::gen::element(0.25, -0.5, 1.0, 3.0);
  if (o.dropout && coin()) {
    p.dropout_p = *rc::gen::element(0.1, 0.5, 0.9);
    p.dropout_seed = *rc::gen::arbitrary<std::uint64_t>();
    p.dropout_offset = *rc::gen::arbitrary<std::uint32_t>();
  }
  p.want_lse = p.want_weights = true;
  return p;
}

// Random data; a broadcast mask is made consistent along its broadcast dimensions so the
// logical array says what the buffer holds.
Data gen_data(const Problem& p, bool dyadic = false) {
  Data d = zero_data(p);
  const std::uint64_t seed = *rc::gen::arbitrary<std::uint64_t>();
  fill_random(p, d, seed, dyadic);
  Rng rng(seed ^ 0x9E3779B97F4A7C15ull);
  for (std::int64_t b = 0; b < p.batch; ++b)
    for (std::int64_t h = 0; h < p.heads_q; ++h)
      for (std::int64_t i = 0; i < p.len_q; ++i)
        for (std::int64_t j = 0; j < p.len_kv; ++j) {
          if (p.mask == MaskKind::none) continue;
          const std::int64_t sb = p.mask_broadcast & kBroadcastB ? 0 : b;
          const std::int64_t sh = p.mask_broadcast & kBroadcastH ? 0 : h;
          const std::int64_t si = p.mask_broadcast & kBroadcastL ? 0 : i;
          const std::int64_t sj = p.mask_broadcast & kBroadcastS ? 0 : j;
          double& x = d.mask[mi(p, b, h, i, j)];
          if (sb != b || sh != h || si != i || sj != j) {
            x = d.mask[mi(p, sb, sh, si, sj)];
          } else if (p.mask == MaskKind::boolean) {
            x = rng.below(4) != 0;
          } else {
            x = rng.below(6) == 0 ? -kInf : round_to(p.dtype, rng.normal());
          }
        }
  return d;
}

// A random permutation of n elements.
std::vector<std::int64_t> gen_perm(std::int64_t n) {
  std::vector<std::int64_t> perm(static_cast<std::size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  Rng rng(*rc::gen::arbitrary<std::uint64_t>());
  for (std::int64_t x = n - 1; x > 0; --x) std::swap(perm[x], perm[rng.below(x + 1)]);
  return perm;
}

// Permutes one dimension of a row-major array [outer][n][inner]: out[.][x][.] = in[.][perm[x]][.].
// perm may also repeat or drop indices (a gather), e.g. to repeat KV heads.
std::vector<double> permute_dim(const std::vector<double>& a, std::int64_t outer,
                                const std::vector<std::int64_t>& perm, std::int64_t inner,
                                std::int64_t n_in = -1) {
  const auto n = static_cast<std::int64_t>(perm.size());
  if (n_in < 0) n_in = n;
  std::vector<double> out(static_cast<std::size_t>(outer * n * inner));
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t x = 0; x < n; ++x)
      for (std::int64_t t = 0; t < inner; ++t) {
        out[static_cast<std::size_t>((o * n + x) * inner + t)] =
            a[static_cast<std::size_t>((o * n_in + perm[x]) * inner + t)];
      }
  return out;
}

// The same permutation applied to every array of a result, along the batch (or head)
// dimension: `outer` leading elements, then the permuted dimension.
Result permute_result(const Problem& p, const Result& r, std::int64_t outer,
                      const std::vector<std::int64_t>& perm, std::int64_t per_row_inner) {
  // per_row_inner: rows of [.., L] below the permuted dimension (Hq * L for batch, L for heads)
  Result out;
  const std::int64_t rows = per_row_inner;
  out.o = permute_dim(r.o, outer, perm, rows * p.head_dim_v);
  out.mag_a = permute_dim(r.mag_a, outer, perm, rows * p.head_dim_v);
  out.mag_c = permute_dim(r.mag_c, outer, perm, rows * p.head_dim_v);
  out.mag_g = permute_dim(r.mag_g, outer, perm, rows * p.head_dim_v);
  out.mag_u = permute_dim(r.mag_u, outer, perm, rows * p.head_dim_v);
  out.lse = permute_dim(r.lse, outer, perm, rows);
  out.mag_exp = permute_dim(r.mag_exp, outer, perm, rows);
  out.lse_mag_c = permute_dim(r.lse_mag_c, outer, perm, rows);
  out.lse_mag_g = permute_dim(r.lse_mag_g, outer, perm, rows);
  out.weights = permute_dim(r.weights, outer, perm, rows * p.len_kv);
  return out;
}

void assert_same(const Result& a, const Result& b, const char* what) {
  if (auto d = diff_results(a, b); !d.empty()) RC_FAIL(std::string(what) + ": " + d);
}

// ---------------------------------------------------------------- permutations

RC_GTEST_PROP(Metamorphic, PermutingBatchElementsPermutesOutputs, ()) {
  const Problem p = gen_problem({});
  const Data d = gen_data(p);
  const auto perm = gen_perm(p.batch);
  Problem q = p;
  Data e = d;
  for (std::size_t x = 0; x < perm.size() && !p.seqlens_q.empty(); ++x) {
    q.seqlens_q[x] = p.seqlens_q[static_cast<std::size_t>(perm[x])];
    q.seqlens_kv[x] = p.seqlens_kv[static_cast<std::size_t>(perm[x])];
  }
  e.q = permute_dim(d.q, 1, perm, p.heads_q * p.len_q * p.head_dim_qk);
  e.k = permute_dim(d.k, 1, perm, p.heads_kv * p.len_kv * p.head_dim_qk);
  e.v = permute_dim(d.v, 1, perm, p.heads_kv * p.len_kv * p.head_dim_v);
  if (!d.mask.empty()) e.mask = permute_dim(d.mask, 1, perm, p.heads_q * p.len_q * p.len_kv);
  const Result r = run(p, d);
  assert_same(run(q, e), permute_result(p, r, 1, perm, p.heads_q * p.len_q), "batch permutation");
}

RC_GTEST_PROP(Metamorphic, PermutingHeadsWithTheirKvHeadsPermutesOutputs, ()) {
  const Problem p = gen_problem({});
  const Data d = gen_data(p);
  const std::int64_t g = p.heads_q / p.heads_kv;
  // kv head y of the new problem is old kv head sigma[y]; its query heads are the old
  // group of sigma[y], shuffled within the group.
  const auto sigma = gen_perm(p.heads_kv);
  std::vector<std::int64_t> qperm;
  for (std::int64_t y = 0; y < p.heads_kv; ++y) {
    const auto tau = gen_perm(g);
    for (std::int64_t t = 0; t < g; ++t) qperm.push_back(sigma[y] * g + tau[t]);
  }
  Data e = d;
  e.q = permute_dim(d.q, p.batch, qperm, p.len_q * p.head_dim_qk);
  e.k = permute_dim(d.k, p.batch, sigma, p.len_kv * p.head_dim_qk);
  e.v = permute_dim(d.v, p.batch, sigma, p.len_kv * p.head_dim_v);
  if (!d.mask.empty()) e.mask = permute_dim(d.mask, p.batch, qperm, p.len_q * p.len_kv);
  const Result r = run(p, d);
  assert_same(run(p, e), permute_result(p, r, p.batch, qperm, p.len_q), "head permutation");
}

RC_GTEST_PROP(Metamorphic, PermutingKeysAndValuesTogetherChangesNothing, ()) {
  // Without positional masks, keys are a set: only the order of the sums changes.
  Options o;
  o.structural = false;
  o.varlen = false;
  const Problem p = gen_problem(o);
  const Data d = gen_data(p);
  const auto perm = gen_perm(p.len_kv);
  Data e = d;
  e.k = permute_dim(d.k, p.batch * p.heads_kv, perm, p.head_dim_qk);
  e.v = permute_dim(d.v, p.batch * p.heads_kv, perm, p.head_dim_v);
  if (!d.mask.empty()) e.mask = permute_dim(d.mask, p.batch * p.heads_q * p.len_q, perm, 1);
  const Result r = run(p, d), s = run(p, e);
  const std::vector<double> w = permute_dim(r.weights, p.batch * p.heads_q * p.len_q, perm, 1);
  double worst = 0;
  for (std::size_t x = 0; x < r.o.size(); ++x) {
    const double mag = std::fabs(r.o[x]) + r.mag_a[x] + r.mag_c[x] + r.mag_g[x];
    if (r.lse[x / static_cast<std::size_t>(p.head_dim_v)] == -kInf) {
      RC_ASSERT(s.o[x] == 0.0);
      continue;
    }
    const double err = std::fabs(r.o[x] - s.o[x]);
    RC_ASSERT(err <= 8 * kU64 * mag);
    if (mag > 0) worst = std::max(worst, err / (kU64 * mag));
  }
  for (std::size_t x = 0; x < r.lse.size(); ++x) {
    if (r.lse[x] == -kInf) {
      RC_ASSERT(s.lse[x] == -kInf);
      continue;
    }
    const double mag = std::fabs(r.lse[x]) + r.lse_mag_c[x] + r.lse_mag_g[x] + 1;
    RC_ASSERT(std::fabs(r.lse[x] - s.lse[x]) <= 8 * kU64 * mag);
  }
  for (std::size_t x = 0; x < w.size(); ++x) RC_ASSERT(std::fabs(w[x] - s.weights[x]) <= 8 * kU64);
  RC_TAG(worst <= 1 ? "o differs by <= 1 u*mag" : "o differs by > 1 u*mag");
}

// ---------------------------------------------------------------- equivalent problems

RC_GTEST_PROP(Metamorphic, GqaEqualsExplicitlyRepeatedKv, ()) {
  Options o;
  o.min_group = 2;
  o.dropout = true;
  const Problem p = gen_problem(o);
  const Data d = gen_data(p);
  const std::int64_t g = p.heads_q / p.heads_kv;
  Problem q = p;
  q.heads_kv = p.heads_q;
  apply_layout(q, LayoutKind::bhsd, 0, 0);
  Data e = d;
  std::vector<std::int64_t> rep;  // new kv head h reads old kv head h / g (repeat_interleave)
  for (std::int64_t h = 0; h < p.heads_q; ++h) rep.push_back(h / g);
  e.k = permute_dim(d.k, p.batch, rep, p.len_kv * p.head_dim_qk, p.heads_kv);
  e.v = permute_dim(d.v, p.batch, rep, p.len_kv * p.head_dim_v, p.heads_kv);
  for (Precision prec : {Precision::f64, Precision::binary128}) {
    assert_same(run(q, e, prec), run(p, d, prec), "GQA vs repeated KV");
  }
}

// The structural masks of p written out as an explicit bool mask over [B, Hq, L, S].
std::vector<double> explicit_mask(const Problem& p) {
  std::vector<double> m(static_cast<std::size_t>(p.batch * p.heads_q * p.len_q * p.len_kv));
  for (std::int64_t b = 0; b < p.batch; ++b) {
    const std::int64_t br = seqlen_kv(p, b) - seqlen_q(p, b);
    for (std::int64_t h = 0; h < p.heads_q; ++h)
      for (std::int64_t i = 0; i < p.len_q; ++i)
        for (std::int64_t j = 0; j < p.len_kv; ++j) {
          bool ok = true;
          if (p.causal == Causal::top_left) ok = ok && j <= i;
          if (p.causal == Causal::bottom_right) ok = ok && j <= i + br;
          if (p.window.enabled) {
            const std::int64_t off = p.window.align == Align::bottom_right ? br : 0;
            if (p.window.left >= 0) ok = ok && j >= i + off - p.window.left;
            if (p.window.right >= 0) ok = ok && j <= i + off + p.window.right;
          }
          m[mi(p, b, h, i, j)] = ok;
        }
  }
  return m;
}

RC_GTEST_PROP(Metamorphic, CausalAndWindowEqualAnExplicitMask, ()) {
  Options o;
  o.mask_tensor = false;
  o.dropout = true;
  Problem p = gen_problem(o);
  if (p.causal == Causal::none && !p.window.enabled) {
    p.causal = *rc::gen::element(Causal::top_left, Causal::bottom_right);
  }
  const Data d = gen_data(p);
  const std::vector<double> allowed = explicit_mask(p);
  Problem q = p;
  q.causal = Causal::none;
  q.window = {};
  Data e = d;
  q.mask = MaskKind::boolean;
  e.mask = allowed;
  const Result r = run(p, d);
  assert_same(run(q, e), r, "causal/window vs bool mask");
  q.mask = MaskKind::additive;
  for (double& x : e.mask) x = x != 0 ? 0.0 : -kInf;
  assert_same(run(q, e), r, "causal/window vs -inf additive mask");
}

RC_GTEST_PROP(Metamorphic, PowerOfTwoScaleFoldedIntoQChangesNothing, ()) {
  Options o;
  o.dropout = true;
  Problem p = gen_problem(o);
  const double scale = std::ldexp(1.0, static_cast<int>(in_range(-3, 3)));
  p.scale = scale;
  const Data d = gen_data(p, /*dyadic=*/true);  // k/32: scaled by 2^-3..2^3, still exact
  Problem q = p;
  q.scale = 1.0;
  Data e = d;
  for (double& x : e.q) x *= scale;
  for (Precision prec : {Precision::f64, Precision::binary128}) {
    assert_same(run(q, e, prec), run(p, d, prec), "scale folded into Q");
  }
}

// ---------------------------------------------------------------- layouts

// Strides for the dimensions of a [n0, n1, n2, n3] tensor nested in `order` (outermost
// first), with `gap` spare elements after each level.
std::array<std::int64_t, 4> nested_strides(const std::array<std::int64_t, 4>& shape,
                                           const std::array<int, 4>& order, std::int64_t gap) {
  std::array<std::int64_t, 4> st{};
  std::int64_t acc = 1;
  for (int k = 3; k >= 0; --k) {
    st[static_cast<std::size_t>(order[k])] = acc;
    acc = acc * std::max<std::int64_t>(shape[static_cast<std::size_t>(order[k])], 1) + gap;
  }
  return st;
}

RC_GTEST_PROP(Metamorphic, StridedViewsGiveTheContiguousResultBitForBit, ()) {
  Options o;
  o.dropout = true;
  const Problem p = gen_problem(o);
  Data d = gen_data(p);
  Problem q = p;
  const int kind = static_cast<int>(in_range(0, 2));
  const std::int64_t gap = in_range(0, 3), off = in_range(0, 5);
  std::string what;
  if (kind == 0) {
    apply_layout(q, LayoutKind::bshd, gap, off);
    what = "bshd";
  } else if (kind == 1) {
    apply_layout(q, LayoutKind::bhsd, gap, off);
    what = "bhsd gapped";
  } else {
    // Every input tensor nested in its own random dimension order.
    what = "random dimension order";
    for (auto [t, shape] :
         {std::pair{&q.q, std::array<std::int64_t, 4>{p.batch, p.heads_q, p.len_q, p.head_dim_qk}},
          std::pair{&q.k,
                    std::array<std::int64_t, 4>{p.batch, p.heads_kv, p.len_kv, p.head_dim_qk}},
          std::pair{&q.v,
                    std::array<std::int64_t, 4>{p.batch, p.heads_kv, p.len_kv, p.head_dim_v}}}) {
      const auto perm = gen_perm(4);
      t->stride = nested_strides(shape, {int(perm[0]), int(perm[1]), int(perm[2]), int(perm[3])},
                                 in_range(0, 2));
      t->base_offset = in_range(0, 5);
    }
  }
  // Broadcast KV by stride 0: the data of every kv head (or batch element) is the same.
  const int bcast = static_cast<int>(in_range(0, 2));
  if (bcast > 0) {
    const bool heads = bcast == 1;
    for (auto [vec, dim] : {std::pair{&d.k, p.head_dim_qk}, std::pair{&d.v, p.head_dim_v}}) {
      for (std::int64_t b = 0; b < p.batch; ++b)
        for (std::int64_t h = 0; h < p.heads_kv; ++h)
          for (std::int64_t x = 0; x < p.len_kv * dim; ++x) {
            const std::int64_t src =
                heads ? (b * p.heads_kv) * p.len_kv * dim + x : h * p.len_kv * dim + x;
            (*vec)[static_cast<std::size_t>((b * p.heads_kv + h) * p.len_kv * dim + x)] =
                (*vec)[static_cast<std::size_t>(src)];
          }
    }
    q.k.stride[heads ? 1 : 0] = 0;
    q.v.stride[heads ? 1 : 0] = 0;
    what += heads ? " + kv heads at stride 0" : " + kv batch at stride 0";
  }
  RC_ASSERT(validate(q) == "");
  assert_same(run(q, d), run(p, d), what.c_str());
}

RC_GTEST_PROP(Metamorphic, PackedVarlenEqualsPaddedBitForBit, ()) {
  Options o;
  o.mask_tensor = false;  // a mask tensor cannot be combined with packed rows
  o.varlen = false;
  o.dropout = true;
  Problem p = gen_problem(o);
  for (std::int64_t b = 0; b < p.batch; ++b) {
    p.seqlens_q.push_back(in_range(0, p.len_q));
    p.seqlens_kv.push_back(in_range(0, p.len_kv));
  }
  Data d = gen_data(p);
  // The padded rows hold NaN: they must never be read.
  for (std::int64_t b = 0; b < p.batch; ++b) {
    for (std::int64_t h = 0; h < p.heads_q; ++h)
      for (std::int64_t i = seqlen_q(p, b); i < p.len_q; ++i)
        for (std::int64_t e = 0; e < p.head_dim_qk; ++e) d.q[qi(p, b, h, i, e)] = kNaN;
    for (std::int64_t h = 0; h < p.heads_kv; ++h)
      for (std::int64_t j = seqlen_kv(p, b); j < p.len_kv; ++j) {
        for (std::int64_t e = 0; e < p.head_dim_qk; ++e) d.k[ki(p, b, h, j, e)] = kNaN;
        for (std::int64_t e = 0; e < p.head_dim_v; ++e) d.v[vi(p, b, h, j, e)] = kNaN;
      }
  }
  Problem q = p;
  q.packed = true;
  apply_layout(q, coin() ? LayoutKind::bshd : LayoutKind::bhsd, in_range(0, 2), in_range(0, 3));
  RC_ASSERT(validate(q) == "");
  const Result r = run(p, d);
  assert_same(run(q, d), r, "packed vs padded");
  for (std::size_t x = 0; x < r.o.size(); ++x) RC_ASSERT(!std::isnan(r.o[x]));
}

// ---------------------------------------------------------------- determinism

RC_GTEST_PROP(Metamorphic, BitIdenticalAcrossThreadCountsAndRuns, ()) {
  Options o;
  o.dropout = true;
  const Problem p = gen_problem(o);
  const Data d = gen_data(p);
  const Buffers buf(p, d);
  for (Precision prec : {Precision::f64, Precision::binary128}) {
    const Result one = reference::run_sdpa(p, buf.inputs(), prec, 1);
    assert_same(reference::run_sdpa(p, buf.inputs(), prec, 2), one, "threads 2 vs 1");
    assert_same(reference::run_sdpa(p, buf.inputs(), prec, 3), one, "threads 3 vs 1");
    assert_same(reference::run_sdpa(p, buf.inputs(), prec, 1), one, "repeated run");
    assert_same(reference::run_sdpa(p, buf.inputs(), prec, 0), one, "default threads");
  }
}

}  // namespace
}  // namespace sdpa::test
