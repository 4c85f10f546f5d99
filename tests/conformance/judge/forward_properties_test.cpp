// The declared forward properties, verified by the judge (conformance/judge/
// forward_properties.hpp): a backend whose forward bits follow the thread count or the batch
// FAILs when it declares `deterministic` or `batch_invariant`, naming the tensor, and passes
// when it does not declare them; correct backends pass either way.
#include "conformance/judge/forward_properties.hpp"

#include <gtest/gtest.h>

#include "conformance/engine/data_gen.hpp"
#include "conformance/judge/judge.hpp"
#include "core/device.hpp"
#include "tests/conformance/fake_backends.hpp"

namespace sdpa {

using namespace sdpa::conformance;
namespace {

using testing::FakeBackend;
using testing::Fault;

CaseOutcome judge_case(const FakeBackend& backend, const char* id, int threads = 0) {
  const Case c = parse_case_id_or_throw(id);
  InputBuffers in = make_inputs(c);
  RunOptions options;
  options.threads = threads;
  return judge(backend, c.problem, in, detect_cpu(), options);
}

constexpr const char* kCase = "b2.hq4.hkv2.l13.s29.dqk16.dv8.f32.causal=br.lse.seed3.gen=normal";
// Varlen, packed: batch element 0 alone keeps its own lengths and offsets.
constexpr const char* kPacked =
    "b3.hq2.hkv1.l9.s12.dqk8.dv8.f32.qlen=9_4_7.kvlen=12_3_11.packed.lse.seed4.gen=normal";

TEST(ForwardProperties, CorrectBackendsPassWhateverTheyDeclare) {
  for (const char* id : {kCase, kPacked}) {
    for (bool det : {false, true})
      for (bool inv : {false, true}) {
        FakeBackend b("fake", Fault::none);
        b.declare(det, inv);
        for (int threads : {0, 1}) {
          const CaseOutcome o = judge_case(b, id, threads);
          EXPECT_EQ(o.status, Status::pass) << id << " " << det << inv << ": " << o.message;
        }
      }
  }
}

TEST(ForwardProperties, BitsThatFollowTheThreadCountFailADeclaredDeterminism) {
  for (int threads : {0, 1, 2}) {
    FakeBackend declared("fake", Fault::thread_dependent);
    declared.declare(true, false);
    const CaseOutcome o = judge_case(declared, kCase, threads);
    EXPECT_EQ(o.status, Status::fail) << threads;
    EXPECT_NE(o.message.find("forward is not bitwise deterministic"), std::string::npos)
        << o.message;
    EXPECT_NE(o.message.find("o differs between"), std::string::npos) << o.message;
    FakeBackend undeclared("fake", Fault::thread_dependent);
    EXPECT_EQ(judge_case(undeclared, kCase, threads).status, Status::pass) << threads;
  }
  FakeBackend lse("fake", Fault::thread_dependent);
  lse.at("lse").declare(true, false);
  const CaseOutcome o = judge_case(lse, kCase);
  EXPECT_EQ(o.status, Status::fail);
  EXPECT_NE(o.message.find("lse differs between"), std::string::npos) << o.message;
}

TEST(ForwardProperties, BitsThatFollowTheBatchFailADeclaredBatchInvariance) {
  for (const char* id : {kCase, kPacked}) {
    FakeBackend declared("fake", Fault::batch_dependent);
    declared.declare(false, true);
    const CaseOutcome o = judge_case(declared, id);
    EXPECT_EQ(o.status, Status::fail) << id;
    EXPECT_NE(o.message.find("not batch-invariant"), std::string::npos) << o.message;
    EXPECT_NE(o.message.find("o[0,0,0,0] differs"), std::string::npos) << o.message;
    FakeBackend undeclared("fake", Fault::batch_dependent);
    EXPECT_EQ(judge_case(undeclared, id).status, Status::pass) << id;
  }
  // A batch of one has nothing around it: the check has nothing to compare.
  FakeBackend one("fake", Fault::batch_dependent);
  one.declare(false, true);
  EXPECT_EQ(judge_case(one, "b1.hq2.l5.s7.dqk8.f32.seed1.gen=normal").status, Status::pass);
}

TEST(ForwardProperties, ThreadCountsAreNamed) {
  EXPECT_EQ(other_thread_count(RunOptions{}), 1);
  RunOptions one;
  one.threads = 1;
  EXPECT_EQ(other_thread_count(one), 3);
  EXPECT_EQ(threads_text(0), "the default thread count");
  EXPECT_EQ(threads_text(1), "1 thread");
  EXPECT_EQ(threads_text(3), "3 threads");
}

}  // namespace
}  // namespace sdpa
