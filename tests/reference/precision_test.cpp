// The f64 engine against the binary128 engine. binary128 rounds at 2^-113, so its result
// is the exact one as far as f64 can tell; the f64 engine must be within a few units of
// 2^-53 of it, relative to the magnitudes the reference itself reports:
//   |o64 - o128|     <= 8 u (|o| + A + G + C)
//   |lse64 - lse128| <= 8 u (|lse| + lse_mag_c + lse_mag_g)
// (u = 2^-53; the magnitudes are those of the binary128 result). Each test prints the
// worst ratio err / (u * magnitude) it saw; 8 leaves room for the worst case of the
// compensated sums (blocks of 8 fused multiply-adds) and the logit's propagation through
// the softmax.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "conformance/engine/data_gen.hpp"
#include "core/case_id.hpp"
#include "reference/sdpa_reference.hpp"
#include "tests/reference/test_util.hpp"

namespace sdpa::test {

using namespace sdpa::conformance;
namespace {

constexpr double kBound = 8.0;  // allowed err / (u * magnitude)

// Worst ratios seen by one comparison, and over the whole binary.
struct Ratios {
  double o = 0, lse = 0, weights_abs = 0, mags = 0;
  void merge(const Ratios& r) {
    o = std::max(o, r.o);
    lse = std::max(lse, r.lse);
    weights_abs = std::max(weights_abs, r.weights_abs);
    mags = std::max(mags, r.mags);
  }
};
Ratios& overall() {
  static Ratios r;
  return r;
}
Ratios& random_property_worst() {
  static Ratios r;
  return r;
}

void report(const char* what, const Ratios& r) {
  overall().merge(r);
  std::printf(
      "[ precision ] %s: worst |o64-o128|/(u*mag) = %.3f, lse %.3f, |w64-w128| = %.3g, "
      "magnitudes rel %.3g (all tests so far: o %.3f, lse %.3f)\n",
      what, r.o, r.lse, r.weights_abs, r.mags, overall().o, overall().lse);
}

// err / (u * mag + 2^-1074): the error in units of roundoff of the magnitude, and at least
// one f64 subnormal spacing: below 2^-1022 an f64 value is a multiple of 2^-1074 whatever its
// magnitude, so the f64 engine cannot come within 8 u of binary128 there (2 of 120 random
// runs of RandomProblemsF64WithinBoundsOfBinary128 failed for it). Equal values give 0, 0
// against -0 included (u * mag alone rounds to 0 for a magnitude below 2^-1022, and 0 / 0
// was a NaN ratio, once in 83 random runs).
double roundoff_ratio(double err, double mag) {
  if (err == 0) return 0;
  return err / (kU64 * mag + std::numeric_limits<double>::denorm_min());
}

// All digits of a double, for failure messages (std::to_string prints 1e-316 as 0.000000).
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Compares the two engines on one problem; returns the worst ratios, or a message naming
// the first element out of bounds in *failure.
Ratios compare(const Problem& p, const Result& r64, const Result& r128, std::string* failure,
               double bound = kBound) {
  Ratios w;
  auto fail = [&](const std::string& m) {
    if (failure->empty()) *failure = m;
  };
  if (r64.o.size() != r128.o.size() || r64.lse.size() != r128.lse.size() ||
      r64.weights.size() != r128.weights.size()) {
    fail("result sizes differ");
    return w;
  }
  const auto Dv = static_cast<std::size_t>(std::max<std::int64_t>(p.head_dim_v, 1));
  for (std::size_t x = 0; x < r64.o.size(); ++x) {
    const double a = r64.o[x], b = r128.o[x];
    if (std::isnan(a) || std::isnan(b)) {
      if (std::isnan(a) != std::isnan(b))
        fail("NaN in one engine only at o[" + std::to_string(x) + "]");
      continue;
    }
    // In the magnitudes' stored units (2^-mag_exp), so that nothing overflows.
    const int e = static_cast<int>(r128.mag_exp[x / Dv]);
    if (r64.mag_exp[x / Dv] != r128.mag_exp[x / Dv])
      fail("mag_exp differs at o[" + std::to_string(x) + "]");
    const double mag = std::ldexp(std::fabs(b), -e) + r128.mag_a[x] + r128.mag_g[x] + r128.mag_c[x];
    const double err = std::ldexp(std::fabs(a - b), -e);
    if (mag == 0) {
      if (err != 0) fail("o[" + std::to_string(x) + "] differs where the magnitude is 0");
      continue;
    }
    const double ratio = roundoff_ratio(err, mag);
    w.o = std::max(w.o, ratio);
    if (!(ratio <= bound)) {
      fail("o[" + std::to_string(x) + "] (row " + std::to_string(x / Dv) + "): f64 " + num(a) +
           " vs binary128 " + num(b) + ", ratio " + num(ratio));
    }
    // The magnitudes only scale tolerances: a loose relative agreement is enough.
    const double ms[3][2] = {{r64.mag_a[x], r128.mag_a[x]},
                             {r64.mag_c[x], r128.mag_c[x]},
                             {r64.mag_g[x], r128.mag_g[x]}};
    for (const auto& m : ms) {
      const double scale =
          m[1] + r128.mag_a[x] * (1 + r128.lse_mag_c[x / Dv] + r128.lse_mag_g[x / Dv]);
      // Below the smallest normal double a magnitude has no relative precision; it enters
      // a tolerance only times a unit roundoff, far below every floor of the table.
      const double diff = std::fabs(m[0] - m[1]);
      const double rel = diff < std::numeric_limits<double>::min() ? 0
                         : scale > 0                               ? diff / scale
                                                                   : diff;
      w.mags = std::max(w.mags, rel);
      if (!(rel <= 1e-12)) {
        fail("magnitude at o[" + std::to_string(x) + "] differs: f64 " + num(m[0]) +
             " vs binary128 " + num(m[1]));
      }
    }
  }
  for (std::size_t x = 0; x < r64.lse.size(); ++x) {
    const double a = r64.lse[x], b = r128.lse[x];
    if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) {
      if (!same_bits(a, b) && !(std::isnan(a) && std::isnan(b))) {
        fail("lse[" + std::to_string(x) + "]: " + num(a) + " vs " + num(b));
      }
      continue;
    }
    const double mag = std::fabs(b) + r128.lse_mag_c[x] + r128.lse_mag_g[x];
    const double err = std::fabs(a - b);
    if (mag == 0) {
      if (err != 0) fail("lse[" + std::to_string(x) + "] differs where the magnitude is 0");
      continue;
    }
    const double ratio = roundoff_ratio(err, mag);
    w.lse = std::max(w.lse, ratio);
    if (!(ratio <= bound)) {
      fail("lse[" + std::to_string(x) + "]: f64 " + num(a) + " vs binary128 " + num(b) +
           ", ratio " + num(ratio));
    }
  }
  for (std::size_t x = 0; x < r64.weights.size(); ++x) {
    const double a = r64.weights[x], b = r128.weights[x];
    if (std::isnan(a) || std::isnan(b)) continue;
    const double err = std::fabs(a - b);
    w.weights_abs = std::max(w.weights_abs, err);
    if (!(err <= 1e-13))
      fail("weights[" + std::to_string(x) + "] differ by " + std::to_string(err));
  }
  return w;
}

// Runs both engines on a case ID's data.
Ratios check_case(const std::string& id, double bound = kBound) {
  Case c = parse_case_id_or_throw(id);
  c.problem.want_lse = c.problem.want_weights = true;
  const InputBuffers in = make_inputs(c);
  const Result r64 = reference::run_sdpa(c.problem, in.pointers(), Precision::f64, 1);
  const Result r128 = reference::run_sdpa(c.problem, in.pointers(), Precision::binary128, 1);
  std::string failure;
  const Ratios w = compare(c.problem, r64, r128, &failure, bound);
  EXPECT_EQ(failure, "") << id;
  bool any_finite = false;
  for (double x : r64.lse) any_finite = any_finite || std::isfinite(x);
  EXPECT_TRUE(any_finite) << id << ": every row masked, the case compares nothing";
  return w;
}

TEST(Precision, CaseSweepAcrossTypesMasksSoftcapAndDropout) {
  const char* ids[] = {
      "b1.hq2.hkv1.l16.s300.dqk128.dv128.f32.causal=br.seed1.gen=normal",
      "b2.hq4.hkv2.l33.s65.dqk64.dv64.bf16.mask=add.seed2.gen=normal",
      "b1.hq2.l20.s127.dqk96.dv32.f16.mask=bool.softcap=30.seed3.gen=uniform",
      "b2.hq2.l17.s200.dqk128.dv64.f64.win=32_8_br.p0.3.dseed5.seed4.gen=normal",
      "b1.hq1.l32.s300.dqk32.dv128.f32.softcap=5.scale=0.5.seed5.gen=sparse",
      "b2.hq3.l9.s250.dqk80.dv80.bf16.causal=tl.qlen=9_4.kvlen=250_100.seed6.gen=normal",
      "b1.hq2.l24.s150.dqk128.dv128.f16.mask=add.mbc=bh.scale=-0.2.p0.1.dseed9.seed7.gen=uniform",
      "b3.hq2.l40.s100.dqk48.dv48.f64.causal=br.qlen=40_1_0.kvlen=100_37_5.packed.seed9.gen=normal",
      "b1.hq2.l12.s300.dqk1.dv3.f32.p0.9.dseed3.seed10.gen=normal",
      "b1.hq1.l8.s7.dqk128.dv1.f64.win=2_2_tl.seed11.gen=normal",
  };
  Ratios all;
  for (const char* id : ids) all.merge(check_case(id));
  report("case sweep", all);
}

TEST(Precision, LargeLogitsScale50) {
  // |logits| of several hundred: the softmax is nearly one-hot and exp(s) alone would
  // overflow or underflow; the shift by the maximum must keep everything finite.
  Ratios all;
  for (const char* id : {"b1.hq2.l16.s200.dqk64.dv64.f32.scale=50.seed8.gen=normal",
                         "b1.hq1.l8.s100.dqk128.dv16.bf16.scale=-50.causal=tl.seed12.gen=normal",
                         "b1.hq1.l8.s64.dqk16.dv16.f32.scale=50.softcap=20.seed13.gen=uniform"}) {
    all.merge(check_case(id));
  }
  report("scale 50", all);
}

TEST(Precision, ValuesNearTheF64MaximumStayFinite) {
  // V in [max/3, 2 max/3): sum_j e_j V_j leaves the f64 range although O does not; the f64
  // engine scales such a head's V by a power of two (binary128 has the exponent range).
  Ratios all;
  for (const char* id :
       {"b1.hq1.l2.s200.dqk8.f64.seed1.gen=v_near_max",
        "b2.hq2.hkv1.l9.s300.dqk16.dv8.f64.causal=br.p0.5.dseed2.lse.seed2.gen=v_near_max",
        "b1.hq2.l5.s40.dqk4.f64.mask=add.softcap=5.seed3.gen=v_near_max",
        "b1.hq2.hkv2.l4.s24.dqk32.dv3.f64.scale=4.lse.seed210869.gen=v_near_max"}) {
    Case c = parse_case_id_or_throw(id);
    const Result r = reference::run_sdpa(c.problem, make_inputs(c).pointers());
    for (double x : r.o) EXPECT_TRUE(std::isfinite(x)) << id;
    for (double x : r.mag_a) EXPECT_TRUE(std::isfinite(x)) << id;
    all.merge(check_case(id));
  }
  report("V near the f64 maximum", all);
}

TEST(Precision, StronglyNegativeAndHugeLogitsStayFinite) {
  // Dqk = 1, Q = 1, scale 50: logits 50 * K_j. Row groups: all about -1000 (exp underflows
  // to 0 without the shift), all about +1000 (exp overflows), and one +1000 among -1000s.
  Problem p = make_problem(1, 1, 1, 3, 6, 1, 2, DType::f32);
  p.scale = 50.0;
  p.mask = MaskKind::additive;
  p.want_lse = p.want_weights = true;
  Data d = zero_data(p);
  for (std::int64_t i = 0; i < 3; ++i) d.q[qi(p, 0, 0, i, 0)] = 1;
  for (std::int64_t j = 0; j < 6; ++j) {
    d.k[ki(p, 0, 0, j, 0)] = 0.25 * static_cast<double>(j % 3);
    d.v[vi(p, 0, 0, j, 0)] = static_cast<double>(j + 1);
    d.v[vi(p, 0, 0, j, 1)] = -2.5 * static_cast<double>(j);
  }
  // The bias moves each row: -1000, +1000, and +1000 at key 5 only (-1000 elsewhere).
  for (std::int64_t j = 0; j < 6; ++j) {
    d.mask[mi(p, 0, 0, 0, j)] = -1000;
    d.mask[mi(p, 0, 0, 1, j)] = 1000;
    d.mask[mi(p, 0, 0, 2, j)] = j == 5 ? 1000 : -1000;
  }
  const Result r64 = run(p, d), r128 = run(p, d, Precision::binary128);
  for (double x : r64.o) EXPECT_TRUE(std::isfinite(x));
  for (double x : r64.lse) EXPECT_TRUE(std::isfinite(x));
  for (std::int64_t i = 0; i < 3; ++i) {
    double sum = 0;
    for (std::int64_t j = 0; j < 6; ++j) sum += r64.weights[mi(p, 0, 0, i, j)];
    EXPECT_NEAR(sum, 1.0, 8 * kU64) << "row " << i;
  }
  // Logits of rows 0 and 1: bias + {0, 12.5, 25, 0, 12.5, 25}.
  const double z = 2 * (std::exp(-25.0) + std::exp(-12.5) + 1.0);
  EXPECT_NEAR(r64.lse[0], -975 + std::log(z), 8 * kU64 * 1000);
  EXPECT_NEAR(r64.lse[1], 1025 + std::log(z), 8 * kU64 * 1000);
  // Row 2: key 5 dominates by ~2000: O = V_5 to the last bit, LSE = 1025.
  EXPECT_EQ(r64.o[oi(p, 0, 0, 2, 0)], 6.0);
  EXPECT_EQ(r64.o[oi(p, 0, 0, 2, 1)], -12.5);
  EXPECT_EQ(r64.lse[2], 1025.0);
  std::string failure;
  report("overflow safety", compare(p, r64, r128, &failure));
  EXPECT_EQ(failure, "");
}

TEST(Precision, IntegerDataHasExactLogitsAndATighterBound) {
  // gen=int: entries in {-2, ..., 2}, a power-of-two scale: every logit is exact in both
  // engines, so only exp, the sums and the division remain: the bound keeps only |o| + A
  // (|lse| + lse_mag_c for LSE), without the logit terms G and C.
  double worst_o = 0, worst_lse = 0;
  for (const char* id : {"b1.hq2.l32.s300.dqk128.dv128.f32.scale=0.25.seed10.gen=int",
                         "b2.hq2.hkv1.l16.s77.dqk64.dv32.bf16.scale=0.125.causal=br.seed11.gen=int",
                         "b1.hq1.l20.s50.dqk16.dv8.f16.scale=1.mask=add.seed12.gen=int"}) {
    Case c = parse_case_id_or_throw(id);
    const InputBuffers in = make_inputs(c);
    const Result a = reference::run_sdpa(c.problem, in.pointers(), Precision::f64, 1);
    const Result b = reference::run_sdpa(c.problem, in.pointers(), Precision::binary128, 1);
    for (std::size_t x = 0; x < a.o.size(); ++x) {
      const double mag = std::fabs(b.o[x]) + b.mag_a[x];
      const double err = std::fabs(a.o[x] - b.o[x]);
      if (mag == 0) {
        EXPECT_EQ(err, 0.0) << id;
        continue;
      }
      worst_o = std::max(worst_o, err / (kU64 * mag));
      EXPECT_LE(err, kBound * kU64 * mag) << id << " o[" << x << "]";
    }
    for (std::size_t x = 0; x < a.lse.size(); ++x) {
      if (!std::isfinite(b.lse[x])) {
        EXPECT_EQ(a.lse[x], b.lse[x]);
        continue;
      }
      const double mag = std::fabs(b.lse[x]) + b.lse_mag_c[x];
      const double err = std::fabs(a.lse[x] - b.lse[x]);
      worst_lse = std::max(worst_lse, mag > 0 ? err / (kU64 * mag) : 0.0);
      EXPECT_LE(err, kBound * kU64 * mag) << id << " lse[" << x << "]";
    }
  }
  std::printf("[ precision ] int generator: worst o %.3f, lse %.3f (bound %.0f, no G/C terms)\n",
              worst_o, worst_lse, kBound);
}

TEST(Precision, IntegerDataWithUniformWeightsIsExactInBothEngines) {
  // scale = 0 makes P uniform; with S = 256 the mean of small integers is a dyadic
  // rational: O, the weights (1/256) and the magnitudes are exact, LSE is log(256)
  // correctly rounded.
  Case c = parse_case_id_or_throw("b1.hq2.hkv1.l4.s256.dqk16.dv64.f32.scale=0.seed3.gen=int");
  c.problem.want_weights = true;
  const Problem& p = c.problem;
  const InputBuffers in = make_inputs(c);
  const Result a = reference::run_sdpa(p, in.pointers(), Precision::f64, 1);
  const Result b = reference::run_sdpa(p, in.pointers(), Precision::binary128, 1);
  EXPECT_EQ(diff_bits(a.o, b.o, "o"), "");
  EXPECT_EQ(diff_bits(a.lse, b.lse, "lse"), "");
  EXPECT_EQ(diff_bits(a.weights, b.weights, "weights"), "");
  EXPECT_EQ(diff_bits(a.mag_a, b.mag_a, "mag_a"), "");
  for (std::int64_t h = 0; h < 2; ++h)
    for (std::int64_t i = 0; i < 4; ++i) {
      EXPECT_EQ(a.lse[ri(p, 0, h, i)], std::log(256.0));
      for (std::int64_t d = 0; d < 64; ++d) {
        std::int64_t sum = 0, abs_sum = 0;
        for (std::int64_t j = 0; j < 256; ++j) {
          const auto v = static_cast<std::int64_t>(
              load_as_double(p.dtype, in.v.data(), j * p.v.stride[2] + d * p.v.stride[3]));
          sum += v;
          abs_sum += v < 0 ? -v : v;
        }
        EXPECT_EQ(a.o[oi(p, 0, h, i, d)], static_cast<double>(sum) / 256);
        EXPECT_EQ(a.mag_a[oi(p, 0, h, i, d)], static_cast<double>(abs_sum) / 256);
      }
      for (std::int64_t j = 0; j < 256; ++j) EXPECT_EQ(a.weights[mi(p, 0, h, i, j)], 1.0 / 256);
    }
}

TEST(Precision, SignedZerosAgreeWhateverTheMagnitude) {
  // 0 and -0 are the same value: the ratio is 0, not NaN. With a magnitude below
  // 2^-1022, u * mag rounds to 0 and err / (u * mag) was 0 / 0 = NaN, a failure
  // (RandomProblemsF64WithinBoundsOfBinary128 on a random seed, once in 83 runs:
  // "o[16] (row 1): f64 0.000000 vs binary128 -0.000000, ratio -nan").
  const Problem p = make_problem(1, 1, 1, 1, 1, 1, 1, DType::f64);
  const double tiny = std::numeric_limits<double>::denorm_min();
  Result r64;
  r64.o = {0.0};
  r64.lse = {0.0};
  r64.mag_a = {tiny};
  r64.mag_c = {0.0};
  r64.mag_g = {0.0};
  r64.mag_exp = {0.0};
  r64.lse_mag_c = {tiny};
  r64.lse_mag_g = {0.0};
  Result r128 = r64;
  r128.o = {-0.0};
  r128.lse = {-0.0};
  std::string failure;
  Ratios w = compare(p, r64, r128, &failure);
  EXPECT_EQ(failure, "");
  EXPECT_EQ(w.o, 0.0);
  EXPECT_EQ(w.lse, 0.0);

  // A real difference against a subnormal magnitude still fails: 9 spacings (2^-1074),
  // beyond 8 (u mag + 2^-1074).
  r64.o = {9 * tiny};
  failure.clear();
  w = compare(p, r64, r128, &failure);
  EXPECT_NE(failure.find("o[0] (row 0)"), std::string::npos) << failure;
  EXPECT_GT(w.o, kBound);
}

TEST(Precision, SubnormalResultsAgreeWithinASpacing) {
  // Below 2^-1022 an f64 value is a multiple of 2^-1074, whatever its magnitude, so the
  // f64 engine cannot agree with binary128 to 8 u of it. Values of two random seeds of
  // RandomProblemsF64WithinBoundsOfBinary128 that failed for it (2 of 120 runs):
  const Problem p = make_problem(1, 1, 1, 1, 1, 1, 1, DType::f64);
  Result r64;
  r64.o = {2.2343385145686301e-316};  // one spacing (2^-1074) below the binary128 result
  r64.lse = {1.0};
  r64.mag_a = {2.2343385639751947e-316};
  r64.mag_c = {1.6285050669349175e-313};
  r64.mag_g = {1.2592127123062734e-312};
  r64.mag_exp = {0.0};
  r64.lse_mag_c = {0.0};
  r64.lse_mag_g = {0.0};
  Result r128 = r64;
  r128.o = {2.2343385639751947e-316};
  std::string failure;
  EXPECT_LE(compare(p, r64, r128, &failure).o, kBound);
  EXPECT_EQ(failure, "");
  // A magnitude that underflows to 0 in f64 but is 22 spacings in binary128.
  r64.o = r128.o;
  r64.mag_a = {0.0};
  r128.mag_a = {1.0869444208507424e-322};
  failure.clear();
  compare(p, r64, r128, &failure);
  EXPECT_EQ(failure, "");
  // Normal values keep the relative bound: 18 u apart is too far.
  r128.o = {1.0};
  r128.mag_a = r128.mag_c = r128.mag_g = {0.0};
  r64 = r128;
  r64.o = {1.0 + 18 * kU64};  // exact: a multiple of the spacing 2 u of [1, 2)
  failure.clear();
  EXPECT_GT(compare(p, r64, r128, &failure).o, kBound);
  EXPECT_NE(failure, "");
}

RC_GTEST_PROP(Precision, RandomProblemsF64WithinBoundsOfBinary128, ()) {
  const std::int64_t hkv = *rc::gen::inRange<std::int64_t>(1, 3);
  const std::int64_t g = *rc::gen::inRange<std::int64_t>(1, 3);
  const std::int64_t S = *rc::gen::element<std::int64_t>(1, 2, 7, 31, 32, 33, 100, 257, 300);
  const std::int64_t L = *rc::gen::inRange<std::int64_t>(1, 5);
  const std::int64_t Dqk = *rc::gen::element<std::int64_t>(1, 3, 8, 17, 64, 100, 128);
  const std::int64_t Dv = *rc::gen::element<std::int64_t>(1, 5, 16, 64, 128);
  const DType t = *rc::gen::element(DType::f64, DType::f32, DType::f16, DType::bf16);
  Problem p = make_problem(1, hkv * g, hkv, L, S, Dqk, Dv, t);
  p.causal = *rc::gen::element(Causal::none, Causal::top_left, Causal::bottom_right);
  p.mask = *rc::gen::element(MaskKind::none, MaskKind::boolean, MaskKind::additive);
  if (*rc::gen::arbitrary<bool>()) p.softcap = *rc::gen::element(1.0, 10.0, 50.0);
  if (*rc::gen::arbitrary<bool>()) p.scale = *rc::gen::element(0.01, 0.3, -1.0, 4.0, 50.0);
  if (*rc::gen::arbitrary<bool>()) {
    p.dropout_p = *rc::gen::element(0.1, 0.5, 0.8);
    p.dropout_seed = *rc::gen::arbitrary<std::uint32_t>();
  }
  p.want_lse = p.want_weights = true;
  Data d = zero_data(p);
  const std::uint64_t seed = *rc::gen::arbitrary<std::uint64_t>();
  fill_random(p, d, seed);
  Rng rng(~seed);
  for (double& x : d.mask) {
    x = p.mask == MaskKind::boolean ? rng.below(4) != 0
                                    : (rng.below(8) == 0 ? -kInf : round_to(t, 4 * rng.normal()));
  }
  const Result r64 = run(p, d), r128 = run(p, d, Precision::binary128);
  std::string failure;
  random_property_worst().merge(compare(p, r64, r128, &failure));
  if (!failure.empty()) RC_FAIL(failure);
}

TEST(Precision, ZZWorstRatioOfThisBinary) {
  // Runs last in this file: the worst ratios over every comparison above.
  report("random problems (RapidCheck)", random_property_worst());
  EXPECT_LE(overall().o, kBound);
  EXPECT_LE(overall().lse, kBound);
}

}  // namespace
}  // namespace sdpa::test
