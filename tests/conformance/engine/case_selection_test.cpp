// The run engine's case selection (conformance/engine/case_selection.hpp) and command-line
// case IDs (conformance/engine/command_line_case.hpp): what `run`, `certify` and `cases export`
// run, and the refusals of bad selections before anything runs.
#include "conformance/engine/case_selection.hpp"

#include <gtest/gtest.h>

#include <set>

#include "conformance/engine/command_line_case.hpp"
#include "tests/error_of.hpp"

namespace sdpa::conformance {
namespace {

using testing_util::error_of;

TEST(CaseSelection, NothingNamedIsTheSmokeTierWithItsGoldenCases) {
  std::string name;
  const auto cases = select_cases(CaseSelection{}, &name);
  EXPECT_EQ(name, "smoke");
  std::size_t generated = 0, golden = 0;
  for (const auto& [id, file] : cases) (file.empty() ? generated : golden)++;
  EXPECT_GT(generated, 10u);
  EXPECT_GT(golden, 0u);
}

TEST(CaseSelection, CommandLineCasesAreCanonicalAndCustom) {
  CaseSelection s;
  s.cases = {"b1.hq1.l4.s4.dqk8.f32"};
  std::string name;
  const auto cases = select_cases(s, &name);
  EXPECT_EQ(name, "custom");
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].first, format_case_id(parse_case_id_or_throw("b1.hq1.l4.s4.dqk8.f32")));
  EXPECT_EQ(cases[0].second, "");
}

TEST(CaseSelection, AnInvalidCommandLineCaseNamesTheRule) {
  CaseSelection s;
  s.cases = {"b1.hq3.hkv2.l4.s4.dqk8.f32"};  // Hq not a multiple of Hkv
  std::string name;
  const std::string e = error_of([&] { select_cases(s, &name); });
  EXPECT_NE(e.find("INVALID case b1.hq3.hkv2.l4.s4.dqk8.f32"), std::string::npos) << e;
  EXPECT_NE(e.find("hkv"), std::string::npos) << e;
}

TEST(CaseSelection, AnUnparsableCommandLineCaseNamesTheField) {
  CaseSelection s;
  s.cases = {"b1.hq1.l4.s4.dqk8.f99"};
  std::string name;
  EXPECT_NE(error_of([&] { select_cases(s, &name); }), "");
}

TEST(CaseSelection, ConflictingOptionsAreRefused) {
  std::string name;
  CaseSelection sample_and_tier;
  sample_and_tier.sample = 3;
  sample_and_tier.tier = "smoke";
  EXPECT_NE(error_of([&] { select_cases(sample_and_tier, &name); }).find("--sample cannot"),
            std::string::npos);
  CaseSelection max_work_alone;
  max_work_alone.max_work = 1000;
  EXPECT_NE(error_of([&] { select_cases(max_work_alone, &name); }).find("needs --sample"),
            std::string::npos);
  CaseSelection two_golden_files;
  two_golden_files.cases = {"b1.hq1.l4.s4.dqk8.f32"};
  two_golden_files.golden = {"a.h5", "b.h5"};
  EXPECT_NE(error_of([&] { select_cases(two_golden_files, &name); }).find("one golden file"),
            std::string::npos);
  CaseSelection bad_filter;
  bad_filter.filter = "(";
  EXPECT_NE(error_of([&] { select_cases(bad_filter, &name); }).find("--filter"), std::string::npos);
  CaseSelection unknown_tier;
  unknown_tier.tier = "no-such-tier";
  EXPECT_NE(error_of([&] { select_cases(unknown_tier, &name); }), "");
}

TEST(CaseSelection, TheSampleDependsOnlyOnTheSeed) {
  CaseSelection s;
  s.sample = 5;
  s.seed = 7;
  std::string name;
  const auto a = select_cases(s, &name);
  EXPECT_EQ(name, "sample");
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(select_cases(s, &name), a);
  s.seed = 8;
  EXPECT_NE(select_cases(s, &name), a);
}

TEST(CaseSelection, ASeedReseedsGeneratedCasesOnly) {
  std::string name;
  const auto plain = select_cases(CaseSelection{}, &name);
  CaseSelection s;
  s.seed = 5;
  const auto reseeded = select_cases(s, &name);
  ASSERT_EQ(plain.size(), reseeded.size());
  std::size_t changed = 0;
  for (std::size_t i = 0; i < plain.size(); ++i) {
    if (plain[i].second.empty()) {
      changed += plain[i].first != reseeded[i].first;
    } else {
      EXPECT_EQ(plain[i], reseeded[i]) << "a golden case's data is the file's";
    }
  }
  EXPECT_GT(changed, 0u);
}

TEST(CaseSelection, TheFilterKeepsMatchingIds) {
  CaseSelection s;
  s.filter = "causal=br";
  std::string name;
  const auto cases = select_cases(s, &name);
  ASSERT_FALSE(cases.empty());
  for (const auto& [id, file] : cases) EXPECT_NE(id.find("causal=br"), std::string::npos) << id;
}

TEST(CommandLineCase, ACaseLargerThanTheMemoryLimitIsRefusedWithItsSize) {
  const std::string id = "b1.hq1.l99999999999.s1.dqk8.f32";
  const Case c = parse_command_line_case(id);
  const std::string e =
      error_of([&] { check_command_line_case_fits(id, c, false, std::uint64_t(1) << 30); });
  EXPECT_NE(e.find("case " + id + " needs"), std::string::npos) << e;
  EXPECT_NE(e.find("--max-case-memory"), std::string::npos) << e;
  EXPECT_EQ(error_of([&] {
              check_command_line_case_fits("small",
                                           parse_command_line_case("b1.hq1.l4.s4.dqk8.f32"), false,
                                           std::uint64_t(1) << 30);
            }),
            "");
}

// A misspelt data generator is the caller's error, said when the cases are selected, not a
// FAIL charged to the backend when its data is generated (it was: "gen=normall").
TEST(CaseSelection, AMisspeltGeneratorIsAnErrorBeforeAnythingRuns) {
  CaseSelection s;
  s.cases = {"b1.hq2.l8.s8.dqk8.f32.seed1.gen=normall"};
  std::string name;
  try {
    select_cases(s, &name);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown data generator 'normall' (known: normal,"),
              std::string::npos)
        << e.what();
  }
  s.cases = {"b1.hq2.l8.s8.dqk8.f32.seed1.gen=normal"};
  EXPECT_EQ(select_cases(s, &name).size(), 1u);
}

}  // namespace
}  // namespace sdpa::conformance
