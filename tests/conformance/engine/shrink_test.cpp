// The shrinker (conformance/engine/shrink.hpp): its candidates are valid, canonical and smaller,
// and the greedy search reaches the smallest ID a failure condition allows.
#include "conformance/engine/shrink.hpp"

#include <gtest/gtest.h>

#include "conformance/engine/case_sampler.hpp"
#include "core/case_id.hpp"

namespace sdpa::conformance {
namespace {

const std::string kBig =
    "b3.hq6.hkv3.l7.s11.dqk24.dv12.bf16.causal=br.win=5_2_br.mask=add.mbc=hl.qlen=7_0_3."
    "kvlen=11_2_0.softcap=20.scale=-0.3.p0.25.dseed99.doff1000.lay=bshd.gap=1.off=2.lse.attnw."
    "seed12345.gen=large_logits";

TEST(Shrink, CandidatesAreValidCanonicalAndSmaller) {
  const std::vector<std::string> c = shrink_candidates(kBig);
  ASSERT_GT(c.size(), 20u);
  for (const auto& id : c) {
    const Case parsed = parse_case_id_or_throw(id);
    EXPECT_EQ(validate(parsed.problem), "") << id;
    EXPECT_EQ(format_case_id(parsed), id) << "not canonical";
    EXPECT_TRUE(case_size(id) < case_size(kBig)) << id;
  }
}

TEST(Shrink, EveryOptionalFieldCanGo) {
  const std::vector<std::string> c = shrink_candidates(kBig);
  for (const char* field : {".causal=br", ".win=", ".mask=add", ".softcap=", ".scale=", ".p0.25",
                            ".lay=bshd", ".lse", ".attnw", ".qlen="}) {
    bool without = false;
    for (const auto& id : c) without |= id.find(field) == std::string::npos;
    EXPECT_TRUE(without) << "no candidate drops " << field;
  }
}

TEST(Shrink, ReachesTheSmallestCaseTheConditionAllows) {
  // "Fails" iff S >= 40 and there is a mask tensor and the dtype is f16.
  int calls = 0;
  const StillFails fails = [&](const std::vector<std::string>& ids) {
    ++calls;
    std::vector<bool> out;
    for (const auto& id : ids) {
      const Problem p = parse_case_id_or_throw(id).problem;
      out.push_back(p.len_kv >= 40 && p.mask != MaskKind::none && p.dtype == DType::f16);
    }
    return out;
  };
  const ShrinkResult r = shrink_case(
      "b4.hq8.hkv2.l50.s97.dqk64.dv32.f16.causal=tl.mask=bool.mbc=h.lay=bshd.gap=3.lse.seed7."
      "gen=sparse",
      fails);
  EXPECT_EQ(r.case_id, "b1.hq1.hkv1.l1.s40.dqk1.dv1.f16.mask=bool.seed0.gen=normal");
  EXPECT_EQ(static_cast<std::size_t>(r.rounds), r.path.size());
  EXPECT_EQ(calls, r.rounds + 1) << "one batch per round, plus the last (no smaller failure)";
}

TEST(Shrink, KeepsAGqaCaseGqaWhenOnlyGqaFails) {
  const StillFails fails = [](const std::vector<std::string>& ids) {
    std::vector<bool> out;
    for (const auto& id : ids) {
      const Problem p = parse_case_id_or_throw(id).problem;
      out.push_back(p.heads_kv > 1 && p.heads_q / p.heads_kv > 1);
    }
    return out;
  };
  EXPECT_EQ(shrink_case("b1.hq12.hkv4.l3.s3.dqk8.f32", fails).case_id,
            "b1.hq4.hkv2.l1.s1.dqk1.dv1.f32.seed0.gen=normal");
}

TEST(Shrink, NothingSmallerFailsLeavesTheCase) {
  const ShrinkResult r = shrink_case(
      "b1.hq1.l1.s1.dqk1.f32",
      [](const std::vector<std::string>& ids) { return std::vector<bool>(ids.size(), false); });
  EXPECT_EQ(r.case_id, "b1.hq1.hkv1.l1.s1.dqk1.dv1.f32.seed0.gen=normal");
  EXPECT_TRUE(r.path.empty());
}

TEST(Shrink, ABadIdIsAnError) {
  EXPECT_THROW(shrink_candidates("b1.hq1.l1"), std::invalid_argument);
}

}  // namespace
}  // namespace sdpa::conformance
