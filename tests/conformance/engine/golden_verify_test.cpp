// The C++ reference against every committed golden case, in both precisions, and the
// backend judge against golden cases with fake backends.
#include "conformance/engine/golden_verify.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>

#include "golden/golden_file.hpp"
#include "kernels/backend.hpp"
#include "kernels/lowered_problem.hpp"

namespace sdpa::golden {

using namespace sdpa::conformance;
namespace {

// The largest c (in f64 ulps of the error magnitude) a reference result may show. Both the
// reference and the golden values are the exact result rounded once, up to the reference's
// own few-ulp error (REFERENCE.md), so agreement is a handful of ulps; the worst seen is
// printed by the test.
constexpr double kMaxUlps = 16;

std::string golden_path(const std::string& name) {
  return std::string(SDPA_GOLDEN_DIR) + "/" + name;
}

struct Param {
  const char* file;
  reference::Precision precision;
  int shard, shards;
};

std::string param_name(const testing::TestParamInfo<Param>& info) {
  std::string f = info.param.file;
  f = f.substr(0, f.find('.'));
  return f + (info.param.precision == reference::Precision::f64 ? "_f64" : "_binary128") + "_" +
         std::to_string(info.param.shard);
}

class ReferenceAgreesWithGolden : public testing::TestWithParam<Param> {};

TEST_P(ReferenceAgreesWithGolden, EveryCaseWithinAFewUlps) {
  const Param& prm = GetParam();
  const GoldenFile file(golden_path(prm.file));
  ASSERT_FALSE(file.case_ids().empty());
  std::map<std::string, std::pair<double, std::string>> worst;  // output -> (c, case)
  int checked = 0;
  const auto& ids = file.case_ids();
  for (std::size_t n = 0; n < ids.size(); ++n) {
    if (static_cast<int>(n % static_cast<std::size_t>(prm.shards)) != prm.shard) continue;
    const GoldenCase g = file.load(ids[n]);
    const Agreement a = compare_with_reference(g, prm.precision, 1);
    EXPECT_TRUE(a.mismatch.empty()) << ids[n] << ": " << a.mismatch;
    EXPECT_LE(a.worst(), kMaxUlps) << ids[n] << ": c = " << a.worst() << " at " << a.worst_where();
    for (auto [name, c, where] : {std::tuple{"o", a.o, a.o_where},
                                  {"lse", a.lse, a.lse_where},
                                  {"weights", a.weights, a.weights_where},
                                  {"gradients", a.gradients, a.gradients_where}}) {
      if (c >= worst[name].first) worst[name] = {c, ids[n] + " " + where};
    }
    ++checked;
  }
  // MHA cases: the MHA reference has one (f64, stage-wise rounded) mode.
  const auto& names = file.mha_case_names();
  for (std::size_t n = 0; prm.precision == reference::Precision::f64 && n < names.size(); ++n) {
    if (static_cast<int>(n % static_cast<std::size_t>(prm.shards)) != prm.shard) continue;
    const Agreement a = compare_mha_with_reference(file.load_mha(names[n]), 1);
    EXPECT_TRUE(a.mismatch.empty()) << names[n] << ": " << a.mismatch;
    EXPECT_LE(a.worst(), kMaxUlps)
        << names[n] << ": c = " << a.worst() << " at " << a.worst_where();
    for (auto [name, c, where] :
         {std::tuple{"mha out", a.o, a.o_where}, {"mha weights", a.weights, a.weights_where}}) {
      if (c >= worst[name].first) worst[name] = {c, names[n] + " " + where};
    }
    ++checked;
  }
  for (const auto& [name, w] : worst) {
    std::printf("worst c(%s) = %.3g ulps of magnitude: %s\n", name.c_str(), w.first,
                w.second.c_str());
  }
  std::printf("%d cases checked\n", checked);
}

std::vector<Param> params() {
  std::vector<Param> v;
  for (const char* f : {"smoke.h5", "ci.h5", "backward.h5"}) {
    const int shards = std::string(f) == "ci.h5" ? 4 : 1;
    for (auto prec : {reference::Precision::f64, reference::Precision::binary128}) {
      for (int s = 0; s < shards; ++s) v.push_back({f, prec, s, shards});
    }
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Golden, ReferenceAgreesWithGolden, testing::ValuesIn(params()),
                         param_name);

// The first smoke case whose ID contains `fragment`.
GoldenCase smoke_case(const std::string& fragment) {
  const GoldenFile f(golden_path("smoke.h5"));
  for (const auto& id : f.case_ids()) {
    if (id.find(fragment) != std::string::npos) return f.load(id);
  }
  throw std::runtime_error("no smoke case with " + fragment);
}

TEST(GoldenAgreement, DetectsAWrongExpectedValue) {
  GoldenCase g = smoke_case("f64.lse.attnw");
  EXPECT_LE(compare_with_reference(g, reference::Precision::f64).worst(), kMaxUlps);
  g.o[3] *= 1 + 0x1p-40;  // 2^13 ulps off
  const Agreement a = compare_with_reference(g, reference::Precision::f64);
  EXPECT_GT(a.o, 4 * kMaxUlps);
  EXPECT_NE(a.o_where.find("o[0,0,0,3]"), std::string::npos) << a.o_where;
  g = smoke_case("f64.lse.attnw");
  g.lse[1] += 1e-9;
  EXPECT_GT(compare_with_reference(g, reference::Precision::binary128).lse, 4 * kMaxUlps);
  g = smoke_case("f64.lse.attnw");
  g.weights[5] *= 1 + 0x1p-40;
  EXPECT_GT(compare_with_reference(g, reference::Precision::f64).weights, 4 * kMaxUlps);
}

TEST(GoldenAgreement, DetectsAWrongMhaValue) {
  const GoldenFile f(golden_path("smoke.h5"));
  ASSERT_FALSE(f.mha_case_names().empty());
  MhaGoldenCase g = f.load_mha(f.mha_case_names()[0]);
  EXPECT_LE(compare_mha_with_reference(g).worst(), kMaxUlps);
  g.out[2] *= 1 + 0x1p-40;
  EXPECT_GT(compare_mha_with_reference(g).o, 4 * kMaxUlps);
}

TEST(GoldenAgreement, NanAndInfinityMustMatchExactly) {
  GoldenCase g = smoke_case("f64.lse.attnw");
  g.o[0] = NAN;
  EXPECT_NE(compare_with_reference(g, reference::Precision::f64).mismatch.find("NaN mismatch"),
            std::string::npos);
  g = smoke_case("s0.dqk8");  // S = 0: LSE is -inf
  ASSERT_EQ(g.lse[0], -INFINITY);
  g.lse[0] = -1e300;
  EXPECT_NE(compare_with_reference(g, reference::Precision::f64).mismatch.find("infinity"),
            std::string::npos);
}

// Backends for the judge: the reference rounded to the output type (correct), the same
// with one element pushed off, one that declines, one that writes outside the output view.
class FakeBackend : public Backend {
 public:
  enum class Mode { correct, off_by_some, declines, writes_outside };
  explicit FakeBackend(Mode m) : mode_(m), caps_(Capabilities::every_forward_input()) {
    caps_.weights = true;
  }
  std::string_view name() const override { return "fake"; }
  const Capabilities& capabilities() const override { return caps_; }
  PrecisionContract precision(DType) const override { return {DType::f32, DType::f32}; }
  Support supports(const LoweredProblem& lowered, const Device&) const override {
    Support s;
    if (mode_ == Mode::declines) s.decline("fake backend: declines everything");
    return s;
  }
  void run(const LoweredProblem& lowered, const Device&, const RunOptions&) const override {
    const Problem& p = lowered.source();
    const Buffers b = lowered.buffers();
    const auto r = reference::run_sdpa(p, {b.q, b.k, b.v, b.mask});
    const auto cuq = cu_seqlens_q(p);
    for (std::int64_t bb = 0; bb < p.batch; ++bb)
      for (std::int64_t h = 0; h < p.heads_q; ++h) {
        const std::int64_t rows = p.packed ? seqlen_q(p, bb) : p.len_q;
        for (std::int64_t i = 0; i < rows; ++i)
          for (std::int64_t d = 0; d < p.head_dim_v; ++d) {
            const std::int64_t row = p.packed ? cuq[bb] + i : i;
            const std::int64_t off = element_offset(p.o, p.packed, bb, h, row, d);
            double x = r.o[static_cast<std::size_t>(
                ((bb * p.heads_q + h) * p.len_q + i) * p.head_dim_v + d)];
            if (mode_ == Mode::off_by_some && off == 0) x = x * 1.01 + 0.01;
            store_from_double(p.dtype, b.o, off, x);
          }
      }
    if (mode_ == Mode::writes_outside) store_from_double(p.dtype, b.o, -1, 0.0);  // margin
    if (b.lse) {
      for (std::size_t x = 0; x < r.lse.size(); ++x) b.lse[x] = static_cast<float>(r.lse[x]);
    }
    if (b.weights) {
      for (std::size_t x = 0; x < r.weights.size(); ++x) {
        store_from_double(p.dtype, b.weights, static_cast<std::int64_t>(x), r.weights[x]);
      }
    }
  }

 private:
  Mode mode_;
  Capabilities caps_;
};

TEST(GoldenJudge, CorrectBackendPassesEverySmokeCase) {
  const FakeBackend backend(FakeBackend::Mode::correct);
  const GoldenFile f(golden_path("smoke.h5"));
  for (const auto& id : f.case_ids()) {
    GoldenCase g = f.load(id);
    const CaseOutcome o = judge_backend(backend, g, detect_cpu());
    EXPECT_EQ(o.status, Status::pass) << id << ": " << o.message;
  }
}

TEST(GoldenJudge, WrongBackendFails) {
  GoldenCase g = smoke_case("f32.mask=add.lse");
  const CaseOutcome off =
      judge_backend(FakeBackend(FakeBackend::Mode::off_by_some), g, detect_cpu());
  EXPECT_EQ(off.status, Status::fail);
  EXPECT_NE(off.message.find("o[0,0,0,0]"), std::string::npos) << off.message;
  const CaseOutcome outside =
      judge_backend(FakeBackend(FakeBackend::Mode::writes_outside), g, detect_cpu());
  EXPECT_EQ(outside.status, Status::fail);
  EXPECT_EQ(outside.message.find("error/tolerance"), std::string::npos) << outside.message;
  const CaseOutcome no = judge_backend(FakeBackend(FakeBackend::Mode::declines), g, detect_cpu());
  EXPECT_EQ(no.status, Status::not_supported);
  EXPECT_NE(no.message.find("declines everything"), std::string::npos);
}

}  // namespace
}  // namespace sdpa::golden
