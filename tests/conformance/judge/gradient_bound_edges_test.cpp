// The gradients' bound (dQ, dK, dV, d bias) pinned at its edges: for each term of
// docs/CONFORMANCE.md ("The gradients' bound") that dominates somewhere, a case and a contract
// where it does, and a planted backend whose error is a stated fraction of that term, computed
// here from the contract and the exact values (ExactHead), never from the judge's code. At
// about half the term the judge passes; at about 1.5 times it fails, naming the tensor.
//
// Terms that dominate nowhere are not pinned this way: dQ's accumulation over keys
// (safety sqrt(S_b) u_acc) is always below the error of P it multiplies, whose LSE part alone
// is twice safety sqrt(S_b) u_acc (docs/TESTING.md, "Every bound at its edge").
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "conformance/engine/data_gen.hpp"
#include "conformance/judge/judge.hpp"
#include "core/case_id.hpp"
#include "core/device.hpp"
#include "reference/sdpa_backward.hpp"
#include "tests/conformance/judge/bound_edge.hpp"

namespace sdpa {

using namespace sdpa::conformance;
using testing::ExactHead;
namespace {

constexpr double kSafety = 4;       // docs/CONFORMANCE.md: the probabilistic growth factors'
constexpr double u32 = 0x1p-24;     // f32's unit roundoff
constexpr double kDsRoundings = 2;  // dS's roundings in the accumulator (subtraction, products)
constexpr double kSoftcapRoundings = 4;  // softcap's derivative's own roundings

// The exact gradients and the head's exact values (when the problem is a dense single head).
struct Exact {
  reference::Gradients g;
  std::optional<ExactHead> head;
};
// The term of each element of one gradient.
using Term = std::function<std::vector<double>(const Exact&)>;

// The term of each element of a gradient [rows, cols] as a sum over the other side's index:
// term(r, c) = sum_k f(r, c, k), k over S (dQ) or L (dK, dV).
Term summed(
    const char* tensor,
    std::function<double(const ExactHead&, std::int64_t r, std::int64_t c, std::int64_t k)> f) {
  const std::string t = tensor;
  return [t, f](const Exact& e) {
    const ExactHead& h = *e.head;
    const std::int64_t rows = t == "dq" ? h.L : h.S, cols = t == "dv" ? h.Dv : h.Dq;
    const std::int64_t over = t == "dq" ? h.S : h.L;
    std::vector<double> out(ExactHead::n(rows * cols), 0.0);
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) {
        long double acc = 0;
        for (std::int64_t k = 0; k < over; ++k) acc += f(h, r, c, k);
        out[ExactHead::n(r * cols + c)] = double(acc);
      }
    return out;
  };
}

// The output rounding of every element: u_out |g|.
Term output_rounding(const char* tensor, double u_out) {
  const std::string t = tensor;
  return [t, u_out](const Exact& e) {
    const std::vector<double>& g = t == "dq"   ? e.g.dq
                                   : t == "dk" ? e.g.dk
                                   : t == "dv" ? e.g.dv
                                               : e.g.dbias;
    std::vector<double> out(g.size());
    for (std::size_t x = 0; x < g.size(); ++x) out[x] = u_out * std::fabs(g[x]);
    return out;
  };
}

// |scale| sum_j |K_je| w_ij (dQ) and |scale| sum_i |Q_ie| w_ij (dK) for a weight w of (i, j).
Term through_dq(std::function<double(const ExactHead&, std::int64_t i, std::int64_t j)> w,
                double scale) {
  return summed("dq", [w, scale](const ExactHead& h, auto i, auto e, auto j) {
    return std::fabs(scale) * std::fabs(h.k[ExactHead::n(j * h.Dq + e)]) * w(h, i, j);
  });
}
Term through_dk(std::function<double(const ExactHead&, std::int64_t i, std::int64_t j)> w,
                double scale) {
  return summed("dk", [w, scale](const ExactHead& h, auto j, auto e, auto i) {
    return std::fabs(scale) * std::fabs(h.q[ExactHead::n(i * h.Dq + e)]) * w(h, i, j);
  });
}
// sum_i P_ij |dO_id| w (dV).
Term through_dv(double w) {
  return summed("dv", [w](const ExactHead& h, auto j, auto d, auto i) {
    return h.p[ExactHead::n(i * h.S + j)] * std::fabs(h.d_out[ExactHead::n(i * h.Dv + d)]) * w;
  });
}
double abs_ds(const ExactHead& h, std::int64_t i, std::int64_t j) {
  return std::fabs(h.ds[ExactHead::n(i * h.S + j)]);
}

// Logits of about 10 to 11.5 at head dim 1 (q = 1, k_j = 10 + j mod 7 / 4): with softcap 1
// every logit sits where tanh is flat, t' = 1 - tanh^2 below 1e-8, and the softcapped logits
// are all about 1 (the weights spread over every key).
void saturated_logits(const Problem& p, InputBuffers& in) {
  for (std::int64_t i = 0; i < p.len_q; ++i)
    store_from_double(p.dtype, in.q.data(), element_offset(p.q, false, 0, 0, i, 0), 1.0);
  for (std::int64_t j = 0; j < p.len_kv; ++j)
    store_from_double(p.dtype, in.k.data(), element_offset(p.k, false, 0, 0, j, 0),
                      10.0 + double(j % 7) / 4);
}

// dO scaled by 2^-140, K by 2^10 and Q by 2^-10: dS = P (dP - D) lies below f32's smallest
// normal, where its roundings are absolute (half a spacing each), while dQ = scale sum dS K
// stays on f32's grid.
void underflowing_ds(const Problem& p, InputBuffers& in) {
  const auto scale_all = [&](const TensorLayout& t, void* data, std::int64_t rows,
                             std::int64_t cols, int exponent) {
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) {
        const std::int64_t off = element_offset(t, false, 0, 0, r, c);
        store_from_double(p.dtype, data, off,
                          std::ldexp(load_as_double(p.dtype, data, off), exponent));
      }
  };
  scale_all(p.o, in.d_out->data(), p.len_q, p.head_dim_v, -140);
  scale_all(p.k, in.k.data(), p.len_kv, p.head_dim_qk, 10);
  scale_all(p.q, in.q.data(), p.len_q, p.head_dim_qk, -10);
}

