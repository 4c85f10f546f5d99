// The backward family: properties of the reference's gradients on any problem the sampler
// draws, and every backend with a backward judged on sampled backward cases.
#include <cmath>
#include <random>

#include "conformance/engine/data_gen.hpp"
#include "conformance/engine/rc_case_gen.hpp"
#include "conformance/judge/gradient_tolerance.hpp"
#include "reference/sdpa_backward.hpp"
#include "tests/conformance/properties/prop_util.hpp"

namespace sdpa::props {

using namespace sdpa::conformance;
namespace {

// Small problems, plain data: many cases per second, the reference's arithmetic alone.
SamplerOptions small(std::vector<DType> dtypes) {
  SamplerOptions o;
  o.dtypes = std::move(dtypes);
  o.max_work = 1 << 12;
  o.max_len = 24;
  o.max_head_dim = 16;
  o.adversarial_data = false;
  o.model_shapes = false;
  return o;
}

// A drawn case made a backward one (discarded when its layouts cannot hold gradients).
Case backward_case(Case c) {
  c.problem.backward = c.problem.want_lse = true;
  RC_PRE(validate(c.problem).empty());
  return c;
}

// A backward case's data and the reference's forward and gradients for it.
struct Exact {
  explicit Exact(const Case& c)
      : p(c.problem),
        in(make_inputs(c)),
        d_out(logical_d_out(p, *in.d_out)),
        g(reference::run_sdpa_backward(p, in.pointers(), d_out)),
        r(reference::run_sdpa(p, in.pointers())) {}
  const Problem& p;
  InputBuffers in;
  std::vector<double> d_out;
  reference::Gradients g;
  reference::Result r;
};

// Without softcap, sum_j dK_j = scale sum_i Q_i sum_j dS_ij = 0 for every key/value head: each
// row of dS sums to zero (the softmax Jacobian's rows do), dropout and masks included. Within
// the sum of the elements' own f64 bounds.
TEST(BackwardReference, KeyGradientsSumToZeroWithoutSoftcap) {
  check("sum over keys of dK is zero", [] {
    SamplerOptions o = small({DType::f64, DType::f32});
    o.softcap = false;
    const Case c = backward_case(*gen_case(o));
    Exact ex(c);
    const Problem& p = ex.p;
    const reference::Gradients& g = ex.g;
    PrecisionContract f64;
    f64.accumulate = f64.p_type = f64.ds_type = DType::f64;
    const GradientTolerances t =
        gradient_tolerances(p, ex.in.pointers(), ex.d_out, ex.r, g, f64, {}, DType::f64);
    const std::int64_t S = p.len_kv, Dq = p.head_dim_qk;
    for (std::int64_t bg = 0; bg < p.batch * p.heads_kv; ++bg)
      for (std::int64_t e = 0; e < Dq; ++e) {
        double sum = 0, bound = 0;
        for (std::int64_t j = 0; j < S; ++j) {
          const auto x = static_cast<std::size_t>((bg * S + j) * Dq + e);
          sum += g.dk[x];
          bound += t.dk[x];
        }
        if (std::isnan(sum)) continue;
        if (!(std::fabs(sum) <= 2 * bound + 0x1p-1000)) {
          fail(format_case_id(c) + ": sum_j dK[" + std::to_string(bg) + ", j, " +
               std::to_string(e) + "] = " + std::to_string(sum) + ", bound " +
               std::to_string(bound));
        }
      }
  });
}

// loss(Q, K, V) = sum dO . O with O from the binary128 forward; its central difference in one
// f64 input element.
double numeric_gradient(const Problem& p, InputBuffers& in, GuardedBuffer& t, std::int64_t off,
                        const std::vector<double>& d_out) {
  double* x = static_cast<double*>(t.data()) + off;
  const double x0 = *x, h = 1e-6 * std::max(1.0, std::fabs(x0));
  auto loss = [&] {
    const reference::Result r =
        reference::run_sdpa(p, in.pointers(), reference::Precision::binary128);
    __float128 l = 0;
    for (std::size_t k = 0; k < d_out.size(); ++k) l += __float128(d_out[k]) * __float128(r.o[k]);
    return l;
  };
  *x = x0 + h;
  const __float128 up = loss();
  *x = x0 - h;
  const __float128 down = loss();
  *x = x0;
  return static_cast<double>((up - down) / (2 * __float128(h)));
}

// The gradients are the derivatives of the forward: one random element of each of Q, K, V
// against a central difference of the binary128 forward (f64 problems, unpacked layouts).
TEST(BackwardReference, GradientsAreTheForwardsDerivatives) {
  check(
      "dQ, dK, dV equal finite differences",
      [] {
        SamplerOptions o = small({DType::f64});
        o.varlen_packed = false;
        o.max_work = 1 << 10;
        const Case c = backward_case(*gen_case(o));
        Exact ex(c);
        const Problem& p = ex.p;
        InputBuffers& in = ex.in;
        const std::vector<double>& d_out = ex.d_out;
        const reference::Gradients& g = ex.g;
        const reference::Result& r = ex.r;
        double scale = 0;
        for (std::size_t x = 0; x < d_out.size(); ++x) scale += std::fabs(d_out[x] * r.o[x]);
        const double tol = 1e-7 * (1 + scale);
        const std::int64_t b = *rc::gen::inRange<std::int64_t>(0, p.batch);
        const std::int64_t lb = seqlen_q(p, b), sb = seqlen_kv(p, b);
        RC_PRE(lb > 0 && sb > 0 && p.head_dim_qk > 0 && p.head_dim_v > 0);
        const std::int64_t h = *rc::gen::inRange<std::int64_t>(0, p.heads_q);
        const std::int64_t hk = h / (p.heads_q / p.heads_kv);
        const std::int64_t i = *rc::gen::inRange<std::int64_t>(0, lb);
        const std::int64_t j = *rc::gen::inRange<std::int64_t>(0, sb);
        const std::int64_t e = *rc::gen::inRange<std::int64_t>(0, p.head_dim_qk);
        const std::int64_t d = *rc::gen::inRange<std::int64_t>(0, p.head_dim_v);
        auto at = [](std::int64_t bb, std::int64_t nh, std::int64_t hh, std::int64_t rows,
                     std::int64_t row, std::int64_t w, std::int64_t col) {
          return static_cast<std::size_t>(((bb * nh + hh) * rows + row) * w + col);
        };
        // An element a zero stride shares with others has their summed gradient: skip those.
        auto shared = [](const TensorLayout& t) {
          return t.stride[0] == 0 || t.stride[1] == 0 || t.stride[2] == 0 || t.stride[3] == 0;
        };
        const struct {
          const char* name;
          GuardedBuffer& buffer;
          const TensorLayout& layout;
          std::int64_t head, row, col;
          double analytic;
        } checks[] = {
            {"dq", in.q, p.q, h, i, e, g.dq[at(b, p.heads_q, h, p.len_q, i, p.head_dim_qk, e)]},
            {"dk", in.k, p.k, hk, j, e, g.dk[at(b, p.heads_kv, hk, p.len_kv, j, p.head_dim_qk, e)]},
            {"dv", in.v, p.v, hk, j, d, g.dv[at(b, p.heads_kv, hk, p.len_kv, j, p.head_dim_v, d)]}};
        for (const auto& t : checks) {
          if (shared(t.layout)) continue;
          const double numeric = numeric_gradient(
              p, in, t.buffer, element_offset(t.layout, false, b, t.head, t.row, t.col), d_out);
          if (!(std::fabs(numeric - t.analytic) <= tol)) {
            fail(format_case_id(c) + ": " + t.name + "[" + std::to_string(b) + "," +
                 std::to_string(t.head) + "," + std::to_string(t.row) + "," +
                 std::to_string(t.col) + "] = " + std::to_string(t.analytic) +
                 ", finite difference " + std::to_string(numeric));
          }
        }
      },
      0.3);
}

// Every backend with a backward passes any sampled backward case (plain and adversarial data).
class SampledBackward : public testing::TestWithParam<Combo> {};

TEST_P(SampledBackward, AnySampledBackwardCasePasses) {
  const Backend& b = *GetParam().backend;
  if (!b.capabilities().backward) GTEST_SKIP() << b.name() << " has no backward pass";
  check("any sampled backward case passes", [&] {
    SamplerOptions o;
    o.dtypes = b.capabilities().dtypes;
    o.weights_output = b.capabilities().weights;
    o.max_work = 1 << 16;
    o.max_len = 160;
    const Case c = backward_case(*gen_case(o));
    RC_TAG(c.data.generator);
    require_pass(b, c, {0, GetParam().target});
  });
}

INSTANTIATE_TEST_SUITE_P(All, SampledBackward, testing::ValuesIn(every_backend()), combo_name);

}  // namespace
}  // namespace sdpa::props
