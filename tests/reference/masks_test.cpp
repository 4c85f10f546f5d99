// Hand-computed cases for the masking and edge-case rules of SEMANTICS.md: causal
// alignment, windows, bool and additive masks, GQA grouping, softcap order, fully masked
// rows, NaN propagation, valid lengths, empty problems, scale and LSE.
//
// Most cases read the attended set directly: with Q = 0 every attended logit is 0, so P
// is uniform over the attended keys, and with V = identity (Dv = S) the output row is P
// itself. A row then reads as a string of '0'/'1' that is checked against a hand-written
// expectation, and every nonzero entry must equal 1/n exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference/sdpa_reference.hpp"
#include "tests/reference/test_util.hpp"

namespace sdpa::test {
namespace {

using Pattern = std::vector<std::string>;

// The attended keys of every query row of slice (b, h); see the file comment. Runs both
// engines and checks that they agree bit for bit, that O equals P, that every attended
// weight is exactly 1/n, and that LSE is log(n) (-inf for a fully masked row).
Pattern attended(Problem p, const std::vector<double>& mask = {}, std::int64_t b = 0,
                 std::int64_t h = 0) {
  p.head_dim_v = p.len_kv;
  p.want_lse = p.want_weights = true;
  if (p.head_dim_qk == 0) p.head_dim_qk = 1;
  apply_layout(p, LayoutKind::bhsd, 0, 0);
  Data d = zero_data(p);
  if (!mask.empty()) d.mask = mask;
  for (double& x : d.k) x = 1.0;  // finite keys; Q = 0 makes every logit 0
  for (std::int64_t bb = 0; bb < p.batch; ++bb)
    for (std::int64_t hh = 0; hh < p.heads_kv; ++hh)
      for (std::int64_t j = 0; j < p.len_kv; ++j) d.v[vi(p, bb, hh, j, j)] = 1.0;
  const Result r = run(p, d, Precision::f64, 1), r128 = run(p, d, Precision::binary128, 1);
  EXPECT_EQ(diff_results(r, r128), "") << "the engines disagree on an exact case";
  EXPECT_EQ(diff_bits(r.o, r.weights, "o vs weights"), "");
  Pattern out;
  for (std::int64_t i = 0; i < p.len_q; ++i) {
    std::string row;
    std::int64_t n = 0;
    for (std::int64_t j = 0; j < p.len_kv; ++j) n += r.weights[mi(p, b, h, i, j)] != 0;
    for (std::int64_t j = 0; j < p.len_kv; ++j) {
      const double w = r.weights[mi(p, b, h, i, j)];
      row += w != 0 ? '1' : '0';
      if (w != 0) {
        EXPECT_EQ(w, 1.0 / static_cast<double>(n)) << "row " << i << " key " << j;
      }
    }
    const double lse = r.lse[ri(p, b, h, i)];
    if (n == 0) {
      EXPECT_EQ(lse, -kInf) << "row " << i;
    } else {
      EXPECT_NEAR(lse, std::log(static_cast<double>(n)), 2 * kU64 * std::log(n + 1.0))
          << "row " << i;
    }
    out.push_back(row);
  }
  return out;
}

Problem square(std::int64_t L, std::int64_t S, std::int64_t B = 1, std::int64_t H = 1) {
  return make_problem(B, H, H, L, S, 1, 1);
}

Problem with_causal(Problem p, Causal c) {
  p.causal = c;
  return p;
}

Problem with_window(Problem p, std::int64_t left, std::int64_t right, Align a) {
  p.window = {true, left, right, a};
  return p;
}

// ---------------------------------------------------------------- causal

TEST(MasksCausal, TopLeftVersusBottomRightWhenLShorterThanS) {
  const Problem p = square(3, 5);
  EXPECT_EQ(attended(with_causal(p, Causal::top_left)), (Pattern{"10000", "11000", "11100"}));
  EXPECT_EQ(attended(with_causal(p, Causal::bottom_right)), (Pattern{"11100", "11110", "11111"}));
  EXPECT_EQ(attended(p), (Pattern{"11111", "11111", "11111"}));
}

TEST(MasksCausal, BottomRightFullyMasksTheFirstRowsWhenLLongerThanS) {
  const Problem p = square(5, 3);
  EXPECT_EQ(attended(with_causal(p, Causal::top_left)),
            (Pattern{"100", "110", "111", "111", "111"}));
  // Offset S - L = -2: rows 0 and 1 see no key (O = 0, LSE = -inf, checked in attended()).
  EXPECT_EQ(attended(with_causal(p, Causal::bottom_right)),
            (Pattern{"000", "000", "100", "110", "111"}));
}

TEST(MasksCausal, SquareTopLeftEqualsBottomRight) {
  const Problem p = square(4, 4);
  const Pattern want{"1000", "1100", "1110", "1111"};
  EXPECT_EQ(attended(with_causal(p, Causal::top_left)), want);
  EXPECT_EQ(attended(with_causal(p, Causal::bottom_right)), want);
}

TEST(MasksCausal, BottomRightUsesPerBatchValidLengths) {
  Problem p = square(3, 5, 2);
  p.seqlens_q = {3, 2};
  p.seqlens_kv = {5, 3};
  // b = 1: L_b = 2, S_b = 3, offset 1; row 2 is padding, keys 3 and 4 do not exist.
  EXPECT_EQ(attended(with_causal(p, Causal::bottom_right), {}, 1),
            (Pattern{"11000", "11100", "00000"}));
  EXPECT_EQ(attended(with_causal(p, Causal::top_left), {}, 1),
            (Pattern{"10000", "11000", "00000"}));
  EXPECT_EQ(attended(with_causal(p, Causal::bottom_right), {}, 0),
            (Pattern{"11100", "11110", "11111"}));
  // S_b < L_b inside a wider padded problem: b = 1 with L_b = 3, S_b = 1 -> offset -2.
  Problem q = square(3, 5, 2);
  q.seqlens_kv = {5, 1};
  EXPECT_EQ(attended(with_causal(q, Causal::bottom_right), {}, 1),
            (Pattern{"00000", "00000", "10000"}));
}

// ---------------------------------------------------------------- windows

TEST(MasksWindow, TopLeftEdges) {
  const Problem p = square(4, 4);
  const Align tl = Align::top_left;
  EXPECT_EQ(attended(with_window(p, 0, 0, tl)), (Pattern{"1000", "0100", "0010", "0001"}));
  EXPECT_EQ(attended(with_window(p, 1, 0, tl)), (Pattern{"1000", "1100", "0110", "0011"}));
  EXPECT_EQ(attended(with_window(p, 0, 1, tl)), (Pattern{"1100", "0110", "0011", "0001"}));
  EXPECT_EQ(attended(with_window(p, -1, 0, tl)), (Pattern{"1000", "1100", "1110", "1111"}));
  EXPECT_EQ(attended(with_window(p, 0, -1, tl)), (Pattern{"1111", "0111", "0011", "0001"}));
  EXPECT_EQ(attended(with_window(p, -1, -1, tl)), (Pattern{"1111", "1111", "1111", "1111"}));
  EXPECT_EQ(attended(with_window(p, 3, 3, tl)), (Pattern{"1111", "1111", "1111", "1111"}));
  EXPECT_EQ(attended(with_window(p, 2, 2, tl)), (Pattern{"1110", "1111", "1111", "0111"}));
  // A disabled window restricts nothing, whatever its bounds say.
  Problem off = with_window(p, 0, 0, tl);
  off.window.enabled = false;
  EXPECT_EQ(attended(off), (Pattern{"1111", "1111", "1111", "1111"}));
}

TEST(MasksWindow, BottomRightEdges) {
  const Align br = Align::bottom_right;
  const Problem wide = square(2, 5);  // offset 3
  EXPECT_EQ(attended(with_window(wide, 0, 0, br)), (Pattern{"00010", "00001"}));
  EXPECT_EQ(attended(with_window(wide, 1, 0, br)), (Pattern{"00110", "00011"}));
  EXPECT_EQ(attended(with_window(wide, 0, 1, br)), (Pattern{"00011", "00001"}));
  EXPECT_EQ(attended(with_window(wide, 4, 0, br)), (Pattern{"11110", "11111"}));
  EXPECT_EQ(attended(with_window(wide, 1, 1, br)), (Pattern{"00111", "00011"}));
  EXPECT_EQ(attended(with_window(wide, 0, 0, Align::top_left)), (Pattern{"10000", "01000"}));
  const Problem tall = square(5, 3);  // offset -2
  EXPECT_EQ(attended(with_window(tall, 1, 0, br)), (Pattern{"000", "000", "100", "110", "011"}));
  EXPECT_EQ(attended(with_window(tall, 0, -1, br)), (Pattern{"111", "111", "111", "011", "001"}));
}

TEST(MasksWindow, LeftZeroBottomRightWithLeftAtLeastSEqualsCausalBottomRight) {
  for (std::int64_t L : {1, 2, 3, 5, 7})
    for (std::int64_t S : {1, 3, 5}) {
      const Problem p = square(L, S);
      const Pattern causal = attended(with_causal(p, Causal::bottom_right));
      for (std::int64_t left : {S, S + 1, 2 * S + 3, std::int64_t{-1}}) {
        EXPECT_EQ(attended(with_window(p, left, 0, Align::bottom_right)), causal)
            << "L=" << L << " S=" << S << " left=" << left;
      }
      // left = S - 1 is the smallest window whose last row still sees every key.
      EXPECT_EQ(attended(with_window(p, S - 1, 0, Align::bottom_right)).back(),
                std::string(static_cast<std::size_t>(S), '1'));
    }
}

TEST(MasksWindow, WindowCombinesWithCausalByAnd) {
  const Problem p = with_causal(square(4, 4), Causal::top_left);
  EXPECT_EQ(attended(with_window(p, 1, -1, Align::top_left)),
            (Pattern{"1000", "1100", "0110", "0011"}));
  // Window looking only forward AND causal: the diagonal.
  EXPECT_EQ(attended(with_window(p, 0, 3, Align::top_left)),
            (Pattern{"1000", "0100", "0010", "0001"}));
}

// Spec formula of SEMANTICS.md step 5, written out directly.
bool formula_allows(const Problem& p, std::int64_t i, std::int64_t j, std::int64_t Lb,
                    std::int64_t Sb) {
  if (i >= Lb || j >= Sb) return false;
  const std::int64_t br = Sb - Lb;
  if (p.causal == Causal::top_left && !(j <= i)) return false;
  if (p.causal == Causal::bottom_right && !(j <= i + br)) return false;
  if (p.window.enabled) {
    const std::int64_t off = p.window.align == Align::bottom_right ? br : 0;
    const bool lo_ok = p.window.left < 0 || i + off - p.window.left <= j;
    const bool hi_ok = p.window.right < 0 || j <= i + off + p.window.right;
    if (!(lo_ok && hi_ok)) return false;
  }
  return true;
}

TEST(MasksWindow, SweepOfEdgesMatchesTheFormula) {
  int cases = 0;
  for (std::int64_t L = 1; L <= 5; ++L)
    for (std::int64_t S = 1; S <= 5; ++S)
      for (Causal c : {Causal::none, Causal::top_left, Causal::bottom_right})
        for (Align a : {Align::top_left, Align::bottom_right})
          for (std::int64_t left : {-1L, 0L, 1L, S - 2, S - 1, S})
            for (std::int64_t right : {-1L, 0L, 1L, S - 1, S}) {
              if (left < -1 || right < -1) continue;
              Problem p = with_window(with_causal(square(L, S, 2), c), left, right, a);
              p.seqlens_kv = {S, S / 2};
              p.seqlens_q = {L, (L + 1) / 2};
              for (std::int64_t b = 0; b < 2; ++b) {
                const Pattern got = attended(p, {}, b);
                Pattern want;
                for (std::int64_t i = 0; i < L; ++i) {
                  std::string row;
                  for (std::int64_t j = 0; j < S; ++j) {
                    row += formula_allows(p, i, j, seqlen_q(p, b), seqlen_kv(p, b)) ? '1' : '0';
                  }
                  want.push_back(row);
                }
                ASSERT_EQ(got, want)
                    << "L=" << L << " S=" << S << " causal=" << int(c) << " align=" << int(a)
                    << " win=(" << left << "," << right << ") b=" << b;
                ++cases;
              }
            }
  EXPECT_GT(cases, 3000);
}

// ---------------------------------------------------------------- mask tensors

TEST(MasksTensor, BoolTrueMeansAttendAndAndsWithCausal) {
  Problem p = square(3, 4);
  p.mask = MaskKind::boolean;
  const std::vector<double> m = {1, 0, 1, 1,  //
                                 0, 1, 0, 1,  //
                                 1, 1, 1, 0};
  EXPECT_EQ(attended(p, m), (Pattern{"1011", "0101", "1110"}));
  EXPECT_EQ(attended(with_causal(p, Causal::top_left), m), (Pattern{"1000", "0100", "1110"}));
  const std::vector<double> none(12, 0.0);
  EXPECT_EQ(attended(p, none), (Pattern{"0000", "0000", "0000"}));
}

TEST(MasksTensor, BoolMaskBroadcastOverHeads) {
  Problem p = square(2, 3, 2, 3);
  p.mask = MaskKind::boolean;
  p.mask_broadcast = kBroadcastH;
  std::vector<double> m(static_cast<std::size_t>(2 * 3 * 2 * 3));
  const Pattern per_b[2] = {{"110", "011"}, {"001", "101"}};
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t h = 0; h < 3; ++h)
      for (std::int64_t i = 0; i < 2; ++i)
        for (std::int64_t j = 0; j < 3; ++j) m[mi(p, b, h, i, j)] = per_b[b][i][j] == '1';
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t h = 0; h < 3; ++h) EXPECT_EQ(attended(p, m, b, h), per_b[b]);
}