// Head dim 1 for V (the case's dv1), V_j = K_j0 and dO_i = Q_i0: dQ_i0 = scale sum_j P_ij
// dO_i (V_j - O_i) K_j0 and dK_j0 = scale sum_i P_ij Q_i0^2 (V_j - O_i) are sums without
// cancellation, and O (at scale 0.01 about the mean of V over 256 keys) small against them, so the
// output's rounding, which reaches the gradients through D = dO . O, stays far below their own.
void coherent_gradients(const Problem& p, InputBuffers& in) {
  for (std::int64_t j = 0; j < p.len_kv; ++j)
    store_from_double(p.dtype, in.v.data(), element_offset(p.v, false, 0, 0, j, 0),
                      load_as_double(p.dtype, in.k.data(), element_offset(p.k, false, 0, 0, j, 0)));
  for (std::int64_t i = 0; i < p.len_q; ++i)
    store_from_double(p.dtype, in.d_out->data(), element_offset(p.o, false, 0, 0, i, 0),
                      load_as_double(p.dtype, in.q.data(), element_offset(p.q, false, 0, 0, i, 0)));
}

struct GradientEdge {
  const char* term;  // the contract's term, as docs/CONFORMANCE.md names it
  const char* id;    // the case
  PrecisionContract contract;
  testing::PrepareInputs prepare;  // rewrites the generated inputs, or null
  const char* tensor;              // "dq", "dk", "dv" or "dbias"
  Term size;                       // the term, per element
};

