// Certification bundles (conformance/certification/bundle.hpp): a written bundle checks intact, and
// every kind of edit is found and named.
#include "conformance/certification/bundle.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "conformance/certification/sha256.hpp"
#include "core/case_id.hpp"

namespace sdpa::conformance {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void replace_in(const fs::path& p, const std::string& from, const std::string& to) {
  std::string s = read(p);
  const auto at = s.find(from);
  ASSERT_NE(at, std::string::npos) << from << " in " << p;
  s.replace(at, from.size(), to);
  std::ofstream(p) << s;
}

bool has_problem(const BundleCheck& c, const std::string& text) {
  for (const auto& p : c.problems)
    if (p.find(text) != std::string::npos) return true;
  return false;
}

std::string problems(const BundleCheck& c) {
  std::string s;
  for (const auto& p : c.problems) s += p + "\n";
  return s;
}

class Bundle : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("sdpa_bundle_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"b1.hq1.l4.s4.dqk8.f16.causal=br.seed1.gen=normal", ""},
        {"b1.hq1.l4.s4.dqk8.f32.seed1.gen=normal", ""}};
    Profile p;
    p.require = {"dtype=f16", "causal=br"};
    for (const auto& [id, file] : cases) {
      CaseRecord r;
      r.case_id = id;
      r.backend = "cpu.math";
      r.status = Status::pass;
      r.features = case_features(parse_case_id_or_throw(id).problem);
      c_.run.records.push_back(r);
    }
    c_.run.tier = "profile:test";
    c_.case_list = case_list_text(cases);
    c_.profile_text = "description: d\nrequire: dtype=f16 causal=br\nsample: 0 seed=1\n";
    auto& m = c_.manifest;
    m["schema"] = "sdpa-cts.certification";
    m["suite"] = {{"version", "0"}, {"commit", "x"}, {"tolerance_version", "t"}};
    m["profile"] = {{"name", "test"},
                    {"file_sha256", sha256_hex(c_.profile_text)},
                    {"require", p.require},
                    {"cases", cases.size()},
                    {"case_list_sha256", sha256_hex(c_.case_list)}};
    m["backend"] = {{"name", "cpu.math"}, {"plugin", nullptr}};
    m["run"] = {{"shard", {{"index", 0}, {"count", 1}}}};
    m["expectations"] = nullptr;
    m["verdict"] = verdict_json(judge_profile(p, c_.run.records, cases.size()), cases.size());
    write_bundle(dir_.string(), c_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  BundleContents c_;
};

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_THROW(sha256_file("/no/such/file"), std::invalid_argument);
}

TEST_F(Bundle, AWrittenBundleIsIntact) {
  const BundleCheck c = check_bundle(dir_.string());
  EXPECT_TRUE(c.problems.empty()) << problems(c);
  EXPECT_EQ(c.records.size(), 2u);
  EXPECT_EQ(c.case_ids.size(), 2u);
  for (const char* f :
       {kManifestFile, kCaseListFile, kProfileCopyFile, kDigestsFile, "results.jsonl",
        "summary.json", "junit.xml", "summary.md", "report.html"}) {
    EXPECT_TRUE(fs::exists(dir_ / f)) << f;
  }
}

TEST_F(Bundle, AnEditedLineIsFound) {
  replace_in(dir_ / "results.jsonl", "\"PASS\"", "\"FAIL\"");
  const BundleCheck c = check_bundle(dir_.string());
  EXPECT_TRUE(has_problem(c, "edited file results.jsonl")) << problems(c);
  EXPECT_TRUE(has_problem(c, "summary.json counts")) << problems(c);
  EXPECT_TRUE(has_problem(c, "manifest verdict 'met' is true, the records give false"))
      << problems(c);
}

TEST_F(Bundle, AnEditedManifestIsFound) {
  replace_in(dir_ / kManifestFile, "\"cpu.math\"", "\"cpu.flash\"");
  const BundleCheck c = check_bundle(dir_.string());
  EXPECT_TRUE(has_problem(c, "edited file manifest.json")) << problems(c);
  EXPECT_TRUE(has_problem(c, "is not case 1 of the case list on cpu.flash")) << problems(c);
}

TEST_F(Bundle, MissingAndExtraFilesAreFound) {
  fs::remove(dir_ / "junit.xml");
  std::ofstream(dir_ / "extra.txt") << "x";
  const BundleCheck c = check_bundle(dir_.string());
  EXPECT_TRUE(has_problem(c, "missing file junit.xml")) << problems(c);
  EXPECT_TRUE(has_problem(c, "file extra.txt is not listed")) << problems(c);
  fs::remove(dir_ / kDigestsFile);
  EXPECT_TRUE(has_problem(check_bundle(dir_.string()), "missing SHA256SUMS"));
}

TEST_F(Bundle, AnEditedCaseListOrProfileIsFoundEvenWithNewDigests) {
  // Whoever rewrites SHA256SUMS still cannot change the case list behind the manifest.
  replace_in(dir_ / kCaseListFile, "seed1", "seed2");
  replace_in(dir_ / kProfileCopyFile, "causal=br", "causal=tl");
  std::string sums;
  for (const auto& e : fs::directory_iterator(dir_)) {
    const std::string n = e.path().filename().string();
    if (n != kDigestsFile) sums += sha256_file(e.path().string()) + "  " + n + "\n";
  }
  std::ofstream(dir_ / kDigestsFile) << sums;
  const BundleCheck c = check_bundle(dir_.string());
  EXPECT_TRUE(has_problem(c, "cases.txt does not have the manifest's case_list_sha256"))
      << problems(c);
  EXPECT_TRUE(has_problem(c, "profile.txt does not have the manifest's profile file_sha256"))
      << problems(c);
}

TEST_F(Bundle, NothingElseIsOverwritten) {
  const fs::path other = dir_.string() + "_other";
  fs::create_directories(other);
  std::ofstream(other / "precious.txt") << "keep";
  EXPECT_THROW(write_bundle(other.string(), c_), std::runtime_error);
  EXPECT_EQ(read(other / "precious.txt"), "keep");
  EXPECT_FALSE(fs::exists(other / kManifestFile));
  fs::remove_all(other);
  // An earlier bundle may be replaced.
  EXPECT_NO_THROW(write_bundle(dir_.string(), c_));
  EXPECT_TRUE(check_bundle(dir_.string()).problems.empty());
}

}  // namespace
}  // namespace sdpa::conformance