TEST(MasksTensor, AdditiveMinusInfMasksWithBroadcast) {
  // One key row shared by every batch element, head and query (mbc=bhl).
  Problem p = square(3, 5, 2, 2);
  p.mask = MaskKind::additive;
  p.mask_broadcast = kBroadcastB | kBroadcastH | kBroadcastL;
  std::vector<double> m(static_cast<std::size_t>(2 * 2 * 3 * 5));
  for (std::size_t x = 0; x < m.size(); ++x) m[x] = (x % 5) % 2 == 1 ? -kInf : 0.0;
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t h = 0; h < 2; ++h)
      EXPECT_EQ(attended(p, m, b, h), (Pattern{"10101", "10101", "10101"}));
  // One value per (b, h, i) broadcast over the keys (mbc=s): a -inf there masks the row.
  Problem q = square(3, 4, 1, 2);
  q.mask = MaskKind::additive;
  q.mask_broadcast = kBroadcastS;
  std::vector<double> mq(static_cast<std::size_t>(2 * 3 * 4), 0.0);
  for (std::int64_t j = 0; j < 4; ++j) mq[mi(q, 0, 1, 2, j)] = -kInf;
  EXPECT_EQ(attended(q, mq, 0, 0), (Pattern{"1111", "1111", "1111"}));
  EXPECT_EQ(attended(q, mq, 0, 1), (Pattern{"1111", "1111", "0000"}));
}

