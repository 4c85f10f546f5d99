// The one judge: backends whose run() expects another memory space are judged on mirrors of
// the guarded buffers (conformance/judge/memory_space.hpp), so guard violations made there are
// still found; golden expected values and the capture bound (tests/golden/capture_test.cpp
// covers files end to end). The judge's own strictness: a correct backend judged against
// planted expected values must fail exactly where the bound says (each test here kills a
// judge mutant of tests/source_mutants/catalog.json, which no correct kernel can).
#include "conformance/judge/judge.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

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

// A correct backend against the reference's values with one element moved: the judge's verdict
// on the moved element alone.
struct Planted {
  const FakeBackend backend{"fake", Fault::none};
  Case c;
  InputBuffers in;
  reference::Result ref;
  std::vector<double> o, lse;
  explicit Planted(const char* id)
      : c(parse_case_id_or_throw(id)),
        in(make_inputs(c)),
        ref(reference::run_sdpa(c.problem, in.pointers())),
        o(ref.o),
        lse(ref.lse) {}
  CaseOutcome judge_it() {
    ExpectedValues e{&o, &lse, nullptr, 50};
    return judge(backend, c.problem, in, detect_cpu(), {}, &e);
  }
  // The bound of output element x = row * Dv + d, written out from tolerance.hpp's formula
  // (not through output_tolerance(), which would scale with the judge it tests):
  //   u_out |O| + (u_p + k_S u_acc) A + k_E u_acc G + k_x u_acc C + u_sub U + floor.
  double bound(std::size_t x) const {
    const Problem& p = c.problem;
    const auto row = static_cast<std::size_t>(x) / static_cast<std::size_t>(p.head_dim_v);
    const std::int64_t b = static_cast<std::int64_t>(row) / (p.heads_q * p.len_q);
    const ToleranceFactors f = tolerance_factors(p, backend.precision(p.dtype), seqlen_kv(p, b));
    const int e = ref.mag_exp.empty() ? 0 : static_cast<int>(ref.mag_exp[row]);
    return f.u_out * std::fabs(ref.o[x]) +
           std::ldexp((f.u_p + f.k_s * f.u_acc) * ref.mag_a[x] + f.k_e * f.u_acc * ref.mag_g[x] +
                          f.k_x * f.u_acc * ref.mag_c[x] + f.u_sub * ref.mag_u[x],
                      e) +
           f.floor;
  }
};

TEST(Judge, NanWhereAFiniteValueIsExpectedIsAFail) {
  Planted t(kCase);
  EXPECT_EQ(t.judge_it().status, Status::pass);
  t.o[5] = std::nan("");
  const CaseOutcome o = t.judge_it();
  EXPECT_EQ(o.status, Status::fail);
  EXPECT_NE(o.message.find("o[0,0,0,5]"), std::string::npos) << o.message;
}

TEST(Judge, AWrongLseIsAFail) {
  Planted t(kCase);
  t.lse[3] += 0.01;
  const CaseOutcome o = t.judge_it();
  EXPECT_EQ(o.status, Status::fail);
  EXPECT_NE(o.message.find("lse[0,0,3]"), std::string::npos) << o.message;
}

TEST(Judge, PaddingRowsMustBeZero) {
  // Batch 0 has 3 valid rows of 8: rows 3..7 of the padded layout must hold zeros.
  Planted t("b2.hq2.l8.s9.dqk8.dv8.f32.qlen=3_8.kvlen=9_5.lay=bshd.lse.seed5.gen=normal");
  EXPECT_EQ(t.judge_it().status, Status::pass);
  const std::int64_t Dv = 8;
  t.o[static_cast<std::size_t>(5 * Dv + 2)] = 0.5;  // b0, h0, row 5 (padding), d 2
  const CaseOutcome o = t.judge_it();
  EXPECT_EQ(o.status, Status::fail);
  EXPECT_NE(o.message.find("o[0,0,5,2]"), std::string::npos) << o.message;
}

