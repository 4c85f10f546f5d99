// API-level tests of run_sdpa: errors for invalid problems and missing buffers, what is
// returned when, the shapes of every array, the error magnitudes, and that the inputs are
// left untouched.
#include "reference/sdpa_reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "conformance/engine/data_gen.hpp"
#include "core/case_id.hpp"
#include "tests/reference/test_util.hpp"

namespace sdpa::test {

using namespace sdpa::conformance;
namespace {

// The message of the std::invalid_argument that fn throws, or "" (and a failure) when it
// throws nothing or something else.
std::string invalid_argument_message(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::invalid_argument& e) {
    return e.what();
  } catch (...) {
    ADD_FAILURE() << "threw something other than std::invalid_argument";
    return "";
  }
  ADD_FAILURE() << "did not throw";
  return "";
}

TEST(ReferenceApi, InvalidProblemThrowsInvalidArgumentWithTheReason) {
  const Problem ok = make_problem(2, 4, 2, 3, 5, 4, 4);
  std::vector<std::pair<std::string, Problem>> bad;
  auto add = [&](const std::string& field, const std::function<void(Problem&)>& edit) {
    Problem p = ok;
    edit(p);
    bad.emplace_back(field, p);
  };
  add("hkv", [](Problem& p) { p.heads_kv = 3; });
  add("l", [](Problem& p) { p.len_q = -1; });
  add("p", [](Problem& p) { p.dropout_p = 1.0; });
  add("p", [](Problem& p) { p.dropout_p = -0.1; });
  add("softcap", [](Problem& p) { p.softcap = -1; });
  add("scale", [](Problem& p) { p.scale = kNaN; });
  add("scale", [](Problem& p) { p.scale = kInf; });
  add("kvlen", [](Problem& p) { p.seqlens_kv = {5}; });
  add("kvlen", [](Problem& p) { p.seqlens_kv = {5, 6}; });
  add("qlen", [](Problem& p) { p.seqlens_q = {-1, 2}; });
  add("mbc", [](Problem& p) { p.mask_broadcast = kBroadcastB; });
  add("mask", [](Problem& p) {
    p.mask = MaskKind::boolean;
    p.packed = true;
  });
  add("o", [](Problem& p) { p.o.stride[1] = 0; });  // heads of O overlap
  add("q", [](Problem& p) { p.q.stride[2] = -1; });
  Data d = zero_data(ok);
  for (const auto& entry : bad) {
    const std::string& field = entry.first;
    const Problem& p = entry.second;
    const std::string reason = validate(p);
    ASSERT_NE(reason, "") << "expected an invalid problem for field " << field;
    EXPECT_EQ(reason.rfind(field, 0), 0u) << "the reason names the field: " << reason;
    for (Precision prec : {Precision::f64, Precision::binary128}) {
      // Buffers of the valid problem: the reference must refuse before reading anything.
      const Buffers buf(ok, d);
      reference::Inputs in = buf.inputs();
      in.mask = in.q;
      const std::string msg = invalid_argument_message([&] { reference::run_sdpa(p, in, prec); });
      EXPECT_NE(msg.find(reason), std::string::npos)
          << "message '" << msg << "' lacks '" << reason << "'";
    }
  }
}

TEST(ReferenceApi, MaskTensorWithoutABufferIsAnError) {
  for (MaskKind kind : {MaskKind::boolean, MaskKind::additive}) {
    Problem p = make_problem(1, 2, 2, 3, 4, 2, 2);
    p.mask = kind;
    const Data d = zero_data(p);
    const Buffers buf(p, d);
    reference::Inputs in = buf.inputs();
    ASSERT_NE(in.mask, nullptr);
    EXPECT_NO_THROW(reference::run_sdpa(p, in));
    in.mask = nullptr;
    const std::string msg = invalid_argument_message([&] { reference::run_sdpa(p, in); });
    EXPECT_NE(msg.find("mask"), std::string::npos) << msg;
  }
}

TEST(ReferenceApi, MissingInputBufferOfANonEmptyTensorIsAnError) {
  Problem p = make_problem(1, 2, 1, 3, 4, 2, 2);
  const Data d = zero_data(p);
  const Buffers buf(p, d);
  for (int which = 0; which < 3; ++which) {
    reference::Inputs in = buf.inputs();
    (which == 0 ? in.q : which == 1 ? in.k : in.v) = nullptr;
    const std::string msg = invalid_argument_message([&] { reference::run_sdpa(p, in); });
    EXPECT_NE(msg.find(which == 0 ? "q" : which == 1 ? "k" : "v"), std::string::npos) << msg;
  }
  // Empty tensors need no buffer at all.
  for (Problem e : {make_problem(0, 2, 1, 3, 4, 2, 2), make_problem(1, 2, 1, 0, 0, 2, 2),
                    make_problem(1, 2, 1, 3, 0, 0, 0)}) {
    EXPECT_NO_THROW(reference::run_sdpa(e, reference::Inputs{}));
  }
  Problem no_keys = make_problem(1, 2, 1, 3, 0, 2, 2);
  const Buffers q_only(no_keys, zero_data(no_keys));
  EXPECT_NO_THROW(reference::run_sdpa(no_keys, {q_only.inputs().q, nullptr, nullptr, nullptr}));
}

TEST(ReferenceApi, ShapesOfEveryArrayAndWeightsOnlyWhenRequested) {
  for (bool packed : {false, true})
    for (bool weights : {false, true}) {
      Problem p = make_problem(3, 4, 2, 5, 7, 3, 6);
      p.seqlens_q = {5, 2, 0};
      p.seqlens_kv = {7, 7, 3};
      p.packed = packed;
      apply_layout(p, LayoutKind::bshd, 0, 0);
      p.want_weights = weights;
      p.want_lse = false;  // LSE and its magnitudes come back regardless
      Data d = zero_data(p);
      fill_random(p, d, 1);
      for (Precision prec : {Precision::f64, Precision::binary128}) {
        const Result r = run(p, d, prec);
        const std::size_t rows = 3 * 4 * 5;
        EXPECT_EQ(r.o.size(), rows * 6);
        EXPECT_EQ(r.mag_a.size(), rows * 6);
        EXPECT_EQ(r.mag_c.size(), rows * 6);
        EXPECT_EQ(r.mag_g.size(), rows * 6);
        EXPECT_EQ(r.lse.size(), rows);
        EXPECT_EQ(r.lse_mag_c.size(), rows);
        EXPECT_EQ(r.lse_mag_g.size(), rows);
        EXPECT_EQ(r.weights.size(), weights ? rows * 7 : 0u);
      }
    }
}

TEST(ReferenceApi, WeightsDoNotChangeTheOtherOutputs) {
  Problem p = make_problem(2, 2, 1, 4, 9, 3, 3);
  p.causal = Causal::top_left;
  p.dropout_p = 0.2;
  Data d = zero_data(p);
  fill_random(p, d, 4);
  Problem w = p;
  w.want_weights = true;
  Result a = run(p, d), b = run(w, d);
  b.weights.clear();
  EXPECT_EQ(diff_results(a, b), "");
}

TEST(ReferenceApi, MagnitudesOfAHandCase) {
  // Dqk = 1, Q = 1, K = {1, -1}, scale 1: logits s = {1, -1}, a_j = 1; V = {1, 0}.
  // P0 = e / (e + 1/e); O = P0; A = P0; C = G = sum_j P_j |V_j - O| = 2 P0 P1;
  // lse_mag_c = lse_mag_g = 1.
  Problem p = make_problem(1, 1, 1, 1, 2, 1, 1);
  p.scale = 1.0;
  Data d = zero_data(p);
  d.q[0] = 1;
  d.k[0] = 1;
  d.k[1] = -1;
  d.v[0] = 1;
  const double p0 = std::exp(1.0) / (std::exp(1.0) + std::exp(-1.0)), p1 = 1 - p0;
  for (Precision prec : {Precision::f64, Precision::binary128}) {
    const Result r = run(p, d, prec);
    EXPECT_NEAR(r.o[0], p0, 4 * kU64);
    EXPECT_NEAR(r.mag_a[0], p0, 4 * kU64);
    EXPECT_NEAR(r.mag_c[0], 2 * p0 * p1, 8 * kU64);
    EXPECT_NEAR(r.mag_g[0], 2 * p0 * p1, 8 * kU64);
    EXPECT_NEAR(r.lse_mag_c[0], 1.0, 4 * kU64);
    EXPECT_NEAR(r.lse_mag_g[0], 1.0, 4 * kU64);
  }
  // Negative scale: |scale| enters a_j, s_j keeps its sign but enters as |s_j|.
  p.scale = -2.0;
  const Result r = run(p, d);
  const double q0 = std::exp(-2.0) / (std::exp(-2.0) + std::exp(2.0)), q1 = 1 - q0;
  EXPECT_NEAR(r.mag_c[0], 2 * (2 * q0 * q1), 8 * kU64);
  EXPECT_NEAR(r.mag_g[0], 2 * (2 * q0 * q1), 8 * kU64);
  EXPECT_NEAR(r.lse_mag_g[0], 2.0, 4 * kU64);
}

TEST(ReferenceApi, UnderflowMagnitudeSumsTheKeysWithTinyWeights) {
  // Dqk = 1, Q = 1, scale 1: logits {0, -5, -20, -30} give weights e_j = exp(s_j) of which
  // exp(-5) > 2^-14 > exp(-20), exp(-30): U = (|V_2| + |V_3|) / z, z = sum_j e_j.
  Problem p = make_problem(1, 1, 1, 1, 4, 1, 2);
  p.scale = 1.0;
  Data d = zero_data(p);
  d.q[0] = 1;
  const double v[4][2] = {{1, -2}, {3, 4}, {-5, 6}, {7, -8}};
  for (int j = 0; j < 4; ++j) {
    d.k[j] = j == 1 ? -5.0 : -10.0 * j;
    d.v[2 * j] = v[j][0];
    d.v[2 * j + 1] = v[j][1];
  }
  const double z = 1 + std::exp(-5.0) + std::exp(-20.0) + std::exp(-30.0);
  for (Precision prec : {Precision::f64, Precision::binary128}) {
    const Result r = run(p, d, prec);
    EXPECT_NEAR(r.mag_u[0], 12 / z, 32 * kU64);
    EXPECT_NEAR(r.mag_u[1], 14 / z, 32 * kU64);
  }
  // Key 1 moved to -20 counts too.
  d.k[1] = -20;
  EXPECT_NEAR(run(p, d).mag_u[0], 15 / (1 + 2 * std::exp(-20.0) + std::exp(-30.0)), 32 * kU64);
  // Plain data (every weight well above 2^-14): U = 0.
  Problem q = make_problem(2, 2, 1, 5, 9, 4, 3);
  Data e = zero_data(q);
  fill_random(q, e, 5);
  for (double u : run(q, e).mag_u) EXPECT_EQ(u, 0.0);
}

TEST(ReferenceApi, MagnitudesAreZeroForMaskedRowsAndBoundTheOutput) {
  Problem p = make_problem(2, 4, 2, 6, 11, 5, 4, DType::f32);
  p.causal = Causal::bottom_right;  // L_b > S_b for b = 1: leading rows fully masked
  p.seqlens_kv = {11, 3};
  p.seqlens_q = {6, 5};
  p.mask = MaskKind::additive;
  p.softcap = 4;
  p.dropout_p = 0.3;
  Data d = zero_data(p);
  fill_random(p, d, 12);
  Rng rng(3);
  for (double& x : d.mask) x = rng.below(6) == 0 ? -kInf : rng.normal();
  for (Precision prec : {Precision::f64, Precision::binary128}) {
    const Result r = run(p, d, prec);
    int masked_rows = 0, live_rows = 0;
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::int64_t h = 0; h < 4; ++h)
        for (std::int64_t i = 0; i < 6; ++i) {
          const std::size_t row = ri(p, b, h, i);
          const bool masked = r.lse[row] == -kInf;
          masked_rows += masked;
          live_rows += !masked;
          EXPECT_GE(r.lse_mag_c[row], 0.0);
          EXPECT_GE(r.lse_mag_g[row], 0.0);
          if (masked) {
            EXPECT_EQ(r.lse_mag_c[row], 0.0);
            EXPECT_EQ(r.lse_mag_g[row], 0.0);
          }
          for (std::int64_t c = 0; c < 4; ++c) {
            const std::size_t x = oi(p, b, h, i, c);
            EXPECT_TRUE(std::isfinite(r.mag_a[x]) && std::isfinite(r.mag_c[x]) &&
                        std::isfinite(r.mag_g[x]) && std::isfinite(r.mag_u[x]));
            EXPECT_GE(r.mag_u[x], 0.0);
            EXPECT_GE(r.mag_c[x], 0.0);
            EXPECT_GE(r.mag_g[x], 0.0);
            // A = sum P |d V| >= |sum P d V| = |O| (up to the last bits of both sums).
            EXPECT_GE(r.mag_a[x] * (1 + 16 * kU64), std::fabs(r.o[x])) << b << h << i << c;
            if (masked) {
              EXPECT_EQ(r.o[x], 0.0);
              EXPECT_EQ(r.mag_a[x], 0.0);
              EXPECT_EQ(r.mag_c[x], 0.0);
              EXPECT_EQ(r.mag_g[x], 0.0);
              EXPECT_EQ(r.mag_u[x], 0.0);
            }
          }
        }
    EXPECT_GT(masked_rows, 0);
    EXPECT_GT(live_rows, 0);
  }
  // With V >= 0 no cancellation: A equals |O| to the last bits.
  Problem q = make_problem(1, 1, 1, 3, 40, 4, 4);
  Data e = zero_data(q);
  fill_random(q, e, 2);
  for (double& x : e.v) x = std::fabs(x);
  const Result r = run(q, e);
  for (std::size_t x = 0; x < r.o.size(); ++x) EXPECT_NEAR(r.mag_a[x], r.o[x], 8 * kU64 * r.o[x]);
}