TEST(MasksTensor, AdditiveBiasIsAddedToTheLogits) {
  // Dqk = 1, Q = 1, K_j = j, scale 1: logits j, plus the bias.
  Problem p = make_problem(1, 1, 1, 1, 4, 1, 4);
  p.scale = 1.0;
  p.mask = MaskKind::additive;
  p.want_lse = p.want_weights = true;
  Data d = zero_data(p);
  d.q[0] = 1;
  const double bias[4] = {0.5, -1.0, 2.0, -kInf};
  for (std::int64_t j = 0; j < 4; ++j) {
    d.k[ki(p, 0, 0, j, 0)] = static_cast<double>(j);
    d.v[vi(p, 0, 0, j, j)] = 1;
    d.mask[mi(p, 0, 0, 0, j)] = bias[j];
  }
  const Result r = run(p, d);
  double z = 0, e[4];
  for (int j = 0; j < 4; ++j) z += e[j] = std::exp(j + bias[j]);
  for (int j = 0; j < 4; ++j) {
    EXPECT_NEAR(r.weights[static_cast<std::size_t>(j)], e[j] / z, 4 * kU64) << j;
    EXPECT_NEAR(r.o[static_cast<std::size_t>(j)], e[j] / z, 4 * kU64) << j;
  }
  EXPECT_EQ(r.weights[3], 0.0);
  EXPECT_NEAR(r.lse[0], std::log(z), 4 * kU64 * std::log(z));
}