TEST(Judge, TheOutputBoundIsTheDocumentedOne) {
  // An error of twice an element's bound fails, half of it passes: the bound neither looser nor
  // tighter than tolerance.hpp's formula by a factor of two.
  for (const char* id : {kCase, "b1.hq2.l9.s300.dqk32.bf16.seed2.gen=normal"}) {
    for (const double k : {0.5, 2.0}) {
      Planted t(id);
      const std::size_t x = 7;
      // Moved from what the backend writes (the reference rounded to the output type), so the
      // backend's own rounding does not count.
      double written = 0;
      store_from_double(t.c.problem.dtype, &written, 0, t.ref.o[x]);
      t.o[x] = load_as_double(t.c.problem.dtype, &written, 0) + k * t.bound(x);
      const CaseOutcome o = t.judge_it();
      EXPECT_EQ(o.status, k < 1 ? Status::pass : Status::fail)
          << id << " error = " << k << " x bound: " << o.message;
    }
  }
}

TEST(Judge, TheCaseErrorIsTheLargestNotTheSum) {
  Planted t(kCase);
  t.o[5] += 0.01;
  t.o[9] -= 0.008;
  const CaseOutcome o = t.judge_it();
  EXPECT_NEAR(o.max_abs_error, 0.01, 1e-5);
}