TEST(ReferenceApi, InputsAreLeftUntouched) {
  const Case c = parse_case_id_or_throw(
      "b2.hq4.hkv2.l9.s13.dqk8.dv8.bf16.mask=add.mbc=h.causal=br.p0.2.lay=bshd.gap=3.off=5.seed4."
      "gen=normal");
  const InputBuffers in = make_inputs(c);
  for (Precision prec : {Precision::f64, Precision::binary128}) {
    reference::run_sdpa(c.problem, in.pointers(), prec);
    for (const GuardedBuffer* b : {&in.q, &in.k, &in.v, &*in.mask}) {
      const GuardViolation v = b->check_unchanged();
      EXPECT_FALSE(v) << v.message;
    }
  }
}

TEST(ReferenceApi, CaseIdEndToEndAndThreadArgument) {
  const Case c =
      parse_case_id_or_throw("b1.hq2.hkv1.l5.s7.dqk8.dv8.f32.causal=br.seed1.gen=normal");
  const InputBuffers in = make_inputs(c);
  const Result a = reference::run_sdpa(c.problem, in.pointers());
  const Result b = reference::run_sdpa(c.problem, in.pointers(), Precision::binary128);
  for (std::size_t x = 0; x < a.o.size(); ++x) {
    EXPECT_NEAR(a.o[x], b.o[x],
                8 * kU64 * (std::fabs(b.o[x]) + b.mag_a[x] + b.mag_c[x] + b.mag_g[x]));
  }
  // Any thread count, including "default" (<= 0), gives the same bits.
  for (int threads : {-1, 0, 1, 2, 7}) {
    EXPECT_EQ(
        diff_results(reference::run_sdpa(c.problem, in.pointers(), Precision::f64, threads), a), "")
        << threads;
  }
}

}  // namespace
}  // namespace sdpa::test