// ---------------------------------------------------------------- GQA

TEST(MasksGqa, GroupsOfQueryHeadsAreContiguous) {
  const std::pair<std::int64_t, std::int64_t> shapes[] = {{4, 2}, {6, 3}, {6, 2},
                                                          {4, 1}, {3, 3}, {8, 4}};
  for (auto [hq, hkv] : shapes) {
    Problem p = make_problem(2, hq, hkv, 2, 3, 2, 1);
    Data d = zero_data(p);  // Q = 0: O = mean of V over the keys
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::int64_t g = 0; g < hkv; ++g)
        for (std::int64_t j = 0; j < 3; ++j)
          d.v[vi(p, b, g, j, 0)] = static_cast<double>(10 * b + g);
    const Result r = run(p, d);
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::int64_t h = 0; h < hq; ++h)
        for (std::int64_t i = 0; i < 2; ++i) {
          // repeat_interleave: head h reads kv head h / (hq / hkv) (tile would be h % hkv).
          EXPECT_EQ(r.o[oi(p, b, h, i, 0)], static_cast<double>(10 * b + h / (hq / hkv)))
              << "hq=" << hq << " hkv=" << hkv << " b=" << b << " h=" << h;
        }
  }
}

// ---------------------------------------------------------------- softcap

TEST(MasksSoftcap, AppliedBeforeTheBiasAndMask) {
  Problem p = make_problem(1, 1, 1, 1, 3, 1, 3);
  p.scale = 1.0;
  p.softcap = 2.0;
  p.mask = MaskKind::additive;
  p.want_weights = p.want_lse = true;
  Data d = zero_data(p);
  d.q[0] = 1;
  const double s[3] = {3.0, 0.5, -2.0}, bias[3] = {0.0, 1.5, -kInf};
  for (int j = 0; j < 3; ++j) {
    d.k[ki(p, 0, 0, j, 0)] = s[j];
    d.v[vi(p, 0, 0, j, j)] = 1;
    d.mask[mi(p, 0, 0, 0, j)] = bias[j];
  }
  const double c = p.softcap;
  double before[2], after[2], zb = 0, za = 0;
  for (int j = 0; j < 2; ++j) {
    zb += before[j] = std::exp(c * std::tanh(s[j] / c) + bias[j]);
    za += after[j] = std::exp(c * std::tanh((s[j] + bias[j]) / c));
  }
  for (const Precision prec : {Precision::f64, Precision::binary128}) {
    const Result r = run(p, d, prec);
    for (int j = 0; j < 2; ++j) {
      EXPECT_NEAR(r.o[static_cast<std::size_t>(j)], before[j] / zb, 4 * kU64);
      // The wrong order gives a clearly different answer: the case discriminates.
      EXPECT_GT(std::fabs(r.o[static_cast<std::size_t>(j)] - after[j] / za), 1e-3);
    }
    // The -inf entry stays masked: softcap must not turn it into the finite -c.
    EXPECT_EQ(r.o[2], 0.0);
    EXPECT_EQ(r.weights[2], 0.0);
    EXPECT_NEAR(r.lse[0], std::log(zb), 4 * kU64 * (1 + std::log(zb)));
  }
  // A row that is -inf everywhere stays fully masked under softcap.
  for (int j = 0; j < 3; ++j) d.mask[static_cast<std::size_t>(j)] = -kInf;
  const Result r = run(p, d);
  EXPECT_EQ(r.lse[0], -kInf);
  for (double x : r.o) EXPECT_EQ(x, 0.0);
}

// ---------------------------------------------------------------- fully masked rows

void expect_row_fully_masked(const Problem& p, const Result& r, std::int64_t b, std::int64_t h,
                             std::int64_t i, const std::string& what) {
  for (std::int64_t d = 0; d < p.head_dim_v; ++d) {
    const std::size_t x = oi(p, b, h, i, d);
    EXPECT_TRUE(r.o[x] == 0.0 && !std::signbit(r.o[x])) << what << ": O[" << d << "] = " << r.o[x];
    EXPECT_EQ(r.mag_a[x], 0.0) << what;
    EXPECT_EQ(r.mag_c[x], 0.0) << what;
    EXPECT_EQ(r.mag_g[x], 0.0) << what;
  }
  EXPECT_EQ(r.lse[ri(p, b, h, i)], -kInf) << what;
  EXPECT_EQ(r.lse_mag_c[ri(p, b, h, i)], 0.0) << what;
  EXPECT_EQ(r.lse_mag_g[ri(p, b, h, i)], 0.0) << what;
  if (!r.weights.empty()) {
    for (std::int64_t j = 0; j < p.len_kv; ++j)
      EXPECT_EQ(r.weights[mi(p, b, h, i, j)], 0.0) << what;
  }
}