// Every check of the forward (docs/TESTING.md, "Every check tripped on purpose"), one planted
// fault each, per tensor where the check is per tensor: the exact status, and a message that
// names the check and the tensor. The same backend without the fault passes (the first row), so
// each row's verdict is its fault's alone.
TEST(Judge, EveryForwardCheckIsTrippedOnPurpose) {
  // O, the LSE and the weights, and an additive mask (an input the backend could write).
  constexpr const char* kAll =
      "b2.hq4.hkv2.l13.s29.dqk16.dv8.f32.causal=br.mask=add.lse.attnw.seed3.gen=normal";
  enum Declares { none = 0, det = 1, inv = 2 };  // the forward properties the backend declares
  struct Row {
    Fault fault;
    const char* tensor;  // FakeBackend::at(); "" for the fault's default
    int declares;
    Status status;
    const char* says;       // a fragment of the message: the check and the tensor ...
    const char* then = "";  // ... and one that follows it
    const char* id = kAll;
  };
  const Fault moved = Fault::moved, thread = Fault::thread_dependent,
              batch = Fault::batch_dependent;
  const Status fail = Status::fail;
  const Row rows[] = {
      {Fault::none, "", det | inv, Status::pass, ""},
      // Guard bytes: a write just before element 0.
      {Fault::writes_margin, "o", none, fail, "o: byte ", "written before the view"},
      {Fault::writes_margin, "lse", none, fail, "lse: byte ", "written before the view"},
      {Fault::writes_margin, "weights", none, fail, "weights: byte ", "written before the view"},
      // Unwritten outputs: the last element left poisoned.
      {Fault::skip_last_row, "o", none, fail, "o: element", "was never written"},
      {Fault::skip_last_row, "lse", none, fail, "lse: element", "was never written"},
      {Fault::skip_last_row, "weights", none, fail, "weights: element", "was never written"},
      // Modified inputs: one byte of element 0.
      {Fault::writes_input, "q", none, fail, "q: input byte 0 relative to element 0 was modified"},
      {Fault::writes_input, "k", none, fail, "k: input byte 0 relative to element 0 was modified"},
      {Fault::writes_input, "v", none, fail, "v: input byte 0 relative to element 0 was modified"},
      {Fault::writes_input, "mask", none, fail, "mask: input byte 0 relative to element 0 was"},
      // The bound: element 0 an eighth off.
      {moved, "o", none, fail, "error/tolerance ", " at o[0,0,0,0] = "},
      {moved, "lse", none, fail, "error/tolerance ", " at lse[0,0,0] = "},
      {moved, "weights", none, fail, "error/tolerance ", " at weights[0] = "},
      // ... and in the last (b, h) slice: no slice is skipped.
      {Fault::moved_last, "o", none, fail, "error/tolerance ", " at o[1,3,12,7] = "},
      {Fault::moved_last, "lse", none, fail, "error/tolerance ", " at lse[1,3,12] = "},
      {Fault::moved_last, "weights", none, fail, "error/tolerance ", " at weights[3015] = "},
      // Determinism (declared): one ulp that follows the thread count; a rerun that throws or
      // writes an input.
      {thread, "o", det, fail, "forward is not bitwise deterministic although",
       ": o differs between the default thread count and 1 thread"},
      {thread, "lse", det, fail, "forward is not bitwise deterministic although",
       ": lse differs between"},
      {thread, "weights", det, fail, "forward is not bitwise deterministic although",
       ": weights differs between"},
      {Fault::throws_on_rerun, "", det, fail,
       "the forward threw on its second run (determinism check, 1 thread): fake rerun failure"},
      {Fault::writes_input_on_rerun, "", det, fail,
       "the forward's second run (determinism check) wrote an input: q: input byte 0"},
      // Batch invariance (declared): one ulp that follows the batch; batch element 0 alone that
      // throws, writes an input or leaves an output unwritten.
      {batch, "o", inv, fail, "forward is not batch-invariant although",
       ": o[0,0,0,0] differs between the batch of 2 and batch element 0 run alone"},
      {batch, "lse", inv, fail, "forward is not batch-invariant although", ": lse[0,0,0] differs"},
      {batch, "weights", inv, fail, "forward is not batch-invariant although",
       ": weights[0,0,0,0] differs"},
      {Fault::throws_on_rerun, "", inv, fail,
       "the forward threw on batch element 0 alone (batch invariance check): fake rerun failure"},
      {Fault::writes_input_on_rerun, "", inv, fail,
       "batch element 0 alone (batch invariance check) wrote an input: q: input byte 0"},
      {Fault::skips_on_rerun, "", inv, fail,
       "batch element 0 alone (batch invariance check): o: ", "was never written"},
      {Fault::declines_batch_of_one, "", inv, Status::pass,
       "batch invariance not checked: batch element 0 alone is declined (",
       "this fake declines a batch of one)"},
      // MISTRUSTED: a correct backend where the exact output is zero on every attended row.
      {Fault::none, "", det | inv, Status::mistrusted,
       "the exact output is zero on every attended row", "cannot discriminate",
       "b1.hq2.l8.s8.dqk8.f32.lse.attnw.seed1.gen=zeros"},
      // The quality gate: within a (declared bf16) bound, worse than the naive f32 algorithm.
      {Fault::bf16_rounding, "", none, Status::quality_warning, "within tolerance, but max error",
       "the naive same-precision error", "b1.hq2.l16.s32.dqk16.f32.seed2.gen=normal"},
      // ... and not run, and said so, above the naive baseline's size limit.
      {Fault::bf16_rounding, "", none, Status::pass, "quality gate not run: problem larger",
       "than the naive-baseline limit", "b1.hq1.l2048.s8192.dqk8.f32.seed2.gen=normal"},
  };
  for (const Row& r : rows) {
    FakeBackend backend("fake", r.fault);
    backend.with_weights().declare((r.declares & det) != 0, (r.declares & inv) != 0);
    if (*r.tensor) backend.at(r.tensor);
    const Case c = parse_case_id_or_throw(r.id);
    InputBuffers in = make_inputs(c);
    const CaseOutcome o = judge(backend, c.problem, in, detect_cpu(), RunOptions{});
    const std::string row = "fault " + std::to_string(static_cast<int>(r.fault)) + " on '" +
                            r.tensor + "': " + o.message;
    EXPECT_EQ(o.status, r.status) << row;
    const std::size_t at = o.message.find(r.says);
    ASSERT_NE(at, std::string::npos) << "'" << r.says << "' not in " << row;
    EXPECT_NE(o.message.find(r.then, at), std::string::npos) << "'" << r.then << "' not in " << row;
  }
}

TEST(Judge, CaptureUnit) {
  EXPECT_EQ(capture_unit(50), 0.0);
  EXPECT_EQ(capture_unit(17), 0.0);
  EXPECT_DOUBLE_EQ(capture_unit(7), 5e-7);
  EXPECT_DOUBLE_EQ(capture_unit(16), 5e-16);
}

}  // namespace
}  // namespace sdpa
