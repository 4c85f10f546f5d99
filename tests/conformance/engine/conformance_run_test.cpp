// The run behind `sdpa-cts run` and `certify` (conformance/engine/conformance_run.hpp): the
// jobs it builds from cases and backends, shards, refusals, and a case too large for the run.
// Part of runner_tests: the run forks workers, and this binary never runs an OpenMP region
// before forking.
#include "conformance/engine/conformance_run.hpp"

#include <gtest/gtest.h>

#include "tests/error_of.hpp"

namespace sdpa::conformance {
namespace {

using testing_util::error_of;

const std::vector<SelectedCase> kTwoCases = {
    {"b1.hq2.l9.s17.dqk8.f32.seed1.gen=normal", ""},
    {"b1.hq1.l5.s7.dqk16.f32.causal=br.seed2.gen=normal", ""}};

RunRequest request(std::vector<std::string> backends) {
  RunRequest r;
  r.backends = std::move(backends);
  r.jobs = 2;
  r.timeout = 60;
  return r;
}

TEST(ConformanceRun, EveryCaseRunsOnEveryBackendInCaseOrder) {
  const RunResult result = execute_run(request({"cpu.math", "cpu.flash"}), kTwoCases, "custom");
  const RunSummary& s = result.summary;
  ASSERT_EQ(s.records.size(), 4u);
  EXPECT_EQ(s.cases_total, 2u);
  EXPECT_EQ(s.jobs_total, 4u);
  EXPECT_EQ(s.tier, "custom");
  EXPECT_EQ(result.backends, (std::vector<std::string>{"cpu.math", "cpu.flash"}));
  const char* order[4][2] = {{"cpu.math", kTwoCases[0].first.c_str()},
                             {"cpu.flash", kTwoCases[0].first.c_str()},
                             {"cpu.math", kTwoCases[1].first.c_str()},
                             {"cpu.flash", kTwoCases[1].first.c_str()}};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(s.records[i].backend, order[i][0]);
    EXPECT_EQ(s.records[i].case_id, order[i][1]);
    EXPECT_EQ(s.records[i].status, Status::pass) << s.records[i].message;
    EXPECT_NE(s.records[i].repro.find("sdpa-cts run"), std::string::npos);
  }
}

TEST(ConformanceRun, AShardKeepsWholeCasesAndCountsTheWholeRun) {
  RunRequest r = request({"cpu.math", "cpu.flash"});
  finish_run_request(&r, "1/2", "");
  EXPECT_EQ(r.shard.index, 1);
  EXPECT_EQ(r.shard.count, 2);
  const RunSummary s = execute_run(r, kTwoCases, "custom").summary;
  ASSERT_EQ(s.records.size(), 2u);
  for (const auto& rec : s.records) EXPECT_EQ(rec.case_id, kTwoCases[1].first);
  EXPECT_EQ(s.jobs_total, 4u);
  EXPECT_EQ(s.shard_index, 1);
  EXPECT_EQ(s.shard_count, 2);
  EXPECT_NE(error_of([&] { finish_run_request(&r, "2/2", ""); }), "");
}

TEST(ConformanceRun, BadRequestsAreRefusedBeforeAnythingRuns) {
  const std::string unknown =
      error_of([&] { execute_run(request({"cpu.nope"}), kTwoCases, "custom"); });
  EXPECT_NE(unknown.find("unknown backend 'cpu.nope' (known: "), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("cpu.flash"), std::string::npos) << unknown;
  EXPECT_NE(
      error_of([&] { execute_run(request({"cpu.math"}), {}, "custom"); }).find("no case selected"),
      std::string::npos);
  RunRequest bad_simd = request({"cpu.math"});
  bad_simd.simd = "avx9000";
  EXPECT_NE(error_of([&] { execute_run(bad_simd, kTwoCases, "custom"); }).find("--simd"),
            std::string::npos);
  RunRequest bad_device = request({"cpu.math"});
  bad_device.device = "tpu";
  EXPECT_NE(error_of([&] { execute_run(bad_device, kTwoCases, "custom"); }), "");
}

// A case the harness cannot hold is NOT_JUDGED with the size it needs: never the backend's FAIL.
TEST(ConformanceRun, ACaseTooLargeForTheRunIsNotJudgedNotFailed) {
  RunRequest r = request({"cpu.math", "cpu.flash"});
  r.max_case_memory = std::uint64_t(1) << 30;
  const RunSummary s = execute_run(r, {{"b1.hq1.l99999999999.s1.dqk8.f32", ""}}, "custom").summary;
  ASSERT_EQ(s.records.size(), 2u);
  for (const auto& rec : s.records) {
    EXPECT_EQ(rec.status, Status::not_judged) << rec.backend << ": " << rec.message;
    EXPECT_NE(rec.message.find("needs"), std::string::npos) << rec.message;
  }
}

}  // namespace
}  // namespace sdpa::conformance