TEST(MasksFullyMasked, EverySourceGivesZeroOutputAndMinusInfLse) {
  struct Source {
    std::string name;
    Problem p;
    std::int64_t b, i;  // the fully masked row of head 0
  };
  std::vector<Source> sources;
  const Problem base = make_problem(2, 1, 1, 3, 4, 2, 3);
  {
    Problem p = base;
    p.mask = MaskKind::boolean;
    sources.push_back({"bool row all false", p, 1, 1});
  }
  {
    Problem p = base;
    p.mask = MaskKind::additive;
    sources.push_back({"-inf bias row", p, 0, 2});
  }
  {
    // L > S, bottom-right: row 0 of window (1, 0) looks at keys -3 and -2.
    Problem p = with_window(make_problem(2, 1, 1, 6, 4, 2, 3), 1, 0, Align::bottom_right);
    sources.push_back({"window before the first key", p, 0, 0});
  }
  {
    Problem p = with_window(make_problem(2, 1, 1, 6, 4, 2, 3), 0, 0, Align::top_left);
    sources.push_back({"window beyond the last key", p, 1, 5});
  }
  {
    Problem p = base;
    p.seqlens_kv = {4, 0};
    sources.push_back({"kvlen 0", p, 1, 0});
  }
  {
    Problem p = base;
    p.seqlens_kv = {4, 0};
    p.packed = true;
    apply_layout(p, LayoutKind::bhsd, 0, 0);
    sources.push_back({"packed kvlen 0", p, 1, 2});
  }
  sources.push_back({"causal BR with L > S",
                     with_causal(make_problem(1, 1, 1, 6, 4, 2, 3), Causal::bottom_right), 0, 1});
  for (Source& s : sources) {
    Problem& p = s.p;
    p.want_lse = p.want_weights = true;
    p.dropout_p = 0.25;  // dropout must not change a fully masked row either
    Data d = zero_data(p);
    fill_random(p, d, 11);
    for (double& x : d.v) x += 3.0;  // mean(V) far from 0
    if (p.mask == MaskKind::boolean) {
      for (std::int64_t j = 0; j < p.len_kv; ++j) d.mask[mi(p, s.b, 0, s.i, j)] = 0;
    } else if (p.mask == MaskKind::additive) {
      for (std::int64_t j = 0; j < p.len_kv; ++j) d.mask[mi(p, s.b, 0, s.i, j)] = -kInf;
    }
    for (const Precision prec : {Precision::f64, Precision::binary128}) {
      const Result r = run(p, d, prec);
      expect_row_fully_masked(p, r, s.b, 0, s.i, s.name);
      // Some other row is not masked (the case discriminates).
      bool any_finite = false;
      for (double x : r.lse) any_finite = any_finite || std::isfinite(x);
      EXPECT_TRUE(any_finite) << s.name;
    }
  }
}

// ---------------------------------------------------------------- NaN

Problem nan_problem() {
  Problem p = make_problem(1, 1, 1, 4, 4, 3, 3);
  p.want_lse = p.want_weights = true;
  return p;
}

Data nan_data(const Problem& p) {
  Data d = zero_data(p);
  fill_random(p, d, 5);
  return d;
}

TEST(MasksNan, NanInAQueryRowPoisonsExactlyThatRow) {
  const Problem p = nan_problem();
  Data d = nan_data(p);
  d.q[qi(p, 0, 0, 2, 1)] = kNaN;
  for (const Precision prec : {Precision::f64, Precision::binary128}) {
    const Result r = run(p, d, prec);
    for (std::int64_t i = 0; i < 4; ++i) {
      for (std::int64_t c = 0; c < 3; ++c)
        EXPECT_EQ(std::isnan(r.o[oi(p, 0, 0, i, c)]), i == 2) << i;
      EXPECT_EQ(std::isnan(r.lse[ri(p, 0, 0, i)]), i == 2) << i;
    }
  }
}

TEST(MasksNan, NanInAValueAtAnAttendedKeyPoisonsThatColumn) {
  Problem p = with_causal(nan_problem(), Causal::top_left);
  Data d = nan_data(p);
  d.v[vi(p, 0, 0, 1, 2)] = kNaN;  // key 1, column 2: rows 1..3 attend key 1
  for (const Precision prec : {Precision::f64, Precision::binary128}) {
    const Result r = run(p, d, prec);
    for (std::int64_t i = 0; i < 4; ++i) {
      for (std::int64_t c = 0; c < 3; ++c) {
        EXPECT_EQ(std::isnan(r.o[oi(p, 0, 0, i, c)]), i >= 1 && c == 2) << i << "," << c;
      }
      EXPECT_FALSE(std::isnan(r.lse[ri(p, 0, 0, i)]));
    }
  }
}

TEST(MasksNan, NanInAKeyOrBiasAtAnAttendedPositionPoisonsTheRow) {
  Problem p = with_causal(nan_problem(), Causal::top_left);
  Data d = nan_data(p);
  d.k[ki(p, 0, 0, 2, 0)] = kNaN;  // rows 2 and 3 attend key 2
  Result r = run(p, d);
  for (std::int64_t i = 0; i < 4; ++i)
    for (std::int64_t c = 0; c < 3; ++c) EXPECT_EQ(std::isnan(r.o[oi(p, 0, 0, i, c)]), i >= 2);
  p.mask = MaskKind::additive;
  Data e = nan_data(p);
  e.mask[mi(p, 0, 0, 1, 0)] = kNaN;
  r = run(p, e, Precision::binary128);
  for (std::int64_t i = 0; i < 4; ++i) {
    for (std::int64_t c = 0; c < 3; ++c) EXPECT_EQ(std::isnan(r.o[oi(p, 0, 0, i, c)]), i == 1);
    EXPECT_EQ(std::isnan(r.lse[ri(p, 0, 0, i)]), i == 1);
  }
}

