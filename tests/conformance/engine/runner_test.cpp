#include "conformance/engine/runner.hpp"

#include <gtest/gtest.h>
#include <omp.h>

#include <map>

#include "tests/conformance/fake_backends.hpp"

namespace sdpa {

using namespace sdpa::conformance;
namespace {

using testing::FakeBackend;
using testing::Fault;

const Backend* lookup(std::string_view name) {
  static const std::map<std::string, FakeBackend, std::less<>> backends = [] {
    std::map<std::string, FakeBackend, std::less<>> m;
    for (auto [n, f] : {std::pair{"good", Fault::none}, std::pair{"crash", Fault::crash},
                        std::pair{"hang", Fault::hang}, std::pair{"wrong", Fault::zero_output},
                        std::pair{"declines", Fault::declines}}) {
      m.emplace(std::piecewise_construct, std::forward_as_tuple(n), std::forward_as_tuple(n, f));
    }
    return m;
  }();
  auto it = backends.find(name);
  return it == backends.end() ? nullptr : &it->second;
}

constexpr const char* kCase = "b1.hq2.l9.s17.dqk8.f32.seed1.gen=normal";

Job job(const std::string& backend, int threads = 0) {
  return make_job(kCase, "", backend, detect_cpu(), threads);
}

RunnerOptions options(int jobs) {
  RunnerOptions o;
  o.jobs = jobs;
  o.timeout_seconds = 4;
  o.lookup = lookup;
  return o;
}

TEST(Runner, IsolatedWorkersTurnCrashesAndHangsIntoRecordsAndGoOn) {
  const std::vector<Job> jobs = {job("good"),  job("crash"),    job("good"),    job("hang"),
                                 job("wrong"), job("declines"), job("no_such"), job("good", 1)};
  for (int workers : {1, 2}) {
    std::size_t progress_calls = 0;
    RunnerOptions o = options(workers);
    o.progress = [&](std::size_t done, std::size_t total, const CaseRecord&) {
      ++progress_calls;
      EXPECT_LE(done, total);
    };
    const auto r = run_jobs(jobs, o);
    ASSERT_EQ(r.size(), jobs.size());
    EXPECT_EQ(progress_calls, jobs.size());
    EXPECT_EQ(r[0].status, Status::pass) << r[0].message;
    EXPECT_EQ(r[1].status, Status::crash);
    // A plain build dies of SIGSEGV; under AddressSanitizer the sanitizer catches the signal,
    // reports and exits with status 1. Both are a crash of the worker.
    EXPECT_TRUE(r[1].message.find("signal 11") != std::string::npos ||
                r[1].message.find("exited with status 1") != std::string::npos)
        << r[1].message;
    EXPECT_EQ(r[2].status, Status::pass) << "the run goes on after a crash";
    EXPECT_EQ(r[3].status, Status::timeout);
    EXPECT_EQ(r[4].status, Status::fail);
    EXPECT_EQ(r[5].status, Status::not_supported);
    EXPECT_EQ(r[6].status, Status::fail);
    EXPECT_NE(r[6].message.find("unknown backend 'no_such'"), std::string::npos);
    EXPECT_EQ(r[7].status, Status::pass);
    for (std::size_t k = 0; k < r.size(); ++k) {
      EXPECT_EQ(r[k].backend, jobs[k].backend) << "records come back in job order";
      EXPECT_EQ(r[k].case_id, kCase);
      EXPECT_NE(r[k].repro.find("--backend " + jobs[k].backend), std::string::npos);
    }
    EXPECT_NE(r[7].repro.find("--threads 1"), std::string::npos);
  }
}

TEST(Runner, InProcessModeGivesTheSameVerdicts) {
  const std::vector<Job> jobs = {job("good"), job("wrong"), job("declines")};
  RunnerOptions o = options(1);
  o.isolate = false;
  const auto r = run_jobs(jobs, o);
  EXPECT_EQ(r[0].status, Status::pass);
  EXPECT_EQ(r[1].status, Status::fail);
  EXPECT_EQ(r[2].status, Status::not_supported);
}

// A record says how many threads the backend ran with (pair coverage reads it): the number
// asked for, or the OpenMP default when none was; the repro line names only one asked for.
TEST(Runner, RecordsTheThreadsTheBackendRanWith) {
  RunnerOptions o = options(1);
  o.isolate = false;
  const auto r = run_jobs({job("good", 0), job("good", 3)}, o);
  EXPECT_EQ(r[0].threads, omp_get_max_threads());
  EXPECT_GE(r[0].threads, 1);
  EXPECT_EQ(r[0].repro.find("--threads"), std::string::npos) << r[0].repro;
  EXPECT_EQ(r[1].threads, 3);
}

TEST(Runner, ReproQuotesTheCaseForTheShell) {
  const Job j = make_job("b1.hq1.l1.s1.dqk1.f32.seed1.gen=normal", "", "cpu.flash",
                         with_isa_target(detect_cpu(), "scalar"), 2);
  EXPECT_EQ(repro_command(j),
            "sdpa-cts run --backend cpu.flash --case 'b1.hq1.l1.s1.dqk1.f32.seed1.gen=normal' "
            "--simd scalar --threads 2");
  // A simulated device travels as --device, its ISA target as --simd.
  const Job s = make_job("b1.hq1.l1.s1.dqk1.f32.seed1.gen=normal", "", "cpu.math",
                         parse_device_or_throw("cpu-avx2:isa=scalar:cores=3"), 0);
  EXPECT_EQ(repro_command(s),
            "sdpa-cts run --backend cpu.math --case 'b1.hq1.l1.s1.dqk1.f32.seed1.gen=normal' "
            "--simd scalar --device 'cpu-avx2:cores=3'");
}

// A case too large for the run's memory limit is NOT_JUDGED, through the workers too (the
// record crosses the pipe as JSON), and says what it needs; INVALID and NOT_SUPPORTED keep
// their verdicts whatever the size, and a case within the limit runs as before.
TEST(Runner, ACaseOverTheMemoryLimitIsNotJudged) {
  const std::vector<Job> jobs = {
      job("good"), job("declines"),
      make_job("b1.hq3.hkv2.l9.s17.dqk8.f32", "", "good", detect_cpu(), 0)};
  RunnerOptions o = options(1);
  o.max_case_memory = 1024;
  const auto r = run_jobs(jobs, o);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].status, Status::not_judged) << r[0].message;
  EXPECT_EQ(r[0].message.rfind("not run: the case needs ", 0), 0u) << r[0].message;
  EXPECT_NE(r[0].message.find("this run lets one case use 1 KiB (1024 bytes, --max-case-memory)"),
            std::string::npos)
      << r[0].message;
  EXPECT_EQ(r[1].status, Status::not_supported) << r[1].message;
  EXPECT_EQ(r[2].status, Status::invalid) << r[2].message;
  o.max_case_memory = 1ull << 30;
  EXPECT_EQ(run_job(jobs[0], o).status, Status::pass);
}

