// Certification profiles (conformance/certification/profile.hpp): the built-in profiles load, their
// sampled parts use required features only and are deterministic, and the verdict follows the rule.
#include "conformance/certification/profile.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "conformance/engine/tier.hpp"
#include "core/case_id.hpp"
#include "kernels/registry.hpp"
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

// Whether per-batch lengths change what causal bottom-right lets some valid row attend: the
// last key row i may attend, i + S_b - L_b, differs from i + S - L within [-1, S_b - 1].
bool bottom_right_depends_on_per_batch_lengths(const Problem& p) {
  if (p.causal != Causal::bottom_right) return false;
  for (std::int64_t b = 0; b < p.batch; ++b) {
    const std::int64_t lb = seqlen_q(p, b), sb = seqlen_kv(p, b);
    for (std::int64_t i = 0; i < lb; ++i) {
      auto last = [&](std::int64_t off) { return std::clamp<std::int64_t>(i + off, -1, sb - 1); };
      if (last(sb - lb) != last(p.len_kv - p.len_q)) return true;
    }
  }
  return false;
}

TEST(Profile, TheFixedPartHoldsThePairwiseCasesOfTheRequiredFeatures) {
  for (const auto& name : builtin_profile_names()) {
    const Profile p = load_profile(name);
    ASSERT_FALSE(p.pairwise.empty()) << name;
    const std::set<std::string> frozen(p.frozen.begin(), p.frozen.end());
    EXPECT_EQ(frozen.size(), p.frozen.size()) << name << ": a case twice in the fixed part";
    for (const auto& id : p.pairwise) {
      EXPECT_TRUE(frozen.count(id)) << name << " " << id;
      const Problem problem = parse_case_id_or_throw(id).problem;
      EXPECT_TRUE(validate(problem).empty()) << name << " " << id;
      EXPECT_TRUE(is_required(p, case_features(problem))) << name << " " << id;
      // The LSE, when required, is asked for in every pairwise case.
      EXPECT_EQ(problem.want_lse, p.require.count("lse") > 0) << name << " " << id;
    }
    // The fixed part is the same whatever the seed; only the sampled part follows it.
    const auto a = profile_cases(p, 11), b = profile_cases(p, 12);
    const std::size_t fixed = a.size() - static_cast<std::size_t>(p.sample_count);
    ASSERT_EQ(a.size(), b.size()) << name;
    EXPECT_TRUE(std::equal(a.begin(), a.begin() + std::ptrdiff_t(fixed), b.begin())) << name;
    EXPECT_NE(a, b) << name;
  }
}

TEST(Profile, PerBatchLengthsTimesBottomRightIsInTheFixedPart) {
  // Every built-in profile requiring both has a fixed case where S_b - L_b != S - L changes
  // the causal bottom-right mask of a valid row, and a pairwise case is one: inference-core's
  // listed cases have none (the varlen one masks the same keys with either offset).
  int profiles = 0;
  for (const auto& name : builtin_profile_names()) {
    const Profile p = load_profile(name);
    if (!p.require.count("causal=br") || !p.require.count("varlen=padded")) continue;
    ++profiles;
    auto discriminates = [](const std::string& id) {
      return bottom_right_depends_on_per_batch_lengths(parse_case_id_or_throw(id).problem);
    };
    EXPECT_TRUE(std::any_of(p.pairwise.begin(), p.pairwise.end(), discriminates)) << name;
    if (name == "inference-core") {
      std::vector<std::string> listed;
      for (const auto& id : p.frozen)
        if (std::find(p.pairwise.begin(), p.pairwise.end(), id) == p.pairwise.end())
          listed.push_back(id);
      EXPECT_FALSE(std::any_of(listed.begin(), listed.end(), discriminates))
          << "a listed case now discriminates: the comment above is out of date";
    }
  }
  EXPECT_GE(profiles, 1) << "no built-in profile requires both";
}