TEST(MasksNan, InfinitiesFollowIeee) {
  // +inf in V at an attended key: that column is +inf (P > 0), not NaN; -inf and +inf in
  // the same column give NaN. A +inf logit (bias) gives exp(inf - inf) = NaN for the row.
  Problem p = with_causal(nan_problem(), Causal::top_left);
  Data d = nan_data(p);
  d.v[vi(p, 0, 0, 1, 0)] = kInf;   // rows 1..3 see +inf in column 0
  d.v[vi(p, 0, 0, 2, 1)] = kInf;   // rows 2..3 see +inf in column 1 ...
  d.v[vi(p, 0, 0, 3, 1)] = -kInf;  // ... and row 3 also -inf: NaN
  for (const Precision prec : {Precision::f64, Precision::binary128}) {
    const Result r = run(p, d, prec);
    for (std::int64_t i = 0; i < 4; ++i) {
      EXPECT_EQ(r.o[oi(p, 0, 0, i, 0)], i >= 1 ? kInf : r.o[oi(p, 0, 0, i, 0)]) << i;
      EXPECT_TRUE(std::isfinite(r.o[oi(p, 0, 0, i, 2)])) << i;
      EXPECT_TRUE(std::isfinite(r.lse[ri(p, 0, 0, i)])) << i;
    }
    EXPECT_TRUE(std::isfinite(r.o[oi(p, 0, 0, 0, 0)]));
    EXPECT_TRUE(std::isfinite(r.o[oi(p, 0, 0, 1, 1)]));
    EXPECT_EQ(r.o[oi(p, 0, 0, 2, 1)], kInf);
    EXPECT_TRUE(std::isnan(r.o[oi(p, 0, 0, 3, 1)]));
  }
  p.mask = MaskKind::additive;
  Data e = nan_data(p);
  e.mask[mi(p, 0, 0, 2, 1)] = kInf;
  for (const Precision prec : {Precision::f64, Precision::binary128}) {
    const Result r = run(p, e, prec);
    for (std::int64_t i = 0; i < 4; ++i) {
      for (std::int64_t c = 0; c < 3; ++c) EXPECT_EQ(std::isnan(r.o[oi(p, 0, 0, i, c)]), i == 2);
    }
  }
}

TEST(MasksNan, NanAtAMaskedKeyChangesNothing) {
  // Key 3 is masked for every row (causal TL hides it from rows 0..2, the bool mask from
  // row 3; or a -inf bias column): NaN there must not reach any output.
  for (MaskKind kind : {MaskKind::boolean, MaskKind::additive}) {
    Problem p = with_causal(nan_problem(), Causal::top_left);
    p.mask = kind;
    Data d = nan_data(p);
    for (std::int64_t i = 0; i < 4; ++i) {
      d.mask[mi(p, 0, 0, i, 3)] = kind == MaskKind::boolean ? 0.0 : -kInf;
    }
    for (const Precision prec : {Precision::f64, Precision::binary128}) {
      const Result clean = run(p, d, prec);
      Data poisoned = d;
      for (std::int64_t e = 0; e < 3; ++e) {
        poisoned.k[ki(p, 0, 0, 3, e)] = kNaN;
        poisoned.v[vi(p, 0, 0, 3, e)] = kNaN;
      }
      EXPECT_EQ(diff_results(run(p, poisoned, prec), clean), "");
    }
  }
}

TEST(MasksNan, KeysBeyondTheValidLengthHoldingNanChangeNothing) {
  // Padded: rows j >= S_b of K and V hold NaN, rows i >= L_b of Q hold NaN.
  Problem p = make_problem(3, 2, 1, 4, 5, 3, 2);
  p.seqlens_kv = {5, 2, 0};
  p.seqlens_q = {4, 3, 1};
  p.causal = Causal::bottom_right;
  p.want_lse = p.want_weights = true;
  Data d = zero_data(p);
  fill_random(p, d, 17);
  Data poisoned = d;
  for (std::int64_t b = 0; b < 3; ++b) {
    for (std::int64_t j = seqlen_kv(p, b); j < 5; ++j) {
      for (std::int64_t e = 0; e < 3; ++e) poisoned.k[ki(p, b, 0, j, e)] = kNaN;
      for (std::int64_t e = 0; e < 2; ++e) poisoned.v[vi(p, b, 0, j, e)] = kNaN;
    }
    for (std::int64_t h = 0; h < 2; ++h)
      for (std::int64_t i = seqlen_q(p, b); i < 4; ++i)
        for (std::int64_t e = 0; e < 3; ++e) poisoned.q[qi(p, b, h, i, e)] = kNaN;
  }
  for (const Precision prec : {Precision::f64, Precision::binary128}) {
    const Result clean = run(p, d, prec);
    EXPECT_EQ(diff_results(run(p, poisoned, prec), clean), "");
    for (double x : clean.o) EXPECT_FALSE(std::isnan(x));
  }
  // Packed: whatever lies around the packed rows (NaN or 0) changes nothing.
  Problem pk = p;
  pk.packed = true;
  apply_layout(pk, LayoutKind::bshd, 1, 3);
  const Buffers nan_around(pk, poisoned, kNaN), zero_around(pk, d, 0.0);
  const Result a = reference::run_sdpa(pk, nan_around.inputs());
  const Result b = reference::run_sdpa(pk, zero_around.inputs());
  EXPECT_EQ(diff_results(a, b), "");
  EXPECT_EQ(diff_results(a, run(p, d)), "") << "packed differs from padded";
}

