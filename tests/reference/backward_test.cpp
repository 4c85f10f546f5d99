// The reference's backward (reference/sdpa_backward.hpp) against what the gradients are:
// finite differences of the binary128 forward (the derivative itself, through GQA sums,
// dropout, softcap, masks and Dqk != Dv), the binary128 backward (the f64 engine's
// compensated sums), and the contract's zeros, NaNs and invariants (docs/SEMANTICS.md,
// "Backward"). Data and dO come from fixed seeds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "conformance/engine/data_gen.hpp"
#include "core/case_id.hpp"
#include "core/dtype.hpp"
#include "reference/sdpa_backward.hpp"
#include "reference/sdpa_reference.hpp"

namespace sdpa {
namespace {

using conformance::make_inputs;
using reference::Gradients;
using reference::Precision;

// dO, logical [B, Hq, L, Dv]: standard normal values rounded to the problem's type.
std::vector<double> make_d_out(const Problem& p, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<double> d(static_cast<std::size_t>(p.batch * p.heads_q * p.len_q * p.head_dim_v));
  for (double& x : d) {
    double stored = 0;
    store_from_double(p.dtype, &stored, 0, normal(rng));
    x = load_as_double(p.dtype, &stored, 0);
  }
  return d;
}

// Features each case exercises; the f64 ones are also differentiated numerically.
const char* const kCases[] = {
    "b2.hq4.hkv2.l7.s9.dqk8.dv5.f64.seed1.gen=normal",
    "b1.hq2.hkv1.l6.s11.dqk4.dv4.f64.causal=br.seed2.gen=normal",
    "b1.hq2.hkv2.l5.s7.dqk4.dv6.f64.softcap=2.seed3.gen=normal",
    "b1.hq2.hkv2.l6.s8.dqk4.dv4.f64.mask=add.seed4.gen=normal",
    "b1.hq2.hkv1.l6.s8.dqk4.dv4.f64.p0.3.dseed7.seed5.gen=normal",
    "b2.hq2.hkv2.l6.s7.dqk4.dv4.f64.win=2_1_br.qlen=6_3.kvlen=7_4.seed6.gen=normal",
    "b1.hq4.hkv1.l9.s13.dqk6.dv3.f64.causal=tl.mask=add.softcap=5.p0.2.dseed3.seed7.gen=normal",
    "b3.hq2.hkv2.l8.s9.dqk8.dv8.f32.qlen=3_0_8.kvlen=9_1_0.packed.lay=bshd.seed5.gen=normal",
    "b2.hq8.hkv2.l33.s70.dqk32.dv16.bf16.causal=br.mask=add.p0.1.dseed1.seed8.gen=normal",
};

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

TEST(ReferenceBackward, F64AgreesWithBinary128) {
  for (const char* id : kCases) {
    const Case c = parse_case_id_or_throw(id);
    InputBuffers in = make_inputs(c);
    const std::vector<double> d_out = make_d_out(c.problem, 11);
    const Gradients a = reference::run_sdpa_backward(c.problem, in.pointers(), d_out);
    const Gradients b =
        reference::run_sdpa_backward(c.problem, in.pointers(), d_out, Precision::binary128);
    for (const auto& [x, y, name] :
         {std::tuple{&a.dq, &b.dq, "dq"}, std::tuple{&a.dk, &b.dk, "dk"},
          std::tuple{&a.dv, &b.dv, "dv"}, std::tuple{&a.ds, &b.ds, "ds"}}) {
      ASSERT_EQ(x->size(), y->size()) << id << " " << name;
      // A few units of 2^-53 of the tensor's largest element: cancellation inside an element
      // (dP - D) is relative to its terms, which the largest element stands for.
      const double tol = 0x1p-48 * max_abs(*y);
      for (std::size_t e = 0; e < x->size(); ++e)
        ASSERT_LE(std::fabs((*x)[e] - (*y)[e]), tol) << id << " " << name << "[" << e << "]";
    }
  }
}

// loss = sum_i dO_i . O_i with O from the binary128 forward.
__float128 loss_of(const Problem& p, InputBuffers& in, const std::vector<double>& d_out) {
  const reference::Result r = reference::run_sdpa(p, in.pointers(), Precision::binary128);
  __float128 loss = 0;
  for (std::size_t x = 0; x < d_out.size(); ++x) loss += __float128(d_out[x]) * __float128(r.o[x]);
  return loss;
}

// Central difference of the loss in element `offset` of `buffer` (an f64 tensor).
double numeric_gradient(const Problem& p, InputBuffers& in, GuardedBuffer& buffer,
                        std::int64_t offset, const std::vector<double>& d_out) {
  double* x = static_cast<double*>(buffer.data()) + offset;
  const double x0 = *x, h = 1e-6 * std::max(1.0, std::fabs(x0));
  *x = x0 + h;
  const __float128 up = loss_of(p, in, d_out);
  *x = x0 - h;
  const __float128 down = loss_of(p, in, d_out);
  *x = x0;
  return static_cast<double>((up - down) / (2 * __float128(h)));
}

TEST(ReferenceBackward, EqualsFiniteDifferencesOfTheForward) {
  for (const char* id : kCases) {
    const Case c = parse_case_id_or_throw(id);
    const Problem& p = c.problem;
    if (p.dtype != DType::f64 || p.packed) continue;
    InputBuffers in = make_inputs(c);
    const std::vector<double> d_out = make_d_out(p, 12);
    const Gradients g = reference::run_sdpa_backward(p, in.pointers(), d_out);
    // The loss's own scale: the finite difference carries its rounding over 2h.
    const reference::Result r = reference::run_sdpa(p, in.pointers());
    double scale = 0;
    for (std::size_t x = 0; x < d_out.size(); ++x) scale += std::fabs(d_out[x] * r.o[x]);
    const double tol = 1e-7 * (1 + scale);
    std::mt19937_64 rng(3);
    const auto pick = [&rng](std::int64_t n) {
      return std::uniform_int_distribution<std::int64_t>(0, n - 1)(rng);
    };
    const std::int64_t B = p.batch, H = p.heads_q, Hkv = p.heads_kv;
    for (int t = 0; t < 6; ++t) {
      const std::int64_t b = pick(B), h = pick(H), hk = pick(Hkv);
      const std::int64_t i = pick(seqlen_q(p, b)),
                         j = pick(std::max<std::int64_t>(seqlen_kv(p, b), 1));
      if (seqlen_kv(p, b) == 0) continue;
      const std::int64_t e = pick(p.head_dim_qk), d = pick(p.head_dim_v);
      const auto idx = [](std::int64_t bb, std::int64_t nh, std::int64_t hh, std::int64_t rows,
                          std::int64_t r, std::int64_t width, std::int64_t col) {
        return static_cast<std::size_t>(((bb * nh + hh) * rows + r) * width + col);
      };
      const double dq =
          numeric_gradient(p, in, in.q, element_offset(p.q, false, b, h, i, e), d_out);
      EXPECT_NEAR(g.dq[idx(b, H, h, p.len_q, i, p.head_dim_qk, e)], dq, tol)
          << id << " dq[" << b << "," << h << "," << i << "," << e << "]";
      const double dk =
          numeric_gradient(p, in, in.k, element_offset(p.k, false, b, hk, j, e), d_out);
      EXPECT_NEAR(g.dk[idx(b, Hkv, hk, p.len_kv, j, p.head_dim_qk, e)], dk, tol)
          << id << " dk[" << b << "," << hk << "," << j << "," << e << "]";
      const double dv =
          numeric_gradient(p, in, in.v, element_offset(p.v, false, b, hk, j, d), d_out);
      EXPECT_NEAR(g.dv[idx(b, Hkv, hk, p.len_kv, j, p.head_dim_v, d)], dv, tol)
          << id << " dv[" << b << "," << hk << "," << j << "," << d << "]";
      if (p.mask == MaskKind::additive) {
        const StridedView mv = mask_view(p);
        const std::int64_t mo =
            b * mv.stride[0] + h * mv.stride[1] + i * mv.stride[2] + j * mv.stride[3];
        const double db = numeric_gradient(p, in, *in.mask, mo, d_out);
        // A broadcast mask element is shared: its gradient is the sum over the (b, h) sharing
        // it, which the unreduced dS does not hold; this test's masks are not broadcast.
        ASSERT_EQ(p.mask_broadcast, 0) << id;
        EXPECT_NEAR(g.ds[idx(b, H, h, p.len_q, i, p.len_kv, j)], db, tol)
            << id << " ds[" << b << "," << h << "," << i << "," << j << "]";
      }
    }
  }
}

TEST(ReferenceBackward, RowsOfDsSumToZero) {
  // sum_j P_j (dP_j - D) = D - D sum_j P_j = 0, with or without dropout; to within rounding
  // of the terms, whose size |dO_i| . |O_i| (D's terms) and |dS_ij| stand for.
  for (const char* id : kCases) {
    const Case c = parse_case_id_or_throw(id);
    const Problem& p = c.problem;
    if (p.mask != MaskKind::additive) continue;
    InputBuffers in = make_inputs(c);
    const std::vector<double> d_out = make_d_out(p, 13);
    const Gradients g = reference::run_sdpa_backward(p, in.pointers(), d_out);
    const reference::Result r = reference::run_sdpa(p, in.pointers());
    for (std::int64_t row = 0; row < p.batch * p.heads_q * p.len_q; ++row) {
      double sum = 0, mag = 0;
      for (std::int64_t j = 0; j < p.len_kv; ++j) {
        sum += g.ds[static_cast<std::size_t>(row * p.len_kv + j)];
        mag += std::fabs(g.ds[static_cast<std::size_t>(row * p.len_kv + j)]);
      }
      for (std::int64_t d = 0; d < p.head_dim_v; ++d) {
        const auto x = static_cast<std::size_t>(row * p.head_dim_v + d);
        mag += std::fabs(d_out[x] * r.o[x]);
      }
      EXPECT_LE(std::fabs(sum), 1e-13 * mag) << id << " row " << row;
    }
  }
}

// d bias is dS summed over the mask's broadcast dimensions: recomputed here from dS by the
// mask's own indexing (broadcast dimensions read at 0), for every broadcast kind; a mask
// broadcast over the keys gets the rows' sums of dS, zero (the invariant above).
TEST(ReferenceBackward, DBiasIsDsSummedOverTheBroadcastDimensions) {
  for (const char* mbc : {"", ".mbc=b", ".mbc=h", ".mbc=hl", ".mbc=bs", ".mbc=s", ".mbc=bhls"}) {
    const std::string id = std::string("b2.hq4.hkv2.l6.s9.dqk4.dv4.f64.causal=br.mask=add") + mbc +
                           ".bwd.dbias.seed9.gen=normal";
    const Case c = parse_case_id_or_throw(id);
    const Problem& p = c.problem;
    InputBuffers in = make_inputs(c);
    const std::vector<double> d_out = make_d_out(p, 17);
    const Gradients g = reference::run_sdpa_backward(p, in.pointers(), d_out);
    const std::int64_t B = p.batch, H = p.heads_q, L = p.len_q, S = p.len_kv;
    ASSERT_EQ(g.dbias.size(), static_cast<std::size_t>(mask_elements(p))) << id;
    const bool bb = p.mask_broadcast & kBroadcastB, bh = p.mask_broadcast & kBroadcastH;
    const bool bl = p.mask_broadcast & kBroadcastL, bs = p.mask_broadcast & kBroadcastS;
    // The stored element of (b, h, i, j), counted in the mask's own row-major order.
    auto stored = [&](std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t j) {
      std::int64_t x = bb ? 0 : b;
      x = x * (bh ? 1 : H) + (bh ? 0 : h);
      x = x * (bl ? 1 : L) + (bl ? 0 : i);
      return x * (bs ? 1 : S) + (bs ? 0 : j);
    };
    std::vector<double> want(g.dbias.size(), 0.0), mag(g.dbias.size(), 0.0);
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t i = 0; i < L; ++i)
          for (std::int64_t j = 0; j < S; ++j) {
            const double ds = g.ds[static_cast<std::size_t>(((b * H + h) * L + i) * S + j)];
            want[static_cast<std::size_t>(stored(b, h, i, j))] += ds;
            mag[static_cast<std::size_t>(stored(b, h, i, j))] += std::fabs(ds);
          }
    for (std::size_t x = 0; x < want.size(); ++x) {
      EXPECT_NEAR(g.dbias[x], want[x], 1e-14 * (mag[x] + 1e-300)) << id << " element " << x;
      if (bs) {
        EXPECT_LE(std::fabs(g.dbias[x]), 1e-12 * (mag[x] + 1e-300)) << id << " " << x;
      }
    }
  }
}

TEST(ReferenceBackward, AbsentRowsAndKeysHaveZeroGradients) {
  // Batch 0: 3 of 6 query rows and 4 of 7 keys; batch 1: no key at all (fully masked rows).
  // NaN beyond the lengths must not leak.
  const Case c = parse_case_id_or_throw(
      "b2.hq2.hkv1.l6.s7.dqk4.dv4.f32.qlen=3_6.kvlen=4_0.seed9.gen=nan_beyond");
  const Problem& p = c.problem;
  InputBuffers in = make_inputs(c);
  const Gradients g = reference::run_sdpa_backward(p, in.pointers(), make_d_out(p, 14));
  for (std::int64_t h = 0; h < p.heads_q; ++h)
    for (std::int64_t i = 0; i < p.len_q; ++i)
      for (std::int64_t e = 0; e < p.head_dim_qk; ++e) {
        const double x0 = g.dq[static_cast<std::size_t>(((0 * 2 + h) * 6 + i) * 4 + e)];
        const double x1 = g.dq[static_cast<std::size_t>(((1 * 2 + h) * 6 + i) * 4 + e)];
        if (i >= 3) {
          EXPECT_EQ(x0, 0.0) << "padding row " << i;
        } else {
          EXPECT_TRUE(std::isfinite(x0) && x0 != 0) << "row " << i;
        }
        EXPECT_EQ(x1, 0.0) << "fully masked row " << i;
      }
  for (std::int64_t j = 0; j < p.len_kv; ++j)
    for (std::int64_t e = 0; e < 4; ++e) {
      const double k0 = g.dk[static_cast<std::size_t>(j * 4 + e)];
      const double k1 = g.dk[static_cast<std::size_t>((7 + j) * 4 + e)];
      const double v0 = g.dv[static_cast<std::size_t>(j * 4 + e)];
      if (j >= 4) {
        EXPECT_EQ(k0, 0.0) << "absent key " << j;
        EXPECT_EQ(v0, 0.0) << "absent key " << j;
      } else {
        EXPECT_TRUE(std::isfinite(k0) && std::isfinite(v0)) << "key " << j;
      }
      EXPECT_EQ(k1, 0.0) << "batch without keys";
    }
}

TEST(ReferenceBackward, ANanInVReachesDqAndDkButNotDv) {
  const Case c = parse_case_id_or_throw("b1.hq1.l3.s4.dqk2.dv2.f64.seed2.gen=normal");
  const Problem& p = c.problem;
  InputBuffers in = make_inputs(c);
  static_cast<double*>(in.v.data())[element_offset(p.v, false, 0, 0, 2, 1)] = NAN;
  const Gradients g = reference::run_sdpa_backward(p, in.pointers(), make_d_out(p, 15));
  for (double x : g.dq) EXPECT_TRUE(std::isnan(x));  // every row attends key 2
  for (double x : g.dk) EXPECT_TRUE(std::isnan(x));
  for (double x : g.dv) EXPECT_TRUE(std::isfinite(x));
}

TEST(ReferenceBackward, BitIdenticalForAnyThreadCount) {
  const Case c = parse_case_id_or_throw(kCases[8]);
  InputBuffers in = make_inputs(c);
  const std::vector<double> d_out = make_d_out(c.problem, 16);
  const Gradients one =
      reference::run_sdpa_backward(c.problem, in.pointers(), d_out, Precision::f64, 1);
  const Gradients two =
      reference::run_sdpa_backward(c.problem, in.pointers(), d_out, Precision::f64, 2);
  EXPECT_EQ(0, std::memcmp(one.dq.data(), two.dq.data(), one.dq.size() * sizeof(double)));
  EXPECT_EQ(0, std::memcmp(one.dk.data(), two.dk.data(), one.dk.size() * sizeof(double)));
  EXPECT_EQ(0, std::memcmp(one.dv.data(), two.dv.data(), one.dv.size() * sizeof(double)));
}

TEST(ReferenceBackward, DOutOfTheWrongSizeIsRefused) {
  const Case c = parse_case_id_or_throw(kCases[0]);
  InputBuffers in = make_inputs(c);
  try {
    reference::run_sdpa_backward(c.problem, in.pointers(), std::vector<double>(3));
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("dO has 3 elements"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sdpa
