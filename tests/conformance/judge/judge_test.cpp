// The one judge: backends whose run() expects another memory space are judged on mirrors of
// the guarded buffers (conformance/judge/memory_space.hpp), so guard violations made there are
// still found; golden expected values and the capture bound (tests/golden/capture_test.cpp
// covers files end to end).
#include "conformance/judge/judge.hpp"

#include <gtest/gtest.h>

#include "conformance/engine/data_gen.hpp"
#include "conformance/judge/memory_space.hpp"
#include "core/device.hpp"
#include "tests/conformance/fake_backends.hpp"

namespace sdpa {

using namespace sdpa::conformance;
namespace {

using testing::FakeBackend;
using testing::Fault;

constexpr const char* kCase = "b2.hq4.hkv2.l13.s29.dqk16.dv8.f32.causal=br.lse.seed3.gen=normal";

CaseOutcome judge_on(MemorySpace space, Fault fault, const char* id = kCase) {
  const FakeBackend backend("fake", fault, space);
  const Case c = parse_case_id_or_throw(id);
  InputBuffers in = make_inputs(c);
  return judge(backend, c.problem, in, detect_cpu(), RunOptions{});
}

TEST(Judge, DeviceMemoryBackendIsJudgedOnMirrors) {
  // The fake throws unless its buffers are marked as its own memory space.
  for (const char* id :
       {kCase, "b1.hq2.l9.s17.dqk8.bf16.mask=add.lay=bshd.gap=2.off=1.seed1.gen=normal"}) {
    const CaseOutcome o = judge_on(MemorySpace::test_device, Fault::none, id);
    EXPECT_EQ(o.status, Status::pass) << id << ": " << o.message;
  }
}

TEST(Judge, GuardViolationsInDeviceMemoryAreFound) {
  const CaseOutcome margin = judge_on(MemorySpace::test_device, Fault::writes_margin);
  EXPECT_EQ(margin.status, Status::fail);
  EXPECT_NE(margin.message.find("o: byte"), std::string::npos) << margin.message;
  const CaseOutcome input = judge_on(MemorySpace::test_device, Fault::writes_input);
  EXPECT_EQ(input.status, Status::fail);
  EXPECT_NE(input.message.find("q"), std::string::npos) << input.message;
  const CaseOutcome unwritten = judge_on(MemorySpace::test_device, Fault::skip_last_row);
  EXPECT_EQ(unwritten.status, Status::fail);
  EXPECT_NE(unwritten.message.find("never written"), std::string::npos) << unwritten.message;
}

TEST(Judge, HostAndDeviceMemoryGiveTheSameVerdicts) {
  for (Fault f : {Fault::none, Fault::zero_output, Fault::writes_margin, Fault::writes_input}) {
    const CaseOutcome h = judge_on(MemorySpace::host, f), d = judge_on(MemorySpace::test_device, f);
    EXPECT_EQ(h.status, d.status) << static_cast<int>(f);
    EXPECT_EQ(h.message, d.message) << static_cast<int>(f);
    EXPECT_EQ(h.worst_ratio, d.worst_ratio) << static_cast<int>(f);
  }
}

TEST(Judge, UnreachableMemorySpaceIsAFailNamingIt) {
  // Without a GPU (a build without the CUDA runtime, or a machine without a device), a
  // backend asking for CUDA device memory cannot be fed.
  if (detect_cuda()) GTEST_SKIP() << "this machine has a GPU: the GPU check covers device memory";
  const CaseOutcome o = judge_on(MemorySpace::cuda_device, Fault::none);
  EXPECT_EQ(o.status, Status::fail);
  EXPECT_NE(o.message.find("cuda_device"), std::string::npos) << o.message;
}

TEST(Judge, ExpectedValuesFromElsewhereAreUsed) {
  const FakeBackend backend("fake", Fault::none);
  const Case c = parse_case_id_or_throw(kCase);
  InputBuffers in = make_inputs(c);
  const reference::Result ref = reference::run_sdpa(c.problem, in.pointers());
  std::vector<double> o = ref.o, lse = ref.lse;
  ExpectedValues exact{&o, &lse, nullptr, 50};
  EXPECT_EQ(judge(backend, c.problem, in, detect_cpu(), {}, &exact).status, Status::pass);
  o[5] += 0.01;  // a wrong expected value: the backend now disagrees with it
  const CaseOutcome wrong = judge(backend, c.problem, in, detect_cpu(), {}, &exact);
  EXPECT_EQ(wrong.status, Status::fail);
  EXPECT_NE(wrong.message.find("o[0,0,0,5]"), std::string::npos) << wrong.message;
}

TEST(Judge, CaptureUnit) {
  EXPECT_EQ(capture_unit(50), 0.0);
  EXPECT_EQ(capture_unit(17), 0.0);
  EXPECT_DOUBLE_EQ(capture_unit(7), 5e-7);
  EXPECT_DOUBLE_EQ(capture_unit(16), 5e-16);
}

}  // namespace
}  // namespace sdpa