TEST(MasksPadding, QueryRowsBeyondTheValidLengthAreZero) {
  Problem p = make_problem(2, 1, 1, 4, 3, 2, 2);
  p.seqlens_q = {2, 0};
  p.want_lse = p.want_weights = true;
  Data d = zero_data(p);
  fill_random(p, d, 3);
  for (double& x : d.v) x += 5.0;
  const Result r = run(p, d);
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t i = 0; i < 4; ++i) {
      if (i < seqlen_q(p, b)) {
        EXPECT_TRUE(std::isfinite(r.lse[ri(p, b, 0, i)]));
        EXPECT_GT(r.o[oi(p, b, 0, i, 0)], 1.0);
      } else {
        expect_row_fully_masked(p, r, b, 0, i, "padding row");
      }
    }
}

// ---------------------------------------------------------------- empty problems

TEST(MasksEmpty, EveryZeroDimension) {
  const std::int64_t base[6] = {2, 2, 3, 4, 3, 2};  // B, Hq, L, S, Dqk, Dv
  for (int zero = 0; zero < 6; ++zero) {
    std::int64_t s[6];
    for (int k = 0; k < 6; ++k) s[k] = k == zero ? 0 : base[k];
    Problem p = make_problem(s[0], s[1], 1, s[2], s[3], s[4], s[5]);
    p.want_lse = p.want_weights = true;
    Data d = zero_data(p);
    fill_random(p, d, 21);
    for (double& x : d.v) x += 4.0;
    for (const Precision prec : {Precision::f64, Precision::binary128}) {
      SCOPED_TRACE("zero dimension " + std::to_string(zero));
      const Result r = run(p, d, prec);
      const auto rows = static_cast<std::size_t>(s[0] * s[1] * s[2]);
      EXPECT_EQ(r.o.size(), rows * static_cast<std::size_t>(s[5]));
      EXPECT_EQ(r.mag_a.size(), r.o.size());
      EXPECT_EQ(r.lse.size(), rows);
      EXPECT_EQ(r.weights.size(), rows * static_cast<std::size_t>(s[3]));
      if (zero == 3) {  // S = 0: zeros and -inf
        for (double x : r.o) EXPECT_EQ(x, 0.0);
        for (double x : r.lse) EXPECT_EQ(x, -kInf);
      }
      if (zero == 4) {  // Dqk = 0: every logit is 0, O = mean(V), LSE = log(S)
        for (std::int64_t b = 0; b < s[0]; ++b)
          for (std::int64_t h = 0; h < s[1]; ++h)
            for (std::int64_t i = 0; i < s[2]; ++i) {
              EXPECT_NEAR(r.lse[ri(p, b, h, i)], std::log(4.0), 4 * kU64);
              for (std::int64_t c = 0; c < s[5]; ++c) {
                double mean = 0;
                for (std::int64_t j = 0; j < 4; ++j) mean += d.v[vi(p, b, 0, j, c)] / 4;
                EXPECT_NEAR(r.o[oi(p, b, h, i, c)], mean, 1e-14);
              }
            }
      }
      if (zero == 5) {  // Dv = 0: no output, but LSE is still computed
        for (double x : r.lse) EXPECT_TRUE(std::isfinite(x));
      }
    }
  }
  // Hq = 0 with Hkv = 0 is a valid empty problem too.
  Problem p = make_problem(1, 0, 0, 2, 2, 2, 2);
  EXPECT_TRUE(run(p, zero_data(p)).o.empty());
}

// ---------------------------------------------------------------- values

// O, weights and LSE of one row by the formula, straight from the logits.
struct RowRef {
  std::vector<double> w, o;
  double lse;
};
RowRef naive_row(const Problem& p, const Data& d, std::int64_t b, std::int64_t h, std::int64_t i) {
  const std::int64_t S = p.len_kv, hk = h / (p.heads_q / p.heads_kv);
  std::vector<double> s(static_cast<std::size_t>(S), -kInf);
  double m = -kInf;
  for (std::int64_t j = 0; j < S; ++j) {
    if (!formula_allows(p, i, j, seqlen_q(p, b), seqlen_kv(p, b))) continue;
    if (p.mask == MaskKind::boolean && d.mask[mi(p, b, h, i, j)] == 0) continue;
    long double dot = 0;
    for (std::int64_t e = 0; e < p.head_dim_qk; ++e) {
      dot += static_cast<long double>(d.q[qi(p, b, h, i, e)]) * d.k[ki(p, b, hk, j, e)];
    }
    double x = effective_scale(p) * static_cast<double>(dot);
    if (p.softcap > 0) x = p.softcap * std::tanh(x / p.softcap);
    if (p.mask == MaskKind::additive) x += d.mask[mi(p, b, h, i, j)];
    s[static_cast<std::size_t>(j)] = x;
    m = std::max(m, x);
  }
  RowRef r;
  r.w.assign(static_cast<std::size_t>(S), 0.0);
  r.o.assign(static_cast<std::size_t>(p.head_dim_v), 0.0);
  r.lse = -kInf;
  if (m == -kInf) return r;  // fully masked
  long double z = 0;
  for (std::int64_t j = 0; j < S; ++j) z += std::exp(static_cast<long double>(s[j] - m));
  r.lse = m + std::log(static_cast<double>(z));
  for (std::int64_t j = 0; j < S; ++j) {
    r.w[j] = static_cast<double>(std::exp(static_cast<long double>(s[j] - m)) / z);
    for (std::int64_t c = 0; c < p.head_dim_v; ++c) r.o[c] += r.w[j] * d.v[vi(p, b, hk, j, c)];
  }
  return r;
}

