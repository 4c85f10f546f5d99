#include "conformance/engine/data_gen.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>

#include "reference/sdpa_reference.hpp"

namespace sdpa {

using namespace sdpa::conformance;
namespace {

std::vector<unsigned char> bytes_of(const GuardedBuffer& b) {
  const auto n = static_cast<std::size_t>(view_extent(b.view())) * b.element_size();
  const auto* p = static_cast<const unsigned char*>(b.data());
  return {p, p + n};
}

TEST(DataGen, SameIdGivesSameBytes) {
  const Case c =
      parse_case_id_or_throw("b2.hq4.hkv2.l9.s13.dqk8.dv5.bf16.mask=add.mbc=h.seed3.gen=normal");
  const InputBuffers a = make_inputs(c), b = make_inputs(c);
  EXPECT_EQ(bytes_of(a.q), bytes_of(b.q));
  EXPECT_EQ(bytes_of(a.k), bytes_of(b.k));
  EXPECT_EQ(bytes_of(a.v), bytes_of(b.v));
  EXPECT_EQ(bytes_of(*a.mask), bytes_of(*b.mask));
}

TEST(DataGen, SeedsAndTensorsGiveDifferentStreams) {
  const Case c = parse_case_id_or_throw("b1.hq1.l2.s2.dqk4.f32.seed7.gen=normal");
  const InputBuffers in = make_inputs(c);
  const auto* q = static_cast<const float*>(in.q.data());
  const auto* k = static_cast<const float*>(in.k.data());
  // A different seed gives different data.
  const InputBuffers other =
      make_inputs(parse_case_id_or_throw("b1.hq1.l2.s2.dqk4.f32.seed8.gen=normal"));
  EXPECT_NE(bytes_of(in.q), bytes_of(other.q));
  // Q and K streams differ (tensor id is part of the counter).
  EXPECT_NE(std::memcmp(q, k, 8 * sizeof(float)), 0);
  for (int x = 0; x < 8; ++x) {
    EXPECT_LT(std::fabs(q[x]), 3.47f);  // Irwin-Hall(4) scaled to unit variance is bounded
  }
}

TEST(DataGen, GeneratorsHaveTheirDocumentedRanges) {
  for (const char* gen : {"uniform", "int", "sparse", "normal"}) {
    const Case c = parse_case_id_or_throw(std::string("b1.hq2.l64.s64.dqk16.f32.seed1.gen=") + gen);
    const InputBuffers in = make_inputs(c);
    const auto* q = static_cast<const float*>(in.q.data());
    int zeros = 0;
    const int n = 2 * 64 * 16;
    for (int x = 0; x < n; ++x) {
      if (q[x] == 0) ++zeros;
      if (std::string(gen) == "uniform") {
        EXPECT_TRUE(q[x] >= -1 && q[x] < 1);
      }
      if (std::string(gen) == "int") {
        EXPECT_TRUE(q[x] == std::nearbyint(q[x]) && std::fabs(q[x]) <= 2);
      }
    }
    if (std::string(gen) == "sparse") {
      EXPECT_NEAR(zeros / double(n), 0.8, 0.05);
    }
    if (std::string(gen) == "normal") {
      EXPECT_LT(zeros, 3);
    }
  }
}

TEST(DataGen, GapsAndMarginsKeepPoison) {
  const Case c = parse_case_id_or_throw("b1.hq2.l5.s6.dqk8.f16.gap=3.off=1.seed1.gen=normal");
  const InputBuffers in = make_inputs(c);
  // The gap elements after each row of Q are still poison (0x7FA5).
  const auto* q = static_cast<const std::uint16_t*>(in.q.data());
  for (int row = 0; row < 10; ++row)
    for (int g = 8; g < 11; ++g) EXPECT_EQ(q[row * 11 + g], 0x7FA5) << row << " " << g;
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(in.q.data()) % 64, 2u);  // offset by one f16
  EXPECT_FALSE(in.q.check_unchanged());
}

TEST(DataGen, UnknownGeneratorAndInvalidProblemAreClearErrors) {
  try {
    make_inputs(parse_case_id_or_throw("b1.hq1.l2.s2.dqk4.f32.seed1.gen=gaussian"));
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("gen"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("gaussian"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_inputs(parse_case_id_or_throw("b1.hq3.hkv2.l2.s2.dqk4.f32.seed1.gen=normal")),
               std::invalid_argument);
}

// ---------------------------------------------------------------- adversarial generators

namespace adversarial {

// fn(offset) for every logical element of a view (aliased offsets more than once).
template <typename Fn>
void for_each_offset(const StridedView& v, Fn fn) {
  for (std::int64_t a = 0; a < v.shape[0]; ++a)
    for (std::int64_t b = 0; b < v.shape[1]; ++b)
      for (std::int64_t r = 0; r < v.shape[2]; ++r)
        for (std::int64_t c = 0; c < v.shape[3]; ++c)
          fn(a * v.stride[0] + b * v.stride[1] + r * v.stride[2] + c * v.stride[3]);
}

// Element (b, h, row, col) of a buffer, as a double.
double at(const GuardedBuffer& buf, DType t, std::int64_t b, std::int64_t h, std::int64_t r,
          std::int64_t c) {
  const StridedView& v = buf.view();
  return load_as_double(t, buf.data(),
                        b * v.stride[0] + h * v.stride[1] + r * v.stride[2] + c * v.stride[3]);
}

// All logits scale * q_i . k_j of one (b, h) as rows of S values.
std::vector<std::vector<double>> logits(const Case& c, const InputBuffers& in, std::int64_t b,
                                        std::int64_t h) {
  const Problem& p = c.problem;
  const std::int64_t hk = h / (p.heads_q / p.heads_kv);
  std::vector<std::vector<double>> s(static_cast<std::size_t>(p.len_q));
  for (std::int64_t i = 0; i < p.len_q; ++i) {
    for (std::int64_t j = 0; j < p.len_kv; ++j) {
      double dot = 0;
      for (std::int64_t d = 0; d < p.head_dim_qk; ++d) {
        dot += at(in.q, p.dtype, b, h, i, d) * at(in.k, p.dtype, b, hk, j, d);
      }
      s[static_cast<std::size_t>(i)].push_back(effective_scale(p) * dot);
    }
  }
  return s;
}

double rms_logit(const std::string& id) {
  const Case c = parse_case_id_or_throw(id);
  const InputBuffers in = make_inputs(c);
  double sum = 0;
  int n = 0;
  for (const auto& row : logits(c, in, 0, 0)) {
    for (double x : row) {
      sum += x * x;
      ++n;
    }
  }
  return std::sqrt(sum / n);
}

TEST(DataGenAdversarial, LargeLogitsAreAbout1e4WhateverTheScaleAndHeadDim) {
  for (const char* id : {"b1.hq1.l16.s32.dqk64.f32.seed1.gen=large_logits",
                         "b1.hq1.l16.s32.dqk8.f16.seed2.gen=large_logits",
                         "b1.hq1.l16.s32.dqk16.bf16.scale=-0.01.seed3.gen=large_logits"}) {
    const double rms = rms_logit(id);
    EXPECT_GT(rms, 5e3) << id;
    EXPECT_LT(rms, 2e4) << id;
  }
}

TEST(DataGenAdversarial, Logits88AreNearPlusOrMinus88PerRow) {
  for (const char* id : {"b1.hq2.l32.s64.dqk64.f32.seed1.gen=logits_88",
                         "b1.hq2.l32.s64.dqk8.f16.scale=-0.5.seed2.gen=logits_88"}) {
    const Case c = parse_case_id_or_throw(id);
    const InputBuffers in = make_inputs(c);
    int overflow_rows = 0, underflow_rows = 0;
    for (std::int64_t h = 0; h < 2; ++h) {
      for (const auto& row : logits(c, in, 0, h)) {
        const double mx = *std::max_element(row.begin(), row.end());
        const double mn = *std::min_element(row.begin(), row.end());
        ASSERT_TRUE(mx < 0 || mn > 0) << id << ": a row's logits share one sign";
        double mean = 0;
        for (double x : row) mean += x / static_cast<double>(row.size());
        EXPECT_GT(std::fabs(mean), 60) << id;
        EXPECT_LT(std::fabs(mean), 120) << id;
        if (mx > 88.73) ++overflow_rows;    // exp(s) overflows f32 without the max subtracted
        if (mn < -87.34) ++underflow_rows;  // exp(s) below the smallest f32 normal
      }
    }
    EXPECT_GT(overflow_rows, 0) << id;
    EXPECT_GT(underflow_rows, 0) << id;
  }
}

TEST(DataGenAdversarial, NegativeLogitsPutTheLseFarBelowMinus88) {
  for (const char* id : {"b1.hq1.l8.s40.dqk8.f32.seed1.gen=negative_logits",
                         "b1.hq1.l8.s40.dqk128.bf16.seed2.gen=negative_logits",
                         "b1.hq1.l8.s40.dqk32.f16.scale=-0.2.seed3.gen=negative_logits"}) {
    const Case c = parse_case_id_or_throw(id);
    const InputBuffers in = make_inputs(c);
    for (const auto& row : logits(c, in, 0, 0)) {
      const double mx = *std::max_element(row.begin(), row.end());
      EXPECT_LT(mx, -1e4) << id;
      EXPECT_GT(*std::min_element(row.begin(), row.end()), -6e4) << id;
      double sum = 0;
      for (double x : row) sum += std::exp(x - mx);
      EXPECT_LT(mx + std::log(sum), -1e4) << id << ": LSE";
    }
  }
}

TEST(DataGenAdversarial, VNearMaxIsAroundHalfTheMaximumWithBothSigns) {
  for (const char* dt : {"f16", "bf16", "f32", "f64"}) {
    const Case c = parse_case_id_or_throw(std::string("b1.hq2.l4.s33.dqk8.dv5.") + dt +
                                          ".seed4.gen=v_near_max");
    const InputBuffers in = make_inputs(c);
    const double max = dtype_max(c.problem.dtype);
    int negative = 0, n = 0;
    for (std::int64_t h = 0; h < 2; ++h)
      for (std::int64_t j = 0; j < 33; ++j)
        for (std::int64_t d = 0; d < 5; ++d) {
          const double x = at(in.v, c.problem.dtype, 0, h, j, d);
          ASSERT_TRUE(std::isfinite(x)) << dt;
          EXPECT_GE(std::fabs(x), max / 3 * (1 - 1e-2)) << dt;
          EXPECT_LE(std::fabs(x), max * 2 / 3 * (1 + 1e-2)) << dt;
          negative += x < 0;
          ++n;
        }
    EXPECT_GT(negative, n / 4) << dt;
    EXPECT_LT(negative, 3 * n / 4) << dt;
    EXPECT_LT(std::fabs(at(in.q, c.problem.dtype, 0, 0, 0, 0)), 3.47) << dt << ": Q is normal";
  }
  // With dropout, V is scaled by 1 - p: the exact output sum_j P_j V_j / (1 - p) stays
  // representable.
  const Case c = parse_case_id_or_throw("b1.hq1.l4.s33.dqk8.f16.p0.75.seed4.gen=v_near_max");
  const InputBuffers in = make_inputs(c);
  for (std::int64_t j = 0; j < 33; ++j) {
    const double x = std::fabs(at(in.v, DType::f16, 0, 0, j, 0));
    EXPECT_GE(x, 65504.0 / 3 * 0.25 * (1 - 1e-2));
    EXPECT_LE(x, 65504.0 * 2 / 3 * 0.25 * (1 + 1e-2));
  }
}

TEST(DataGenAdversarial, DenormalsPutEveryVValueInTheUpperSubnormalRange) {
  const struct {
    const char* dt;
    double min_normal;
  } types[] = {{"f16", 0x1p-14}, {"bf16", 0x1p-126}, {"f32", 0x1p-126}, {"f64", 0x1p-1022}};
  for (const auto& t : types) {
    const Case c = parse_case_id_or_throw(std::string("b1.hq1.l3.s64.dqk4.dv16.") + t.dt +
                                          ".seed5.gen=denormals");
    const InputBuffers in = make_inputs(c);
    int negative = 0;
    for (std::int64_t j = 0; j < 64; ++j)
      for (std::int64_t d = 0; d < 16; ++d) {
        const double x = at(in.v, c.problem.dtype, 0, 0, j, d);
        EXPECT_LT(std::fabs(x), t.min_normal) << t.dt;
        EXPECT_GE(std::fabs(x), t.min_normal / 2) << t.dt;
        negative += x < 0;
      }
    EXPECT_GT(negative, 64 * 16 / 4) << t.dt;
    EXPECT_LT(negative, 64 * 16 * 3 / 4) << t.dt;
  }
}

TEST(DataGenAdversarial, NegInfBlocksMaskRunsOfKeysAndWholeRows) {
  const Case add =
      parse_case_id_or_throw("b2.hq2.l32.s64.dqk8.f32.mask=add.seed6.gen=neg_inf_blocks");
  const Case boolean =
      parse_case_id_or_throw("b2.hq2.l32.s64.dqk8.f32.mask=bool.seed6.gen=neg_inf_blocks");
  const InputBuffers a = make_inputs(add), m = make_inputs(boolean);
  int full_rows = 0, mixed_rows = 0, long_runs = 0;
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t h = 0; h < 2; ++h)
      for (std::int64_t i = 0; i < 32; ++i) {
        int masked = 0, run = 0, longest = 0;
        for (std::int64_t j = 0; j < 64; ++j) {
          const double x = at(*a.mask, DType::f32, b, h, i, j);
          ASSERT_TRUE(std::isfinite(x) || x == -INFINITY);
          const bool is_masked = x == -INFINITY;
          // The boolean mask masks exactly the same keys.
          const auto off = j * m.mask->view().stride[3] + i * m.mask->view().stride[2] +
                           h * m.mask->view().stride[1] + b * m.mask->view().stride[0];
          EXPECT_EQ(static_cast<const std::uint8_t*>(m.mask->data())[off] == 0, is_masked);
          masked += is_masked;
          run = is_masked ? run + 1 : 0;
          longest = std::max(longest, run);
        }
        full_rows += masked == 64;
        mixed_rows += masked > 0 && masked < 64;
        long_runs += longest >= 4 && longest < 64;
      }
  EXPECT_GT(full_rows, 0);
  EXPECT_GT(mixed_rows, 64);
  EXPECT_GT(long_runs, 32);
}

TEST(DataGenAdversarial, NegInfBlocksMaskAboutOneRowInEight) {
  // With S = 256 a row's blocks are rarely all masked by chance: the full rows are the
  // rows drawn fully masked (probability 1/8).
  const Case c =
      parse_case_id_or_throw("b2.hq2.l64.s256.dqk8.f16.mask=add.seed6.gen=neg_inf_blocks");
  const InputBuffers in = make_inputs(c);
  int full_rows = 0;
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t h = 0; h < 2; ++h)
      for (std::int64_t i = 0; i < 64; ++i) {
        bool all = true;
        for (std::int64_t j = 0; j < 256 && all; ++j) {
          all = at(*in.mask, DType::f16, b, h, i, j) == -INFINITY;
        }
        full_rows += all;
      }
  EXPECT_GT(full_rows, 256 / 8 / 2);
  EXPECT_LT(full_rows, 256 / 8 * 2);
}

// Expects NaN in exactly the elements beyond the valid lengths of Q, K, V and the mask.
void expect_nan_exactly_beyond(const std::string& id) {
  const Case c = parse_case_id_or_throw(id);
  const Problem& p = c.problem;
  const InputBuffers in = make_inputs(c);
  int nans = 0;
  for (std::int64_t b = 0; b < p.batch; ++b) {
    for (std::int64_t h = 0; h < p.heads_q; ++h)
      for (std::int64_t i = 0; i < p.len_q; ++i)
        for (std::int64_t d = 0; d < p.head_dim_qk; ++d) {
          const bool nan = std::isnan(at(in.q, p.dtype, b, h, i, d));
          EXPECT_EQ(nan, i >= seqlen_q(p, b)) << id << " q " << b << h << i << d;
          nans += nan;
        }
    for (std::int64_t h = 0; h < p.heads_kv; ++h)
      for (std::int64_t j = 0; j < p.len_kv; ++j) {
        for (std::int64_t d = 0; d < p.head_dim_qk; ++d) {
          EXPECT_EQ(std::isnan(at(in.k, p.dtype, b, h, j, d)), j >= seqlen_kv(p, b)) << id << " k";
        }
        for (std::int64_t d = 0; d < p.head_dim_v; ++d) {
          EXPECT_EQ(std::isnan(at(in.v, p.dtype, b, h, j, d)), j >= seqlen_kv(p, b)) << id << " v";
        }
      }
  }
  if (!in.mask) return;
  // A stored mask entry is NaN iff every logical element aliasing it is beyond the lengths.
  const StridedView mv = mask_view(p);
  std::map<std::int64_t, bool> any_valid;
  for (std::int64_t b = 0; b < p.batch; ++b)
    for (std::int64_t h = 0; h < p.heads_q; ++h)
      for (std::int64_t i = 0; i < p.len_q; ++i)
        for (std::int64_t j = 0; j < p.len_kv; ++j) {
          const auto off =
              b * mv.stride[0] + h * mv.stride[1] + i * mv.stride[2] + j * mv.stride[3];
          any_valid[off] = any_valid[off] || (i < seqlen_q(p, b) && j < seqlen_kv(p, b));
        }
  for (const auto& [off, valid] : any_valid) {
    EXPECT_EQ(std::isnan(load_as_double(p.dtype, in.mask->data(), off)), !valid) << id << " mask";
  }
  EXPECT_GT(nans, 0) << id;
}

TEST(DataGenAdversarial, NanBeyondPlantsNanExactlyBeyondTheValidLengths) {
  expect_nan_exactly_beyond(
      "b3.hq2.hkv1.l5.s7.dqk4.dv3.f32.mask=add.qlen=5_0_2.kvlen=3_7_0.seed7.gen=nan_beyond");
  expect_nan_exactly_beyond(
      "b3.hq2.l5.s7.dqk4.bf16.mask=add.mbc=b.qlen=1_4_2.kvlen=3_7_2.lay=bshd.gap=1.seed8.gen=nan_"
      "beyond");
  expect_nan_exactly_beyond(
      "b2.hq2.l5.s7.dqk4.f16.mask=add.mbc=hl.qlen=3_5.kvlen=6_2.seed9.gen=nan_beyond");
}

TEST(DataGenAdversarial, NanBeyondPlantsNothingWithoutPadding) {
  for (const char* id : {"b2.hq1.l5.s7.dqk4.f32.seed1.gen=nan_beyond",
                         "b2.hq1.l5.s7.dqk4.f32.qlen=2_5.kvlen=7_3.packed.seed1.gen=nan_beyond"}) {
    const Case c = parse_case_id_or_throw(id);
    const InputBuffers in = make_inputs(c);
    for (const GuardedBuffer* b : {&in.q, &in.k, &in.v}) {
      const StridedView& v = b->view();
      for (std::int64_t r = 0; r < v.shape[2]; ++r)
        for (std::int64_t d = 0; d < v.shape[3]; ++d) {
          for (std::int64_t a = 0; a < v.shape[0]; ++a) {
            EXPECT_FALSE(std::isnan(at(*b, DType::f32, a, 0, r, d))) << id;
          }
        }
    }
  }
}

// nan_q: exactly one stored element of Q is NaN (K and V stay finite), and the reference's
// NaN rows are exactly the valid rows reading it, each with every O element and its LSE NaN;
// each of those rows attends a key (the generator's promise).
void expect_one_nan_in_attending_rows(const std::string& id) {
  const Case c = parse_case_id_or_throw(id);
  const Problem& p = c.problem;
  const InputBuffers in = make_inputs(c);
  const StridedView& qv = in.q.view();
  std::map<std::int64_t, bool> stored_nan;
  for_each_offset(qv, [&](std::int64_t off) {
    stored_nan[off] = std::isnan(load_as_double(p.dtype, in.q.data(), off));
  });
  const auto nan_count =
      std::count_if(stored_nan.begin(), stored_nan.end(), [](const auto& e) { return e.second; });
  ASSERT_EQ(nan_count, 1) << id;
  for (const GuardedBuffer* t : {&in.k, &in.v}) {
    for_each_offset(t->view(), [&](std::int64_t off) {
      EXPECT_FALSE(std::isnan(load_as_double(p.dtype, t->data(), off))) << id;
    });
  }
  const reference::Result r = reference::run_sdpa(p, in.pointers());
  const auto cu = cu_seqlens_q(p);
  int nan_rows = 0;
  for (std::int64_t b = 0; b < p.batch; ++b)
    for (std::int64_t h = 0; h < p.heads_q; ++h)
      for (std::int64_t i = 0; i < seqlen_q(p, b); ++i) {
        const std::int64_t row = p.packed ? cu[static_cast<std::size_t>(b)] + i : i;
        bool reads_nan = false;
        for (std::int64_t e = 0; e < p.head_dim_qk; ++e) {
          reads_nan = reads_nan || stored_nan[element_offset(p.q, p.packed, b, h, row, e)];
        }
        const std::size_t x = static_cast<std::size_t>((b * p.heads_q + h) * p.len_q + i);
        EXPECT_EQ(std::isnan(r.lse[x]), reads_nan) << id << " lse row " << x;
        for (std::int64_t d = 0; d < p.head_dim_v; ++d) {
          EXPECT_EQ(std::isnan(r.o[x * p.head_dim_v + d]), reads_nan) << id << " o row " << x;
        }
        nan_rows += reads_nan;
      }
  EXPECT_GE(nan_rows, 1) << id;
}

TEST(DataGenAdversarial, NanQPlantsOneNanThatReachesExactlyTheRowsReadingIt) {
  for (const char* id :
       {"b2.hq4.hkv2.l9.s13.dqk8.dv5.bf16.mask=add.mbc=h.qlen=9_4.kvlen=2_13.seed3.gen=nan_q",
        "b2.hq2.hkv1.l9.s13.dqk8.dv5.f32.causal=br.qlen=9_4.kvlen=2_13.packed.seed4.gen=nan_q",
        "b1.hq2.l16.s16.dqk4.f16.mask=bool.win=2_0_tl.p0.5.dseed1.seed5.gen=nan_q",
        "b2.hq3.l6.s6.dqk4.f32.qst=0_0_4_1_0.kst=72_24_4_1_0.vst=72_24_4_1_0.ost=72_24_4_1_0.seed6."
        "gen=nan_q",  // every (b, h) reads one Q
        "b1.hq1.l40.s40.dqk2.dv3.f64.mask=add.seed7.gen=nan_q"}) {
    expect_one_nan_in_attending_rows(id);
  }
}

TEST(DataGenAdversarial, NanQPlantsNothingWhenNoRowAttendsAKey) {
  const Case c = parse_case_id_or_throw("b1.hq2.l4.s4.dqk4.f32.kvlen=0.seed1.gen=nan_q");
  const InputBuffers in = make_inputs(c);
  for_each_offset(in.q.view(), [&](std::int64_t off) {
    EXPECT_FALSE(std::isnan(load_as_double(DType::f32, in.q.data(), off)));
  });
}

TEST(DataGenAdversarial, EveryGeneratorIsAPureFunctionOfTheId) {
  for (const auto& gen : data_generator_names()) {
    const std::string id =
        "b2.hq4.hkv2.l9.s13.dqk8.dv5.bf16.mask=add.mbc=h.qlen=9_4.kvlen=2_13.seed3.gen=" + gen;
    const InputBuffers a = make_inputs(parse_case_id_or_throw(id));
    const InputBuffers b = make_inputs(parse_case_id_or_throw(id));
    EXPECT_EQ(bytes_of(a.q), bytes_of(b.q)) << gen;
    EXPECT_EQ(bytes_of(a.k), bytes_of(b.k)) << gen;
    EXPECT_EQ(bytes_of(a.v), bytes_of(b.v)) << gen;
    EXPECT_EQ(bytes_of(*a.mask), bytes_of(*b.mask)) << gen;
    if (gen == "zeros") continue;
    const std::string other = id.substr(0, id.find(".seed3")) + ".seed4.gen=" + gen;
    const InputBuffers c = make_inputs(parse_case_id_or_throw(other));
    EXPECT_NE(bytes_of(a.v), bytes_of(c.v)) << gen << ": the seed changes the data";
  }
}

}  // namespace adversarial

}  // namespace
}  // namespace sdpa
