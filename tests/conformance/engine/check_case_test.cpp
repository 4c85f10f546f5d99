#include "conformance/engine/check_case.hpp"

#include <gtest/gtest.h>

#include "tests/conformance/fake_backends.hpp"

namespace sdpa {

using namespace sdpa::conformance;
namespace {

using testing::FakeBackend;
using testing::Fault;

CaseOutcome judge(Fault fault, const std::string& id) {
  const FakeBackend backend("fake", fault);
  return check_case(backend, parse_case_id_or_throw(id), detect_cpu());
}

constexpr const char* kCase = "b2.hq4.hkv2.l13.s29.dqk16.dv8.f32.causal=br.lse.seed3.gen=normal";

TEST(CheckCase, CorrectBackendPassesEveryDtypeAndLayout) {
  for (const char* id : {kCase, "b2.hq2.l9.s17.dqk8.bf16.mask=add.mbc=h.seed1.gen=normal",
                         "b2.hq2.l9.s17.dqk8.f16.qlen=9_3.kvlen=0_17.packed.lse.seed1.gen=normal",
                         "b1.hq2.l9.s17.dqk8.f64.lay=bshd.gap=2.off=1.seed1.gen=normal",
                         "b1.hq2.l9.s17.dqk8.f32.p0.3.dseed4.seed1.gen=normal"}) {
    const CaseOutcome o = judge(Fault::none, id);
    EXPECT_EQ(o.status, Status::pass) << id << ": " << o.message;
    EXPECT_LE(o.worst_ratio, 1.0) << id;
  }
}

TEST(CheckCase, WrongOutputFailsNamingTheElement) {
  const CaseOutcome o = judge(Fault::zero_output, kCase);
  EXPECT_EQ(o.status, Status::fail);
  EXPECT_NE(o.message.find("o["), std::string::npos) << o.message;
  EXPECT_GT(o.worst_ratio, 1.0);
  EXPECT_DOUBLE_EQ(o.nmse, 1.0);  // all zeros: the error is the reference itself
  EXPECT_LT(judge(Fault::none, kCase).nmse, 1e-12);
}

TEST(CheckCase, UnwrittenRowFailsAsAGuardViolation) {
  const CaseOutcome o = judge(Fault::skip_last_row, kCase);
  EXPECT_EQ(o.status, Status::fail);
  EXPECT_NE(o.message.find("never written"), std::string::npos) << o.message;
}

TEST(CheckCase, ThrowingBackendFails) {
  const CaseOutcome o = judge(Fault::throws, kCase);
  EXPECT_EQ(o.status, Status::fail);
  EXPECT_NE(o.message.find("fake failure"), std::string::npos) << o.message;
}

TEST(CheckCase, DeclineIsNotSupportedWithTheReason) {
  const CaseOutcome o = judge(Fault::declines, kCase);
  EXPECT_EQ(o.status, Status::not_supported);
  EXPECT_NE(o.message.find("declines everything"), std::string::npos);
}

TEST(CheckCase, InvalidProblemIsInvalid) {
  const CaseOutcome o = judge(Fault::none, "b1.hq3.hkv2.l4.s4.dqk8.f32.seed1.gen=normal");
  EXPECT_EQ(o.status, Status::invalid);
  EXPECT_NE(o.message.find("hkv"), std::string::npos);
}

TEST(CheckCase, AllZeroOutputIsMistrusted) {
  const CaseOutcome o = judge(Fault::none, "b1.hq2.l8.s8.dqk8.f32.seed1.gen=zeros");
  EXPECT_EQ(o.status, Status::mistrusted) << o.message;
  // A fully masked problem is not mistrusted: it tests the masked-row rule.
  const CaseOutcome m = judge(Fault::none, "b1.hq2.l8.s8.dqk8.f32.kvlen=0.seed1.gen=zeros");
  EXPECT_EQ(m.status, Status::pass) << m.message;
}

TEST(CheckCase, WithinBoundButWorseThanNaiveIsAQualityWarning) {
  // Rounding O to bf16 under a declared bf16 contract passes the bound, but an f32 problem's
  // naive f32 baseline is far more accurate.
  const CaseOutcome o = judge(Fault::bf16_rounding, "b1.hq2.l16.s32.dqk16.f32.seed2.gen=normal");
  EXPECT_EQ(o.status, Status::quality_warning) << o.message;
}

TEST(CheckCase, StatusNamesAreTheClosedSetOfTesting) {
  EXPECT_STREQ(status_name(Status::pass), "PASS");
  EXPECT_STREQ(status_name(Status::not_supported), "NOT_SUPPORTED");
  EXPECT_STREQ(status_name(Status::quality_warning), "QUALITY_WARNING");
}

}  // namespace
}  // namespace sdpa