TEST(Profile, TheFixedPartCoversTheBackwardsPairs) {
  // Every built-in profile requiring the backward: each pair of the values its pairwise cases
  // may take meets in one backward case of the fixed part, on each pair backend with a
  // backward, the lengths judged against the backward's own blocks (PairPass::backward).
  // Training's fixed part once met each value in a backward case but 41 of those pairs only
  // in forward cases, and had no backward case beyond cpu.flash's 256-row backward block.
  const Device device = with_isa_target(detect_cpu(), "scalar");
  std::vector<const Backend*> backends;
  for (const auto& name : pair_backends()) backends.push_back(&find_backend_or_throw(name));
  int profiles = 0;
  for (const auto& name : builtin_profile_names()) {
    const Profile p = load_profile(name);
    if (!p.require.count("backward")) continue;
    ++profiles;
    const PairRestriction r = pair_restriction(p.require);
    const CoveringSet set = generate_covering_set(backends, device, r);
    int with_backward = 0;
    for (std::size_t i = 0; i < backends.size(); ++i) {
      const Backend& b = *backends[i];
      if (!b.capabilities().backward) continue;
      ++with_backward;
      auto jobs = accepted_jobs(p.frozen, b, device, {IsaTarget::scalar}, 1);
      const auto two = accepted_jobs(p.frozen, b, device, {IsaTarget::scalar}, 2);
      jobs.insert(jobs.end(), two.begin(), two.end());
      const PairCoverage cov =
          pair_coverage(b, jobs, set.backward_impossible[i], PairPass::backward);
      std::size_t wanted = 0;
      std::set<std::string> covered;
      for (const auto& pair : cov.covered) {
        covered.insert(describe_pair(cov.dimensions, pair));
        if (pair_allowed(cov.dimensions, r, pair)) ++wanted;
      }
      // Wanted: the pairs of allowed values that some admitted case can have (the generator
      // finds none for L = 0 where the profile does not require empty problems), and the
      // SIMD and thread pairs of the values some such pair holds.
      const auto& impossible = set.backward_impossible[i];
      auto buildable_pair = [&](const ValuePair& q) {
        return pair_allowed(cov.dimensions, r, q) &&
               std::find(impossible.begin(), impossible.end(), q) == impossible.end();
      };
      std::set<std::pair<int, int>> buildable;  // generated values some buildable pair holds
      for (const auto* list : {&cov.covered, &cov.uncovered}) {
        for (const auto& q : *list) {
          if (!cov.dimensions[q.d1].generated || !cov.dimensions[q.d2].generated) continue;
          if (!buildable_pair(q)) continue;
          buildable.insert({q.d1, q.v1});
          buildable.insert({q.d2, q.v2});
        }
      }
      auto value_buildable = [&](int d, int v) {
        return !cov.dimensions[d].generated || buildable.count({d, v}) > 0;
      };
      for (const auto& pair : cov.uncovered) {
        const bool wanted_pair = buildable_pair(pair) && value_buildable(pair.d1, pair.v1) &&
                                 value_buildable(pair.d2, pair.v2);
        EXPECT_FALSE(wanted_pair) << name << " on " << b.name()
                                  << ": no backward case of the fixed part has "
                                  << describe_pair(cov.dimensions, pair);
      }
      EXPECT_GT(wanted, 300u) << name << " on " << b.name();
      if (b.name() == "cpu.flash") {
        // Both sides of the backward's row block (256 query rows), with causal bottom-right.
        for (const char* pair : {"causal=br x query_rows=<256", "causal=br x query_rows=>256"})
          EXPECT_TRUE(covered.count(pair)) << name << ": " << pair;
      }
    }
    EXPECT_EQ(with_backward, 2) << "cpu.math and cpu.flash have a backward";
  }
  EXPECT_GE(profiles, 1) << "no built-in profile requires the backward";
}

TEST(Profile, PairwiseCasesUseOnlyTheRequiredValues) {
  // f32, causal bottom-right and the LSE: no other element type, mask, GQA, per-batch
  // lengths, layout; no decode or empty case (the lengths that would make one are left out).
  const Profile p = load_profile(write_profile("pairs_br",
                                               "description: d\nrequire: dtype=f32 causal=br lse\n"
                                               "sample: 1 seed=1\nb1.hq2.l9.s17.dqk8.f32.seed1\n"));
  ASSERT_FALSE(p.pairwise.empty());
  bool causal = false, plain = false;
  for (const auto& id : p.pairwise) {
    const Problem c = parse_case_id_or_throw(id).problem;
    const auto features = case_features(c);
    EXPECT_TRUE(is_required(p, features)) << id;
    EXPECT_EQ(c.dtype, DType::f32) << id;
    EXPECT_TRUE(c.want_lse) << id;
    EXPECT_GT(c.len_q, 1) << id;
    (c.causal == Causal::bottom_right ? causal : plain) = true;
  }
  EXPECT_TRUE(causal && plain) << "both values of the causal dimension";
  EXPECT_EQ(p.frozen.front(), "b1.hq2.hkv2.l9.s17.dqk8.dv8.f32.seed1.gen=normal") << "listed first";
  EXPECT_EQ(p.frozen.size(), p.pairwise.size() + 1);
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
    if (tag != "plain") {
      EXPECT_TRUE(p.require.count(tag)) << tag;
    }
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

// A required case judged without an output the profile requires (the backend does not return
// it: requested_outputs.hpp) is no evidence for that output: not met, with the reason.
TEST(Profile, ARequiredOutputNotReturnedIsNotMet) {
  Profile p;
  p.require = {"dtype=f16", "lse"};
  CaseRecord r = record("b1.hq1.l4.s4.dqk8.f16.lse.seed1.gen=normal", Status::pass);
  r.not_returned = {"lse"};
  const ProfileVerdict v = judge_profile(p, {r}, 1);
  EXPECT_FALSE(v.met);
  ASSERT_EQ(v.reasons.size(), 1u);
  EXPECT_NE(v.reasons[0].find("does not return a required output, not judged: lse"),
            std::string::npos)
      << v.reasons[0];
  r.not_returned.clear();
  EXPECT_TRUE(judge_profile(p, {r}, 1).met);
}

TEST(Profile, ARequiredBackwardMustBeDeterministic) {
  Profile p;
  p.require = {"dtype=f16", "lse", "backward"};
  const std::string bwd = "b1.hq1.l4.s4.dqk8.f16.lse.bwd.seed1.gen=normal";
  CaseRecord r = record(bwd, Status::pass);
  EXPECT_TRUE(judge_profile(p, {r}, 1).met);
  r.nondeterministic_backward = true;
  r.message = "the backward is not bitwise deterministic: dk differs between 2 and 1 threads";
  const ProfileVerdict v = judge_profile(p, {r}, 1);
  EXPECT_FALSE(v.met);
  ASSERT_EQ(v.reasons.size(), 1u);
  EXPECT_NE(v.reasons[0].find("not bitwise deterministic"), std::string::npos) << v.reasons[0];
  // Without the backward required, the record is a pass like any other.
  p.require.erase("backward");
  EXPECT_EQ(judge_profile(p, {r}, 1).required, 0);
}

TEST(Profile, CaseListTextIsOneLinePerCase) {
  EXPECT_EQ(case_list_text({{"a", ""}, {"b", default_source_dir() + "/golden/data/x.h5"}}),
            "a\t-\nb\tgolden/data/x.h5\n");
}

}  // namespace
}  // namespace sdpa::conformance
