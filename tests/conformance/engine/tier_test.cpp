#include "conformance/engine/tier.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace sdpa {

using namespace sdpa::conformance;
namespace {

namespace fs = std::filesystem;

TEST(Tier, AlternativesExpandToEveryCombinationInOrder) {
  EXPECT_EQ(expand_alternatives("a{1,2}b{x,y}"),
            (std::vector<std::string>{"a1bx", "a1by", "a2bx", "a2by"}));
  EXPECT_EQ(expand_alternatives("plain"), (std::vector<std::string>{"plain"}));
  EXPECT_THROW(expand_alternatives("a{1,2"), std::invalid_argument);
  EXPECT_THROW(expand_alternatives("a}"), std::invalid_argument);
  EXPECT_THROW(expand_alternatives("a{1,{2}}"), std::invalid_argument);
  // Found by fuzz/targets/tier_file.cpp: 13 groups of two is 8192 IDs, over the limit.
  std::string many;
  for (int i = 0; i < 13; ++i) many += "{a,b}";
  try {
    expand_alternatives(many);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "the alternatives expand to more than 4096 case IDs");
  }
  EXPECT_EQ(expand_alternatives(many.substr(5)).size(), 4096u);
}

class TierFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sdpa_tier_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  fs::path dir_;
};

TEST_F(TierFiles, IncludesCommentsAndDeduplication) {
  write("base.tier", "# comment\nb1.hq1.l{1,2}.s1.dqk8.f32.seed1.gen=normal  # trailing\n\n");
  write("top.tier", "include base\nb1.hq1.l2.s1.dqk8.f32.seed1.gen=normal\n");
  const TierEntries t = load_tier("top", dir_.string(), dir_.string());
  EXPECT_EQ(t.case_ids,
            (std::vector<std::string>{"b1.hq1.hkv1.l1.s1.dqk8.dv8.f32.seed1.gen=normal",
                                      "b1.hq1.hkv1.l2.s1.dqk8.dv8.f32.seed1.gen=normal"}));
}

TEST_F(TierFiles, FamilyLinesNameTheCasesAfterThemAndStayInTheirFile) {
  write("base.tier",
        "b1.hq1.l3.s1.dqk8.f32.seed1.gen=normal\n# family: masks\n"
        "b1.hq1.l{1,2}.s1.dqk8.f32.seed1.gen=normal\n");
  write("top.tier",
        "# family: dtype\ninclude base\nb1.hq1.l4.s1.dqk8.f32.seed1.gen=normal\n"
        "b1.hq1.l1.s1.dqk8.f32.seed1.gen=normal\n  # family:   golden  \ngolden g.h5\n");
  write("g.h5", "");
  const TierEntries t = load_tier("top", dir_.string(), dir_.string());
  ASSERT_EQ(t.case_ids.size(), 4u);
  // l3 comes before base's first family line; l1 and l2 follow it; after the include, top's
  // own family holds again; the duplicate l1 keeps the family of its first occurrence.
  EXPECT_EQ(t.case_families, (std::vector<std::string>{"", "masks", "masks", "dtype"}));
  EXPECT_EQ(t.case_ids[3], "b1.hq1.hkv1.l4.s1.dqk8.dv8.f32.seed1.gen=normal");
  EXPECT_EQ(t.golden_families, (std::vector<std::string>{"golden"}));
  write("badfam.tier", "# family: Masks!\n");
  try {
    load_tier("badfam", dir_.string(), dir_.string());
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("badfam.tier:1"), std::string::npos) << e.what();
  }
}

TEST_F(TierFiles, ErrorsNameTheFileLineAndField) {
  write("bad.tier",
        "b1.hq1.l1.s1.dqk8.f32.seed1.gen=normal\nb1.hqX.l1.s1.dqk8.f32.seed1.gen=normal\n");
  try {
    load_tier("bad", dir_.string(), dir_.string());
    FAIL();
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("bad.tier:2"), std::string::npos) << m;
    EXPECT_NE(m.find("'hq'"), std::string::npos) << m;
  }
  write("cycle.tier", "include cycle\n");
  EXPECT_THROW(load_tier("cycle", dir_.string(), dir_.string()), std::invalid_argument);
  // Found by fuzz/targets/tier_file.cpp: a missing include named only the missing file.
  write("noinc.tier", "b1.hq1.l1.s1.dqk8.f32\ninclude sloke\n");
  try {
    load_tier("noinc", dir_.string(), dir_.string());
    FAIL();
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("noinc.tier:2: include sloke: tier file not found: "), std::string::npos) << m;
  }
  write("nogold.tier", "golden missing.h5\n");
  EXPECT_THROW(load_tier("nogold", dir_.string(), dir_.string()), std::invalid_argument);
  try {
    load_tier("nonexistent", dir_.string(), dir_.string());
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("known:"), std::string::npos);
  }
}

TEST(Tier, BuiltInTiersParse) {
  for (const char* name : {"smoke", "ci", "nightly"}) {
    const TierEntries t = load_tier(name, default_tiers_dir(), default_source_dir());
    EXPECT_GT(t.case_ids.size(), 10u) << name;
    EXPECT_FALSE(t.golden_files.empty()) << name;
    // Every case and golden set of a built-in tier belongs to a family.
    ASSERT_EQ(t.case_families.size(), t.case_ids.size()) << name;
    for (std::size_t i = 0; i < t.case_ids.size(); ++i)
      EXPECT_FALSE(t.case_families[i].empty()) << name << ": " << t.case_ids[i];
    for (const auto& f : t.golden_families) EXPECT_FALSE(f.empty()) << name;
  }
}

}  // namespace
}  // namespace sdpa