std::vector<GradientEdge> edges() {
  const PrecisionContract f32;  // f32 accumulation, P and dS kept there
  PrecisionContract ds_bf16;
  ds_bf16.ds_type = DType::bf16;
  constexpr double u_bf16 = 0x1p-8, u_f16 = 0x1p-11;
  const char* half_f16 = "b1.hq1.hkv1.l16.s256.dqk16.dv1.f16.lse.bwd.scale=0.01.seed5.gen=normal";
  const char* half_bf16 = "b1.hq1.hkv1.l16.s256.dqk16.dv1.bf16.lse.bwd.scale=0.01.seed6.gen=normal";
  const char* ds_case = "b1.hq1.hkv1.l16.s16.dqk16.dv16.f32.lse.bwd.seed7.gen=normal";
  const double ds_scale = 0.25;  // 1 / sqrt(16)
  const char* long_l = "b1.hq1.hkv1.l4096.s4.dqk4.dv4.f32.lse.bwd.scale=0.0001.seed8.gen=normal";
  const double k_n = kSafety * std::sqrt(4096.0);
  const char* softcap = "b1.hq1.hkv1.l8.s64.dqk1.dv4.f32.softcap=1.lse.bwd.seed9.gen=normal";
  const char* tiny_ds = "b1.hq1.hkv1.l8.s16.dqk16.dv16.f32.lse.bwd.seed10.gen=normal";
  return {
      {"output rounding (f16)", half_f16, f32, coherent_gradients, "dq",
       output_rounding("dq", u_f16)},
      {"output rounding (f16)", half_f16, f32, coherent_gradients, "dk",
       output_rounding("dk", u_f16)},
      {"output rounding (f16)", half_f16, f32, coherent_gradients, "dv",
       output_rounding("dv", u_f16)},
      {"output rounding (bf16)", half_bf16, f32, coherent_gradients, "dq",
       output_rounding("dq", u_bf16)},
      {"output rounding (bf16)", half_bf16, f32, coherent_gradients, "dk",
       output_rounding("dk", u_bf16)},
      {"output rounding (bf16)", half_bf16, f32, coherent_gradients, "dv",
       output_rounding("dv", u_bf16)},
      {"d bias's output rounding (f16)",
       "b1.hq1.hkv1.l16.s256.dqk16.dv1.f16.mask=add.lse.bwd.dbias.scale=0.01.seed11.gen=normal",
       f32, coherent_gradients, "dbias", output_rounding("dbias", u_f16)},
      {"P and dS rounded (bf16)", ds_case, ds_bf16, nullptr, "dq",
       through_dq([](const ExactHead& h, auto i, auto j) { return u_bf16 * abs_ds(h, i, j); },
                  ds_scale)},
      {"P and dS rounded (bf16)", ds_case, ds_bf16, nullptr, "dk",
       through_dk([](const ExactHead& h, auto i, auto j) { return u_bf16 * abs_ds(h, i, j); },
                  ds_scale)},
      {"P and dS rounded (bf16)", ds_case, ds_bf16, nullptr, "dv", through_dv(u_bf16)},
      {"accumulation over queries", long_l, f32, nullptr, "dk",
       through_dk([k_n](const ExactHead& h, auto i, auto j) { return k_n * u32 * abs_ds(h, i, j); },
                  0.0001)},
      {"accumulation over queries", long_l, f32, nullptr, "dv", through_dv(k_n * u32)},
      {"softcap's derivative's roundings", softcap, f32, saturated_logits, "dq",
       through_dq([](const ExactHead& h, auto i,
                     auto j) { return kSoftcapRoundings * u32 * abs_ds(h, i, j); },
                  1.0)},
      {"softcap's derivative's roundings", softcap, f32, saturated_logits, "dk",
       through_dk([](const ExactHead& h, auto i,
                     auto j) { return kSoftcapRoundings * u32 * abs_ds(h, i, j); },
                  1.0)},
      {"dS below the smallest normal", tiny_ds, f32, underflowing_ds, "dq",
       through_dq([](const ExactHead&, auto, auto) { return kDsRoundings * 0.5 * 0x1p-149; },
                  0.25)},
  };
}

// The judge's verdicts on the edge's two planted values, with `table`.
testing::EdgeVerdicts judge_edge(const GradientEdge& e, const ToleranceTable& table = {}) {
  const Case c = parse_case_id_or_throw(e.id);
  const Problem& p = c.problem;
  InputBuffers in = testing::prepared_inputs(c, e.prepare);
  Exact exact;
  exact.g = reference::run_sdpa_backward(p, in.pointers(), logical_d_out(p, *in.d_out));
  if (p.mask == MaskKind::none) exact.head.emplace(p, in);
  const std::string t = e.tensor;
  const std::vector<double>& values = t == "dq"   ? exact.g.dq
                                      : t == "dk" ? exact.g.dk
                                      : t == "dv" ? exact.g.dv
                                                  : exact.g.dbias;
  testing::EdgeVerdicts v;
  v.edge = testing::find_bound_edge(p.dtype, values, e.size(exact), 0.5, 1.5);
  if (!v.edge.found) return v;
  testing::judge_planted_values(v, c, e.prepare, e.contract, t, table);
  return v;
}

TEST(GradientBoundEdges, EveryDominantTermIsTheEdge) {
  for (const GradientEdge& e : edges()) {
    SCOPED_TRACE(std::string(e.term) + " of " + e.tensor + ": " + e.id);
    testing::expect_edge_verdicts(judge_edge(e), e.tensor);
  }
}

// The table's gradient constants, and the safety factor, doubled: some edge lets its
// beyond-the-bound value pass (the test above would then fail).
TEST(GradientBoundEdges, EveryTableConstantDoubledIsSeen) {
  const std::vector<std::pair<const char*, double ToleranceTable::*>> constants = {
      {"safety", &ToleranceTable::safety},
      {"grad_ds_roundings", &ToleranceTable::grad_ds_roundings},
      {"grad_softcap_roundings", &ToleranceTable::grad_softcap_roundings}};
  testing::expect_every_constant_doubled_seen<GradientEdge>(
      constants, edges(),
      [](const GradientEdge& e, const ToleranceTable& t) { return judge_edge(e, t); },
      [](const GradientEdge& e) { return std::string(e.term) + " (" + e.tensor + ")"; });
}

}  // namespace
}  // namespace sdpa