void expect_matches_formula(const Problem& p, const Data& d, double tol) {
  const Result r = run(p, d);
  for (std::int64_t b = 0; b < p.batch; ++b)
    for (std::int64_t h = 0; h < p.heads_q; ++h)
      for (std::int64_t i = 0; i < seqlen_q(p, b); ++i) {
        const RowRef want = naive_row(p, d, b, h, i);
        double sum = 0;
        for (std::int64_t j = 0; j < p.len_kv; ++j) {
          const double w = r.weights[mi(p, b, h, i, j)];
          sum += w;
          EXPECT_NEAR(w, want.w[j], tol) << b << "," << h << "," << i << "," << j;
        }
        if (std::isfinite(want.lse)) {
          EXPECT_NEAR(sum, 1.0, 4 * p.len_kv * kU64) << "weights of a row sum to 1";
        }
        if (std::isfinite(want.lse)) {
          EXPECT_NEAR(r.lse[ri(p, b, h, i)], want.lse, tol * (1 + std::fabs(want.lse)));
        } else {
          EXPECT_EQ(r.lse[ri(p, b, h, i)], want.lse);
        }
        for (std::int64_t c = 0; c < p.head_dim_v; ++c) {
          EXPECT_NEAR(r.o[oi(p, b, h, i, c)], want.o[c], tol) << b << "," << h << "," << i;
        }
      }
}

TEST(MasksValues, ValueHeadDimDiffersFromQkHeadDim) {
  for (auto [dqk, dv] : {std::pair<std::int64_t, std::int64_t>{3, 5}, {5, 3}, {1, 7}, {8, 1}}) {
    Problem p = make_problem(2, 2, 1, 3, 6, dqk, dv);
    p.want_lse = p.want_weights = true;
    Data d = zero_data(p);
    fill_random(p, d, 7 + dqk);
    expect_matches_formula(p, d, 1e-14);
  }
}

TEST(MasksValues, WeightsSumToOneAndMatchTheSoftmax) {
  Problem p = make_problem(2, 4, 2, 5, 7, 4, 3);
  p.want_lse = p.want_weights = true;
  p.causal = Causal::bottom_right;
  p.mask = MaskKind::additive;
  p.softcap = 3.0;
  p.seqlens_kv = {7, 4};
  Data d = zero_data(p);
  fill_random(p, d, 9);
  Rng rng(99);
  for (double& x : d.mask) x = rng.below(5) == 0 ? -kInf : rng.normal();
  expect_matches_formula(p, d, 1e-14);
  p.mask = MaskKind::boolean;
  for (double& x : d.mask) x = rng.below(3) != 0;
  expect_matches_formula(p, d, 1e-14);
}

TEST(MasksValues, DefaultScaleIsOneOverSqrtDqkAndExplicitScalesApply) {
  // Dqk = 4 (default scale 1/2), Dv = 16 (a scale taken from Dv would be 1/4).
  Problem p = make_problem(1, 1, 1, 1, 2, 4, 16);
  p.want_weights = p.want_lse = true;
  Data d = zero_data(p);
  d.q[0] = 1;
  d.k[ki(p, 0, 0, 0, 0)] = 2;  // dot = 2 for key 0, 0 for key 1
  for (std::int64_t c = 0; c < 16; ++c) d.v[vi(p, 0, 0, 0, c)] = 1;
  const auto p0 = [](double logit0) { return std::exp(logit0) / (std::exp(logit0) + 1); };
  const Result def = run(p, d);
  EXPECT_NEAR(def.weights[0], p0(1.0), 2 * kU64);
  EXPECT_NEAR(def.o[0], p0(1.0), 2 * kU64);
  EXPECT_NEAR(def.lse[0], std::log(std::exp(1.0) + 1), 4 * kU64);
  p.scale = 0.5;
  EXPECT_EQ(diff_results(run(p, d), def), "") << "explicit 1/sqrt(Dqk) equals the default";
  p.scale = -1.5;  // negative: logits -3 and 0
  EXPECT_NEAR(run(p, d).weights[0], p0(-3.0), 2 * kU64);
  p.scale = 0.0;  // uniform
  EXPECT_EQ(run(p, d).weights[0], 0.5);
}

TEST(MasksValues, LseIsTheNaturalLogOfTheSumOfExponentials) {
  Problem p = make_problem(1, 1, 1, 2, 3, 1, 1);
  p.scale = 1.0;
  p.want_lse = true;
  Data d = zero_data(p);
  d.q[qi(p, 0, 0, 0, 0)] = 1;
  d.q[qi(p, 0, 0, 1, 0)] = -100;
  const double kv[3] = {0.5, -2, 3};
  for (int j = 0; j < 3; ++j) d.k[ki(p, 0, 0, j, 0)] = kv[j];
  for (const Precision prec : {Precision::f64, Precision::binary128}) {
    const Result r = run(p, d, prec);
    const double want0 = std::log(std::exp(0.5) + std::exp(-2.0) + std::exp(3.0));
    // Row 1: logits -50, 200, -300: LSE = 200 + log(1 + e^-250 + e^-500) = 200.
    EXPECT_NEAR(r.lse[0], want0, 4 * kU64 * want0);
    EXPECT_EQ(r.lse[1], 200.0);
  }
}

}  // namespace
}  // namespace sdpa::test
