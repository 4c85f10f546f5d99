#include "conformance/engine/rc_case_gen.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>

#include "conformance/engine/data_gen.hpp"

namespace sdpa {

using namespace sdpa::conformance;
namespace {

RC_GTEST_PROP(RcCaseGen, EveryGeneratedCaseIsValidAndWithinTheBudget, ()) {
  SamplerOptions o;
  o.max_work = std::int64_t(1) << 18;
  const Case c = *gen_case(o);
  RC_ASSERT(validate(c.problem) == "");
  RC_ASSERT(problem_work(c.problem) <= o.max_work);
  const auto& names = data_generator_names();
  RC_ASSERT(std::find(names.begin(), names.end(), c.data.generator) != names.end());
}

TEST(RcCaseGen, ShowValuePrintsTheCanonicalCaseId) {
  const Case c = parse_case_id_or_throw("b2.hq4.hkv2.l3.s5.dqk8.f16.causal=br.seed9.gen=int");
  EXPECT_EQ(rc::toString(c), "b2.hq4.hkv2.l3.s5.dqk8.dv8.f16.causal=br.seed9.gen=int");
}

// Greedy shrinking, as RapidCheck does it: from a failing value, take the first shrink
// that still fails until none does.
Case shrink_failure(const rc::Gen<Case>& gen, const std::function<bool(const Case&)>& holds) {
  for (std::uint64_t seed = 0; seed < 1000; ++seed) {
    rc::Shrinkable<Case> s = gen(rc::Random(seed), 100);
    if (holds(s.value())) continue;
    for (bool progressed = true; progressed;) {
      progressed = false;
      auto shrinks = s.shrinks();
      while (auto next = shrinks.next()) {
        if (!holds(next->value())) {
          s = *next;
          progressed = true;
          break;
        }
      }
    }
    return s.value();
  }
  ADD_FAILURE() << "no generated case falsified the property";
  return {};
}

TEST(RcCaseGen, AFailingPropertyShrinksToTheSmallestLegalProblem) {
  const rc::Gen<Case> gen = gen_case();
  // Fails for L >= 5: everything else shrinks away.
  EXPECT_EQ(format_case_id(shrink_failure(gen, [](const Case& c) { return c.problem.len_q < 5; })),
            "b1.hq1.hkv1.l5.s1.dqk1.dv1.f32.seed0.gen=normal");
  // Fails for an additive mask with S >= 3 in f16: the mask and the dtype stay, every other
  // feature is switched off.
  EXPECT_EQ(format_case_id(shrink_failure(gen,
                                          [](const Case& c) {
                                            return !(c.problem.mask == MaskKind::additive &&
                                                     c.problem.len_kv >= 3 &&
                                                     c.problem.dtype == DType::f16);
                                          })),
            "b1.hq1.hkv1.l1.s3.dqk1.dv1.f16.mask=add.seed0.gen=normal");
  // Fails for GQA with padded lengths: the smallest GQA varlen case (lengths shrink to 0).
  EXPECT_EQ(format_case_id(shrink_failure(gen,
                                          [](const Case& c) {
                                            const Problem& p = c.problem;
                                            return !(p.heads_q > p.heads_kv && !p.packed &&
                                                     !p.seqlens_kv.empty());
                                          })),
            "b1.hq2.hkv1.l1.s1.dqk1.dv1.f32.qlen=0.kvlen=0.seed0.gen=normal");
}

TEST(RcCaseGen, RapidCheckReportsTheShrunkCaseById) {
  const auto result = rc::detail::checkTestable(
      [] {
        const Case c = *gen_case();
        RC_ASSERT(c.problem.len_q < 5);
      },
      rc::detail::TestMetadata{}, rc::detail::TestParams{});
  ASSERT_TRUE(result.is<rc::detail::FailureResult>());
  rc::detail::FailureResult failure;
  result.match(failure);
  ASSERT_EQ(failure.counterExample.size(), 1u);
  EXPECT_EQ(failure.counterExample[0].second, "b1.hq1.hkv1.l5.s1.dqk1.dv1.f32.seed0.gen=normal");
}

TEST(RcCaseGen, HugeSizeOptionsAreClamped) {
  SamplerOptions o;
  o.max_len = o.max_head_dim = std::numeric_limits<std::int64_t>::max();
  o.max_work = std::int64_t(1) << 16;
  const rc::Gen<Case> gen = gen_case(o);
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    const Case c = gen(rc::Random(seed), 100).value();
    EXPECT_EQ(validate(c.problem), "") << format_case_id(c);
    EXPECT_LE(problem_work(c.problem), o.max_work) << format_case_id(c);
  }
}

TEST(RcCaseGen, OptionsRestrictTheGeneratedCases) {
  SamplerOptions o;
  o.dtypes = {DType::f16};
  o.masks = o.varlen_packed = o.varlen_padded = false;
  const rc::Gen<Case> gen = gen_case(o);
  for (std::uint64_t seed = 0; seed < 300; ++seed) {
    const Case c = gen(rc::Random(seed), static_cast<int>(seed % 101)).value();
    EXPECT_EQ(c.problem.dtype, DType::f16);
    EXPECT_EQ(c.problem.mask, MaskKind::none);
    EXPECT_TRUE(c.problem.seqlens_q.empty() && c.problem.seqlens_kv.empty());
  }
}

}  // namespace
}  // namespace sdpa
