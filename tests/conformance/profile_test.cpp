// Certification profiles (conformance/profile.hpp): the built-in profiles load, their sampled
// parts use required features only and are deterministic, and the verdict follows the rule.
#include "conformance/profile.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "conformance/tier.hpp"
#include "core/case_id.hpp"
#include "tests/error_of.hpp"

namespace sdpa::conformance {
namespace {

namespace fs = std::filesystem;

// A profile file in a fresh temporary directory.
std::string write_profile(const std::string& name, const std::string& text) {
  const fs::path dir =
      fs::temp_directory_path() / ("sdpa_profile_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path p = dir / (name + ".profile");
  std::ofstream(p) << text;
  return p.string();
}

std::string error_of(const std::string& path) {
  return testing_util::error_of([&] { load_profile(path); });
}

CaseRecord record(const std::string& id, Status s) {
  CaseRecord r;
  r.case_id = id;
  r.backend = "b";
  r.status = s;
  r.features = case_features(parse_case_id_or_throw(id).problem);
  return r;
}

TEST(Profile, BuiltinProfilesLoadAndSampleOnlyRequiredFeatures) {
  const auto names = builtin_profile_names();
  for (const char* want : {"inference-core", "training", "long-context", "full"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
  for (const auto& name : names) {
    const Profile p = load_profile(name);
    EXPECT_FALSE(p.description.empty()) << name;
    EXPECT_GT(p.sample_count, 0) << name;
    const auto sampled = sampled_cases(p, p.sample_seed);
    ASSERT_EQ(std::ssize(sampled), p.sample_count) << name;
    for (const auto& id : sampled) {
      EXPECT_TRUE(is_required(p, case_features(parse_case_id_or_throw(id).problem)))
          << name << " " << id;
    }
    EXPECT_EQ(sampled, sampled_cases(p, p.sample_seed)) << "deterministic: " << name;
    EXPECT_NE(sampled, sampled_cases(p, p.sample_seed + 1)) << "seeded: " << name;
  }
}

TEST(Profile, FrozenInferenceCasesAreAllRequired) {
  // The frozen list of inference-core uses its features only: every case counts.
  const Profile p = load_profile("inference-core");
  for (const auto& id : p.frozen) {
    EXPECT_TRUE(is_required(p, case_features(parse_case_id_or_throw(id).problem))) << id;
  }
}

TEST(Profile, ExtendsTakesTheParentsRequirementsAndCases) {
  const Profile core = load_profile("inference-core");
  const Profile training = load_profile("training");
  for (const auto& tag : core.require) EXPECT_TRUE(training.require.count(tag)) << tag;
  EXPECT_TRUE(training.require.count("dropout"));
  EXPECT_TRUE(training.require.count("weights"));
  ASSERT_GT(training.frozen.size(), core.frozen.size());
  EXPECT_TRUE(std::equal(core.frozen.begin(), core.frozen.end(), training.frozen.begin()));
  EXPECT_NE(training.text.find(core.text), std::string::npos) << "the parent's text is kept";
}

TEST(Profile, FullRequiresEveryFeatureTag) {
  const Profile p = load_profile("full");
  for (const auto& tag : known_feature_tags()) {
    if (tag != "plain") EXPECT_TRUE(p.require.count(tag)) << tag;
  }
}

TEST(Profile, ErrorsNameTheFileLineAndProblem) {
  EXPECT_NE(error_of("no-such-profile").find("unknown profile 'no-such-profile' (known: "),
            std::string::npos);
  const std::string head = "description: d\nsample: 1 seed=1\n";
  auto bad_tag = write_profile("bad_tag", head + "require: dtype=f32 colour\n");
  EXPECT_NE(error_of(bad_tag).find("bad_tag.profile:3: unknown feature 'colour'"),
            std::string::npos)
      << error_of(bad_tag);
  auto no_require = write_profile("no_require", head);
  EXPECT_NE(error_of(no_require).find("no 'require:' line"), std::string::npos);
  auto no_sample = write_profile("no_sample", "description: d\nrequire: dtype=f32\n");
  EXPECT_NE(error_of(no_sample).find("no 'sample:' line"), std::string::npos);
  auto no_dtype = write_profile("no_dtype", head + "require: gqa\n");
  EXPECT_NE(error_of(no_dtype).find("require names no element type"), std::string::npos);
  auto bad_sample =
      write_profile("bad_sample", "description: d\nrequire: dtype=f32\nsample: 1 speed=3\n");
  EXPECT_NE(error_of(bad_sample).find("unknown key 'speed=3'"), std::string::npos);
  auto invalid_case =
      write_profile("invalid_case", head + "require: dtype=f32\nb1.hq3.hkv2.l4.s4.dqk4.f32\n");
  EXPECT_NE(error_of(invalid_case).find("is INVALID"), std::string::npos) << error_of(invalid_case);
  auto bad_id = write_profile("bad_id", head + "require: dtype=f32\nb1.hqX.l4.s4.dqk4.f32\n");
  EXPECT_NE(error_of(bad_id).find("bad_id.profile:4:"), std::string::npos) << error_of(bad_id);
}

TEST(Profile, TheVerdictFollowsTheRule) {
  Profile p;
  p.require = {"dtype=f16", "causal=br"};
  const std::string req = "b1.hq1.l4.s4.dqk8.f16.causal=br.seed1.gen=normal";
  const std::string plain = "b1.hq1.l4.s4.dqk8.f16.seed1.gen=normal";
  const std::string outside = "b1.hq1.l4.s4.dqk8.f32.seed1.gen=normal";  // f32 is not required
  // Passing required cases (a QUALITY_WARNING passes), a MISTRUSTED one, a failing case
  // outside: met, the outside failure recorded.
  ProfileVerdict v =
      judge_profile(p,
                    {record(req, Status::pass), record(plain, Status::quality_warning),
                     record(req, Status::mistrusted), record(outside, Status::fail)},
                    4);
  EXPECT_TRUE(v.met);
  EXPECT_EQ(v.required, 3);
  EXPECT_EQ(v.required_passed, 2);
  EXPECT_EQ(v.required_mistrusted, 1);
  EXPECT_EQ(v.outside, 1);
  EXPECT_EQ(v.outside_failures, 1);
  // Each of these on a required case fails the profile, with its reason.
  for (Status s : {Status::not_supported, Status::fail, Status::crash, Status::timeout,
                   Status::invalid, Status::expected_failure}) {
    v = judge_profile(p, {record(req, Status::pass), record(req, s)}, 2);
    EXPECT_FALSE(v.met) << status_name(s);
    ASSERT_EQ(v.reasons.size(), 1u) << status_name(s);
    EXPECT_EQ(v.reasons[0].rfind(status_name(s), 0), 0u) << v.reasons[0];
  }
  EXPECT_NE(judge_profile(p, {record(req, Status::not_supported)}, 1)
                .reasons[0]
                .find("declines a required feature"),
            std::string::npos);
  EXPECT_NE(judge_profile(p, {record(req, Status::expected_failure)}, 1)
                .reasons[0]
                .find("only expected to fail"),
            std::string::npos);
  // Missing records (a shard): incomplete, not met.
  v = judge_profile(p, {record(req, Status::pass)}, 2);
  EXPECT_FALSE(v.complete);
  EXPECT_FALSE(v.met);
  EXPECT_TRUE(v.reasons.empty());
}

TEST(Profile, CaseListTextIsOneLinePerCase) {
  EXPECT_EQ(case_list_text({{"a", ""}, {"b", default_source_dir() + "/golden/data/x.h5"}}),
            "a\t-\nb\tgolden/data/x.h5\n");
}

}  // namespace
}  // namespace sdpa::conformance
