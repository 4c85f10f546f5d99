// The forward's bounds (O, the LSE, the weights) pinned at their edges: for each term of
// docs/CONFORMANCE.md ("The bound") that dominates somewhere, a case and a contract where it
// does, and a planted backend whose error is a stated fraction of that term, computed here
// from the contract and the exact values (ExactHead), never from the judge's code. At about
// half the term the judge passes; at about 1.5 times it fails, naming the tensor. A term
// multiplied by 2 in the judge lets the second pass; a term dropped fails the first.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "conformance/engine/data_gen.hpp"
#include "conformance/judge/judge.hpp"
#include "conformance/judge/naive_baseline.hpp"
#include "core/case_id.hpp"
#include "core/device.hpp"
#include "reference/sdpa_reference.hpp"
#include "tests/conformance/judge/bound_edge.hpp"

namespace sdpa {

using namespace sdpa::conformance;
using testing::BoundEdge;
using testing::ExactHead;
namespace {

constexpr double kSafety = 4;         // docs/CONFORMANCE.md: the probabilistic growth factors'
constexpr double u32 = 0x1p-24;       // f32's unit roundoff
constexpr double u16 = 0x1p-11;       // f16's
constexpr double kPGrowth = 4;        // the weights' own roundings, relative to P
constexpr double kAccRoundings = 64;  // the weights' accumulator roundings
constexpr double kLseFactor = 2;      // the row's LSE bound, twice, in P's relative error

PrecisionContract f32_contract() { return {}; }

// Logits of about Offset to Offset + 1.5 (q = 1, k_j = Offset + j mod 7 / 4, head dim 1): the
// softmax spread over the keys while every |s_j| is large. At Offset 10 the logits' own
// rounding (and exp's, and each rescale's) dominates the dot products' (a_j = |s_j| at one
// dimension); at Offset 50 the LSE (about 52) is large, and so is its f32 rounding.
template <int Offset>
void spread_logits(const Problem& p, InputBuffers& in) {
  for (std::int64_t i = 0; i < p.len_q; ++i)
    store_from_double(p.dtype, in.q.data(), element_offset(p.q, false, 0, 0, i, 0), 1.0);
  for (std::int64_t j = 0; j < p.len_kv; ++j)
    store_from_double(p.dtype, in.k.data(), element_offset(p.k, false, 0, 0, j, 0),
                      Offset + double(j % 7) / 4);
}

// V scaled by 2^-20: in f16 every value, and O, is subnormal.
void subnormal_v(const Problem& p, InputBuffers& in) {
  for (std::int64_t j = 0; j < p.len_kv; ++j)
    for (std::int64_t d = 0; d < p.head_dim_v; ++d) {
      const std::int64_t off = element_offset(p.v, false, 0, 0, j, d);
      store_from_double(p.dtype, in.v.data(), off,
                        std::ldexp(load_as_double(p.dtype, in.v.data(), off), -20));
    }
}

// One key of logit 0 and V 0, three of logit -97 (weights about 2^-140, below f32's smallest
// normal) and V about 2^126 (head dims 1): O is those three keys' products alone, and a
// kernel's P there is off by up to half f32's subnormal spacing, far more than any relative
// rounding of O.
void underflowing_weights(const Problem& p, InputBuffers& in) {
  for (std::int64_t i = 0; i < p.len_q; ++i)
    store_from_double(p.dtype, in.q.data(), element_offset(p.q, false, 0, 0, i, 0), 1.0);
  for (std::int64_t j = 0; j < p.len_kv; ++j) {
    store_from_double(p.dtype, in.k.data(), element_offset(p.k, false, 0, 0, j, 0),
                      j == 0 ? 0.0 : -97.0);
    store_from_double(p.dtype, in.v.data(), element_offset(p.v, false, 0, 0, j, 0),
                      j == 0 ? 0.0 : std::ldexp(1.0 + double(j) / 8, 126));
  }
}

// Per-element terms of O ([L, Dv]), the LSE ([L]) and the weights ([L, S]).
using Term = std::function<std::vector<double>(const ExactHead&)>;
Term per_output(std::function<double(const ExactHead&, std::int64_t, std::int64_t)> f) {
  return [f](const ExactHead& h) {
    std::vector<double> t(ExactHead::n(h.L * h.Dv));
    for (std::int64_t i = 0; i < h.L; ++i)
      for (std::int64_t d = 0; d < h.Dv; ++d) t[ExactHead::n(i * h.Dv + d)] = f(h, i, d);
    return t;
  };
}
Term per_row(std::function<double(const ExactHead&, std::int64_t)> f) {
  return [f](const ExactHead& h) {
    std::vector<double> t(ExactHead::n(h.L));
    for (std::int64_t i = 0; i < h.L; ++i) t[ExactHead::n(i)] = f(h, i);
    return t;
  };
}
Term per_weight(std::function<double(const ExactHead&, std::int64_t, double)> f) {
  return [f](const ExactHead& h) {
    std::vector<double> t(h.p.size());
    for (std::size_t x = 0; x < t.size(); ++x)
      t[x] = f(h, static_cast<std::int64_t>(x) / h.S, h.p[x]);
    return t;
  };
}

struct ForwardEdge {
  const char* term;  // the contract's term, as docs/CONFORMANCE.md names it
  const char* id;    // the case
  PrecisionContract contract;
  testing::PrepareInputs prepare;  // rewrites the generated inputs, or null
  const char* tensor;              // "o", "lse" or "weights"
  Term size;                       // the term, per element
  double low = 0.5;                // the planted fractions
  double high = 1.5;
};

std::vector<ForwardEdge> edges() {
  PrecisionContract p_bf16;
  p_bf16.p_type = DType::bf16;
  PrecisionContract f64_acc;
  f64_acc.accumulate = f64_acc.p_type = f64_acc.ds_type = DType::f64;
  PrecisionContract online;
  online.online_softmax = true;
  online.key_block = 1;
  PrecisionContract tensor_core;
  tensor_core.mma_block = 16;
  tensor_core.mma_extra_bits = 0;
  const auto tc_growth = [](double n, double block, double extra) {
    return std::ceil(n / block) * (2 + (block + 1) * std::ldexp(1.0, 1 - int(extra)));
  };
  return {
      // O.
      {"output rounding (f16)", "b1.hq1.hkv1.l16.s24.dqk16.dv16.f16.seed11.gen=normal",
       f32_contract(), nullptr, "o", per_output([](const ExactHead& h, auto i, auto d) {
         return u16 * std::fabs(h.o[ExactHead::n(i * h.Dv + d)]);
       })},
      {"output rounding (bf16)", "b1.hq1.hkv1.l16.s24.dqk16.dv16.bf16.seed12.gen=normal",
       f32_contract(), nullptr, "o", per_output([](const ExactHead& h, auto i, auto d) {
         return 0x1p-8 * std::fabs(h.o[ExactHead::n(i * h.Dv + d)]);
       })},
      {"accumulation over keys",
       "b1.hq1.hkv1.l4.s512.dqk16.dv16.f32.scale=0.0001.seed13.gen=normal", f32_contract(), nullptr,
       "o", per_output([](const ExactHead& h, auto i, auto d) {
         return kSafety * std::sqrt(double(h.S)) * u32 * h.weighted_abs_v(i, d);
       })},
      {"P's rounding (bf16 P)", "b1.hq1.hkv1.l8.s16.dqk16.dv16.f32.scale=0.0001.seed14.gen=normal",
       p_bf16, nullptr, "o", per_output([](const ExactHead& h, auto i, auto d) {
         return 0x1p-8 * h.weighted_abs_v(i, d);
       })},
      {"dot products", "b1.hq1.hkv1.l8.s16.dqk256.dv16.f32.seed15.gen=normal", f32_contract(),
       nullptr, "o", per_output([](const ExactHead& h, auto i, auto d) {
         return kSafety * std::sqrt(double(h.Dq)) * u32 * h.dot_term(i, d);
       })},
      {"logits, exp and rescales", "b1.hq1.hkv1.l8.s64.dqk1.dv4.f32.seed16.gen=normal", online,
       spread_logits<10>, "o", per_output([](const ExactHead& h, auto i, auto d) {
         return kSafety * (2.0 + double(h.S)) * u32 * h.logit_term(i, d);
       })},
      {"tensor-core blocks", "b1.hq1.hkv1.l4.s512.dqk16.dv16.f32.scale=0.0001.seed17.gen=normal",
       tensor_core, nullptr, "o", per_output([tc_growth](const ExactHead& h, auto i, auto d) {
         return tc_growth(double(h.S), 16, 0) * u32 * h.weighted_abs_v(i, d);
       })},
      {"P below the smallest normal", "b1.hq1.hkv1.l2.s4.dqk1.dv1.f32.seed26.gen=normal",
       f32_contract(), underflowing_weights, "o",
       per_output([](const ExactHead& h, auto i, auto d) {
         return 0.5 * 0x1p-149 * h.underflow_term(i, d);
       })},
      {"subnormal floor (f16)", "b1.hq1.hkv1.l16.s16.dqk16.dv16.f16.seed18.gen=normal",
       f32_contract(), subnormal_v, "o", per_output([](const ExactHead& h, auto, auto) {
         return 0x1p-24 + double(h.S + 1) * 0x1p-149;
       })},
      // The LSE (f32 whatever the dtype).
      {"the LSE's own rounding (f64 accumulation)",
       "b1.hq1.hkv1.l64.s16.dqk16.dv16.f32.lse.seed19.gen=normal", f64_acc, nullptr, "lse",
       per_row([](const ExactHead& h, auto i) { return u32 * std::fabs(h.lse[ExactHead::n(i)]); }),
       0.0, 1.5},
      {"the row sum's accumulation",
       "b1.hq1.hkv1.l4.s1024.dqk16.dv16.f32.lse.scale=0.0001.seed20.gen=normal", f32_contract(),
       nullptr, "lse",
       per_row([](const ExactHead& h, auto) { return kSafety * std::sqrt(double(h.S)) * u32; })},
      {"the LSE's dot products", "b1.hq1.hkv1.l8.s16.dqk256.dv16.f32.lse.seed21.gen=normal",
       f32_contract(), nullptr, "lse", per_row([](const ExactHead& h, auto i) {
         return kSafety * std::sqrt(double(h.Dq)) * u32 * h.lse_dot_term(i);
       })},
      {"the LSE's logits, exp and rescales",
       "b1.hq1.hkv1.l8.s64.dqk1.dv4.f32.lse.seed22.gen=normal", online, spread_logits<10>, "lse",
       per_row([](const ExactHead& h, auto i) {
         return kSafety * (2.0 + double(h.S)) * u32 * h.lse_logit_term(i);
       })},
      // The weights.
      {"the weights' own rounding (f16)",
       "b1.hq1.hkv1.l8.s8.dqk16.dv16.f16.attnw.seed23.gen=normal", f32_contract(), nullptr,
       "weights",
       per_weight([](const ExactHead&, auto, double p) { return u16 * (kPGrowth + p) * p; })},
      {"the weights' accumulator roundings",
       "b1.hq1.hkv1.l8.s2.dqk16.dv16.f32.attnw.scale=0.0001.seed24.gen=normal", f32_contract(),
       nullptr, "weights",
       per_weight([](const ExactHead&, auto, double p) { return kAccRoundings * u32 * p; })},
      {"the weights' LSE term", "b1.hq1.hkv1.l8.s16.dqk256.dv16.f32.attnw.seed25.gen=normal",
       f32_contract(), nullptr, "weights", per_weight([](const ExactHead& h, auto i, double p) {
         return kLseFactor * kSafety * std::sqrt(double(h.Dq)) * u32 * h.lse_dot_term(i) * p;
       })},
      {"the LSE's rounding inside the weights (f64 accumulation)",
       "b1.hq1.hkv1.l4.s8.dqk1.dv4.f32.lse.attnw.seed27.gen=normal", f64_acc, spread_logits<50>,
       "weights", per_weight([](const ExactHead& h, auto i, double p) {
         return kLseFactor * u32 * std::fabs(h.lse[ExactHead::n(i)]) * p;
       })},
  };
}

// The judge's verdicts on the edge's two planted values, with `table`.
testing::EdgeVerdicts judge_edge(const ForwardEdge& e, const ToleranceTable& table = {}) {
  const Case c = parse_case_id_or_throw(e.id);
  const Problem& p = c.problem;
  InputBuffers in = testing::prepared_inputs(c, e.prepare);
  const ExactHead head(p, in);
  const reference::Result ref = reference::run_sdpa(p, in.pointers());
  const std::string tensor = e.tensor;
  // The judge compares the LSE output (f32) with the exact LSE rounded to f32.
  std::vector<double> exact = tensor == "o" ? ref.o : tensor == "lse" ? ref.lse : ref.weights;
  if (tensor == "lse")
    for (double& x : exact) x = double(float(x));
  testing::EdgeVerdicts v;
  v.edge = testing::find_bound_edge(tensor == "lse" ? DType::f32 : p.dtype, exact, e.size(head),
                                    e.low, e.high);
  if (!v.edge.found) return v;
  testing::judge_planted_values(v, c, e.prepare, e.contract, tensor, table);
  return v;
}

TEST(ForwardBoundEdges, EveryDominantTermIsTheEdge) {
  for (const ForwardEdge& e : edges()) {
    SCOPED_TRACE(std::string(e.term) + ": " + e.id);
    testing::expect_edge_verdicts(judge_edge(e), e.tensor);
  }
}

// Each constant of the tolerance table that the forward's bounds use, doubled: some edge lets
// its beyond-the-bound value pass (the test above would then fail).
TEST(ForwardBoundEdges, EveryTableConstantDoubledIsSeen) {
  const std::vector<std::pair<const char*, double ToleranceTable::*>> constants = {
      {"safety", &ToleranceTable::safety},
      {"weights_p_growth", &ToleranceTable::weights_p_growth},
      {"weights_acc_roundings", &ToleranceTable::weights_acc_roundings},
      {"weights_lse_factor", &ToleranceTable::weights_lse_factor}};
  testing::expect_every_constant_doubled_seen<ForwardEdge>(
      constants, edges(),
      [](const ForwardEdge& e, const ToleranceTable& t) { return judge_edge(e, t); },
      [](const ForwardEdge& e) { return std::string(e.term); });
}

// The quality gate (docs/CONFORMANCE.md, step 7): a kernel whose largest error on O is more
// than twice the naive same-precision algorithm's (the worse of its two summation orders) plus
// eight output roundings of the largest |O| gets QUALITY_WARNING. Two cases, each dominated by
// one of the two allowances: one key (the naive algorithm is exact: O = V) and 4096 keys (its
// error, about sqrt(S) roundings of sum P |V|, is far above eight roundings of |O| ~ S^-1/2).
// The planted backend declares a bf16 accumulator, whose bound is far above both; the
// planted error is half and 1.5 times the allowance.
struct QualityVerdicts {
  Status low, high;
};
QualityVerdicts judge_quality_edge(const char* id, const ToleranceTable& table = {}) {
  const Case c = parse_case_id_or_throw(id);
  const Problem& p = c.problem;
  InputBuffers in = make_inputs(c);
  const reference::Result ref = reference::run_sdpa(p, in.pointers());
  double naive_err = 0, max_abs = 0;
  for (SumOrder order : {SumOrder::forward, SumOrder::reverse}) {
    const std::vector<double> naive = naive_low_precision(p, in.pointers(), order);
    for (std::size_t x = 0; x < naive.size(); ++x) {
      naive_err = std::max(naive_err, std::fabs(naive[x] - ref.o[x]));
      max_abs = std::max(max_abs, std::fabs(ref.o[x]));
    }
  }
  const double allowed = 2 * naive_err + 8 * u32 * max_abs;
  PrecisionContract loose;
  loose.accumulate = loose.p_type = DType::bf16;
  QualityVerdicts v{};
  for (auto [fraction, out] : {std::pair{0.5, &v.low}, {1.5, &v.high}}) {
    InputBuffers fresh = make_inputs(c);
    *out = judge(testing::PlantedBackend(loose, {"o", 0, ref.o[0] + fraction * allowed}), p, fresh,
                 detect_cpu(), RunOptions{}, nullptr, table)
               .status;
  }
  return v;
}

constexpr const char* kOneKey = "b1.hq1.hkv1.l4.s1.dqk16.dv16.f32.seed31.gen=normal";
constexpr const char* kManyKeys = "b1.hq1.hkv1.l2.s4096.dqk16.dv16.f32.seed32.gen=normal";

TEST(QualityGateEdges, TwiceTheNaiveErrorPlusEightRoundingsIsTheEdge) {
  for (const char* id : {kOneKey, kManyKeys}) {
    SCOPED_TRACE(id);
    const QualityVerdicts v = judge_quality_edge(id);
    EXPECT_EQ(v.low, Status::pass) << status_name(v.low);
    EXPECT_EQ(v.high, Status::quality_warning) << status_name(v.high);
  }
}

TEST(QualityGateEdges, EachAllowanceDoubledIsSeen) {
  ToleranceTable naive_doubled, roundings_doubled;
  naive_doubled.quality_naive_factor *= 2;
  roundings_doubled.quality_output_roundings *= 2;
  EXPECT_EQ(judge_quality_edge(kManyKeys, naive_doubled).high, Status::pass);
  EXPECT_EQ(judge_quality_edge(kOneKey, roundings_doubled).high, Status::pass);
}

}  // namespace
}  // namespace sdpa
