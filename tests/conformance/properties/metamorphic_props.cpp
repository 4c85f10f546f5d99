// Family "metamorphic" (docs/TESTING.md), judged on the kernels: a transformation of the inputs
// must transform the kernel's outputs in a known way. Two kernel runs are compared with
// each other, within the sum of their bounds (each run may err by its own bound), or bit
// for bit where the backend declares batch invariance and the relation is one it covers.
// tests/reference/metamorphic_test.cpp checks the same relations on the reference.
#include <cmath>
#include <numeric>

#include "conformance/judge/tolerance.hpp"
#include "tests/conformance/properties/gen_util.hpp"
#include "tests/conformance/properties/kernel_io.hpp"
#include "tests/conformance/properties/prop_util.hpp"

namespace sdpa::props {

using namespace sdpa::conformance;
namespace {

class Metamorphic : public testing::TestWithParam<Combo> {
 protected:
  const Backend& backend() const { return *GetParam().backend; }
  TargetRun options() const { return {0, GetParam().target}; }
};

struct Options {
  bool structural = true;  // causal and windows
  bool mask = true;        // a mask tensor (never broadcast: transformations move its rows)
  bool varlen = true;      // padded valid lengths
};

Case gen_case(const Backend& b, const Options& o) {
  const Heads h = gen_heads();
  Problem p = make_problem(in_range(1, 3), h.q, h.kv, in_range(1, 16), in_range(1, 32),
                           in_range(1, 24), in_range(1, 24), gen_dtype(b));
  if (o.structural) {
    p.causal = one_of<Causal>({Causal::none, Causal::top_left, Causal::bottom_right});
    if (coin()) {
      p.window = {true, in_range(-1, 8), in_range(-1, 8),
                  one_of<Align>({Align::top_left, Align::bottom_right})};
    }
  }
  if (o.mask) p.mask = one_of<MaskKind>({MaskKind::none, MaskKind::boolean, MaskKind::additive});
  if (o.varlen) gen_varlen(p, false);
  if (coin()) p.softcap = one_of<double>({2, 20});
  return {p, gen_recipe()};
}

// A random permutation of 0..n-1 (Fisher-Yates with drawn indices: shrinks to the identity).
std::vector<std::int64_t> gen_perm(std::int64_t n) {
  std::vector<std::int64_t> perm(static_cast<std::size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  for (std::int64_t x = n - 1; x > 0; --x) std::swap(perm[x], perm[x - in_range(0, x)]);
  return perm;
}

// out[o][x][t] = in[o][idx[x]][t] for an array [outer][n_in][inner]; idx may repeat.
std::vector<double> gather(const std::vector<double>& in, std::int64_t outer,
                           const std::vector<std::int64_t>& idx, std::int64_t n_in,
                           std::int64_t inner) {
  std::vector<double> out;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t x : idx)
      for (std::int64_t t = 0; t < inner; ++t) out.push_back(in[(o * n_in + x) * inner + t]);
  return out;
}

// One kernel run on its inputs (fails the property if the run itself is wrong: an exception,
// an unwritten output, a write outside a view) with the bounds of its problem.
struct KernelRun {
  Outputs out;
  Bounds bd;
};
KernelRun run_one(const Backend& b, const Problem& p, const InputBuffers& in, const TargetRun& opt,
                  const std::string& id) {
  KernelRun r;
  if (std::string why = run_kernel(b, p, in, opt, &r.out); !why.empty()) fail(why + "\n  " + id);
  r.bd = bounds(b, p, in);
  return r;
}

std::vector<double> sum(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> s(a.size());
  for (std::size_t x = 0; x < a.size(); ++x) s[x] = a[x] + b[x];
  return s;
}

void expect_related(const std::vector<double>& got, const std::vector<double>& want,
                    const std::vector<double>& tol, const std::string& what,
                    const std::string& id) {
  if (std::string why = compare(got, want, tol, what); !why.empty()) fail(why + "\n  " + id);
}

// ---------------------------------------------------------------- permutations

// Permuting the batch elements permutes the outputs; bit for bit when the backend declares
// batch invariance (a row's bits depend on its own inputs only).
TEST_P(Metamorphic, BatchPermutationPermutesOutputs) {
  check("permuting batch elements permutes O and LSE", [&] {
    const Case c = gen_case(backend(), {});
    const Problem& p = c.problem;
    const auto perm = gen_perm(p.batch);
    const InputBuffers in = make_inputs(c);
    const Tensors t = read_inputs(p, in);
    Problem q = p;
    Tensors u;
    const std::int64_t H = p.heads_q, Hk = p.heads_kv, L = p.len_q, S = p.len_kv;
    u.q = gather(t.q, 1, perm, p.batch, H * L * p.head_dim_qk);
    u.k = gather(t.k, 1, perm, p.batch, Hk * S * p.head_dim_qk);
    u.v = gather(t.v, 1, perm, p.batch, Hk * S * p.head_dim_v);
    if (!t.mask.empty()) u.mask = gather(t.mask, 1, perm, p.batch, H * L * S);
    for (std::size_t x = 0; x < perm.size() && !p.seqlens_q.empty(); ++x) {
      q.seqlens_q[x] = p.seqlens_q[perm[x]];
      q.seqlens_kv[x] = p.seqlens_kv[perm[x]];
    }
    const std::string id = repro(backend(), c, options()) + " with batch permutation";
    const KernelRun a = run_one(backend(), p, in, options(), id);
    const KernelRun b = run_one(backend(), q, write_inputs(q, u), options(), id);
    const std::vector<double> want_o = gather(a.out.o, 1, perm, p.batch, H * L * p.head_dim_v);
    const std::vector<double> want_lse = gather(a.out.lse, 1, perm, p.batch, H * L);
    if (backend().capabilities().batch_invariant) {
      expect_related(b.out.o, want_o, std::vector<double>(want_o.size(), 0), "o (bitwise)", id);
      expect_related(b.out.lse, want_lse, std::vector<double>(want_lse.size(), 0), "lse (bitwise)",
                     id);
    } else {
      expect_related(b.out.o, want_o, sum(b.bd.o, b.bd.o), "o", id);
      expect_related(b.out.lse, want_lse, sum(b.bd.lse, b.bd.lse), "lse", id);
    }
  });
}

// Permuting the KV heads, and the query heads within each GQA group, permutes the outputs.
TEST_P(Metamorphic, HeadPermutationPermutesOutputs) {
  check("permuting heads (group-preserving) permutes O and LSE", [&] {
    const Case c = gen_case(backend(), {});
    const Problem& p = c.problem;
    const std::int64_t H = p.heads_q, Hk = p.heads_kv, G = H / Hk, L = p.len_q, S = p.len_kv;
    const auto kv_perm = gen_perm(Hk);
    std::vector<std::int64_t> q_perm;
    for (std::int64_t x = 0; x < Hk; ++x) {
      for (std::int64_t g : gen_perm(G)) q_perm.push_back(kv_perm[x] * G + g);
    }
    const InputBuffers in = make_inputs(c);
    const Tensors t = read_inputs(p, in);
    Tensors u;
    u.q = gather(t.q, p.batch, q_perm, H, L * p.head_dim_qk);
    u.k = gather(t.k, p.batch, kv_perm, Hk, S * p.head_dim_qk);
    u.v = gather(t.v, p.batch, kv_perm, Hk, S * p.head_dim_v);
    if (!t.mask.empty()) u.mask = gather(t.mask, p.batch, q_perm, H, L * S);
    const std::string id = repro(backend(), c, options()) + " with head permutation";
    const KernelRun a = run_one(backend(), p, in, options(), id);
    const KernelRun b = run_one(backend(), p, write_inputs(p, u), options(), id);
    expect_related(b.out.o, gather(a.out.o, p.batch, q_perm, H, L * p.head_dim_v),
                   sum(b.bd.o, b.bd.o), "o", id);
    expect_related(b.out.lse, gather(a.out.lse, p.batch, q_perm, H, L), sum(b.bd.lse, b.bd.lse),
                   "lse", id);
  });
}

// Permuting keys and values together changes nothing without masks (only the order of the
// sums): within the two bounds.
TEST_P(Metamorphic, KeyValuePermutationChangesNothingWithoutMasks) {
  check("permuting keys and values together leaves O and LSE", [&] {
    const Case c = gen_case(backend(), {false, false, false});
    const Problem& p = c.problem;
    const auto perm = gen_perm(p.len_kv);
    const InputBuffers in = make_inputs(c);
    const Tensors t = read_inputs(p, in);
    Tensors u;
    u.q = t.q;
    u.k = gather(t.k, p.batch * p.heads_kv, perm, p.len_kv, p.head_dim_qk);
    u.v = gather(t.v, p.batch * p.heads_kv, perm, p.len_kv, p.head_dim_v);
    const std::string id = repro(backend(), c, options()) + " with keys permuted";
    const KernelRun a = run_one(backend(), p, in, options(), id);
    const KernelRun b = run_one(backend(), p, write_inputs(p, u), options(), id);
    expect_related(b.out.o, a.out.o, sum(a.bd.o, b.bd.o), "o", id);
    expect_related(b.out.lse, a.out.lse, sum(a.bd.lse, b.bd.lse), "lse", id);
  });
}

// ---------------------------------------------------------------- equivalent problems

// GQA equals MHA with every KV head repeated over its group (contiguous groups).
TEST_P(Metamorphic, GqaEqualsRepeatedKv) {
  check("GQA equals its KV heads repeated", [&] {
    Case c = gen_case(backend(), {});
    Problem& p = c.problem;
    if (p.heads_q == p.heads_kv) p.heads_q = p.heads_kv * in_range(2, 3);
    apply_layout(p, LayoutKind::bhsd, 0, 0);
    const std::int64_t H = p.heads_q, Hk = p.heads_kv, G = H / Hk;
    const InputBuffers in = make_inputs(c);
    const Tensors t = read_inputs(p, in);
    std::vector<std::int64_t> rep;
    for (std::int64_t h = 0; h < H; ++h) rep.push_back(h / G);
    Problem q = p;
    q.heads_kv = H;
    apply_layout(q, LayoutKind::bhsd, 0, 0);
    Tensors u = t;
    u.k = gather(t.k, p.batch, rep, Hk, p.len_kv * p.head_dim_qk);
    u.v = gather(t.v, p.batch, rep, Hk, p.len_kv * p.head_dim_v);
    const std::string id = repro(backend(), c, options()) + " against its KV heads repeated";
    const KernelRun a = run_one(backend(), p, in, options(), id);
    const KernelRun b = run_one(backend(), q, write_inputs(q, u), options(), id);
    expect_related(b.out.o, a.out.o, sum(a.bd.o, b.bd.o), "o", id);
    expect_related(b.out.lse, a.out.lse, sum(a.bd.lse, b.bd.lse), "lse", id);
  });
}

// The causal flag equals the explicit mask it stands for (bool false / additive -inf above
// the TL or BR diagonal, per batch element's L_b and S_b), ANDed with any mask already there.
TEST_P(Metamorphic, CausalEqualsExplicitMask) {
  check("causal TL/BR equals the explicit -inf mask", [&] {
    Case c = gen_case(backend(), {false, true, true});
    Problem& p = c.problem;
    p.causal = one_of<Causal>({Causal::top_left, Causal::bottom_right});
    const InputBuffers in = make_inputs(c);
    const Tensors t = read_inputs(p, in);
    Problem q = p;
    q.causal = Causal::none;
    if (q.mask == MaskKind::none) q.mask = coin() ? MaskKind::boolean : MaskKind::additive;
    Tensors u = t;
    const std::int64_t H = p.heads_q, L = p.len_q, S = p.len_kv;
    u.mask.assign(static_cast<std::size_t>(p.batch * H * L * S),
                  q.mask == MaskKind::boolean ? 1.0 : 0.0);
    if (!t.mask.empty()) u.mask = t.mask;
    for (std::int64_t b = 0; b < p.batch; ++b) {
      const std::int64_t off = p.causal == Causal::top_left ? 0 : seqlen_kv(p, b) - seqlen_q(p, b);
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t i = 0; i < L; ++i)
          for (std::int64_t j = i + off + 1; j < S; ++j) {
            if (j < 0) continue;
            u.mask[at(b, h, i, j, H, L, S)] = q.mask == MaskKind::boolean ? 0.0 : -INFINITY;
          }
    }
    const std::string id = repro(backend(), c, options()) + " against the explicit mask";
    const KernelRun a = run_one(backend(), p, in, options(), id);
    const KernelRun b = run_one(backend(), q, write_inputs(q, u), options(), id);
    expect_related(b.out.o, a.out.o, sum(a.bd.o, b.bd.o), "o", id);
    expect_related(b.out.lse, a.out.lse, sum(a.bd.lse, b.bd.lse), "lse", id);
  });
}

// scale = +-2^k equals scale 1 with Q multiplied by +-2^k (exact in every type here).
TEST_P(Metamorphic, ScaleFoldedIntoQ) {
  check("a power-of-two scale folded into Q changes nothing", [&] {
    Case c = gen_case(backend(), {});
    Problem& p = c.problem;
    const double s = std::ldexp(coin() ? 1.0 : -1.0, static_cast<int>(in_range(-3, 3)));
    p.scale = s;
    const InputBuffers in = make_inputs(c);
    Tensors u = read_inputs(p, in);
    for (double& x : u.q) x *= s;
    Problem q = p;
    q.scale = 1.0;
    const std::string id = repro(backend(), c, options()) + " against scale 1 with Q * scale";
    const KernelRun a = run_one(backend(), p, in, options(), id);
    const KernelRun b = run_one(backend(), q, write_inputs(q, u), options(), id);
    expect_related(b.out.o, a.out.o, sum(a.bd.o, b.bd.o), "o", id);
    expect_related(b.out.lse, a.out.lse, sum(a.bd.lse, b.bd.lse), "lse", id);
  });
}

// Where a backend outputs the attention weights: every row of P sums to 1 (0 for a row that
// attends no key), within the sum of check_case's per-weight bounds.
TEST_P(Metamorphic, RowsOfWeightsSumToOne) {
  if (!backend().capabilities().weights) {
    GTEST_SKIP() << backend().name() << " does not output attention weights";
  }
  check("rows of P sum to 1", [&] {
    Case c = gen_case(backend(), {});
    Problem& p = c.problem;
    p.want_weights = true;
    const InputBuffers in = make_inputs(c);
    const std::string id = repro(backend(), c, options());
    const KernelRun a = run_one(backend(), p, in, options(), id);
    const double u_out = dtype_unit_roundoff(p.dtype);
    const double u_acc = dtype_unit_roundoff(backend().precision(p.dtype).accumulate);
    const std::int64_t S = p.len_kv;
    const double floor = tolerance_factors(p, backend().precision(p.dtype), S).floor;
    for (std::size_t row = 0; row < a.out.lse.size(); ++row) {
      double total = 0;
      for (std::int64_t j = 0; j < S; ++j) total += a.out.weights[row * S + j];
      const bool attends = a.bd.ref.lse[row] != -INFINITY;
      // sum_j (u_out (4 + P_j) P_j + 64 u_acc P_j + floor) <= 5 u_out + 64 u_acc + S floor.
      const double tol = 5 * u_out + 64 * u_acc + S * floor;
      if (attends ? std::fabs(total - 1) > tol : total != 0) {
        fail("row " + std::to_string(row) + " of P sums to " + std::to_string(total) +
             (attends ? ", expected 1" : ", expected 0 (no attended key)") + "\n  " + id);
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(All, Metamorphic, testing::ValuesIn(every_backend()), combo_name);

}  // namespace
}  // namespace sdpa::props