// The harness's own allocation failing is NOT_JUDGED, not the backend's FAIL: a case whose Q
// alone is 1 EiB (2^58 f32 elements), beyond any 64-bit process's address space (57-bit
// virtual addresses reach 128 PiB), run with no memory limit.
TEST(Runner, AHarnessAllocationFailureIsNotTheBackendsFail) {
// GCC says __SANITIZE_ADDRESS__; Clang answers __has_feature.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SDPA_CTS_SANITIZED_ALLOCATOR 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || \
    defined(SDPA_CTS_SANITIZED_ALLOCATOR)
  GTEST_SKIP() << "a sanitizer's allocator aborts the process instead of throwing std::bad_alloc";
#endif
  const Job huge = make_job("b1.hq1.l36028797018963968.s1.dqk8.f32.seed1.gen=normal", "", "good",
                            detect_cpu(), 0);
  RunnerOptions o = options(1);
  o.max_case_memory = UINT64_MAX;
  const CaseRecord r = run_job(huge, o);
  EXPECT_EQ(r.status, Status::not_judged) << r.message;
  EXPECT_EQ(
      r.message.rfind("harness error: the harness's own allocation failed (std::bad_alloc)", 0), 0u)
      << r.message;
}

}  // namespace
}  // namespace sdpa
