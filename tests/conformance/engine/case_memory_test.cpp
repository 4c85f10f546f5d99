// The harness's memory for one case and the limit a run sets on it
// (conformance/engine/case_memory.hpp).
#include "conformance/engine/case_memory.hpp"

#include <gtest/gtest.h>

#include "conformance/engine/byte_size.hpp"
#include "conformance/engine/data_gen.hpp"
#include "conformance/judge/judge.hpp"
#include "core/case_id.hpp"
#include "reference/sdpa_reference.hpp"

namespace sdpa {

using namespace sdpa::conformance;
namespace {

// What a guarded buffer holds, from the buffer itself: its region, 64 bytes of alignment slack
// and one byte per element offset of its view's extent.
std::uint64_t held(const GuardedBuffer& g) {
  return g.region_size() + 64 + static_cast<std::uint64_t>(view_extent(g.view()));
}

// Cases with every input and output the harness can allocate: masks of both kinds, gaps and
// offsets, LSE and weights, packed rows, dropout.
constexpr const char* kCases[] = {
    "b2.hq4.hkv2.l13.s29.dqk16.dv8.f32.causal=br.lse.seed3.gen=normal",
    "b2.hq2.l9.s17.dqk8.bf16.mask=add.mbc=h.lse.attnw.seed1.gen=normal",
    "b1.hq2.l9.s17.dqk8.f64.lay=bshd.gap=2.off=1.mask=bool.seed1.gen=normal",
    "b2.hq2.l9.s17.dqk8.f16.qlen=9_3.kvlen=0_17.packed.lse.seed1.gen=normal",
    "b1.hq2.l9.s17.dqk8.f32.p0.3.dseed4.seed1.gen=normal"};

TEST(HarnessMemory, InputsAndOutputsAreWhatTheirBuffersHold) {
  for (const char* id : kCases) {
    SCOPED_TRACE(id);
    const Case c = parse_case_id_or_throw(id);
    const HarnessMemory m = harness_memory(c.problem, false, 1);
    const InputBuffers in = make_inputs(c);  // snapshot taken: one more region each
    std::uint64_t inputs = held(in.q) + in.q.region_size() + held(in.k) + in.k.region_size() +
                           held(in.v) + in.v.region_size();
    if (in.mask) inputs += held(*in.mask) + in.mask->region_size();
    EXPECT_EQ(m.inputs, inputs);
    const OutputBuffers out = make_outputs(c.problem);
    EXPECT_EQ(m.outputs, held(out.o) + held(out.lse) + held(out.weights));
  }
}

TEST(HarnessMemory, ReferenceCoversItsResultAndOneSlicePerThread) {
  for (const char* id : kCases) {
    SCOPED_TRACE(id);
    const Case c = parse_case_id_or_throw(id);
    const InputBuffers in = make_inputs(c);
    const reference::Result r = reference::run_sdpa(c.problem, in.pointers());
    std::uint64_t result = 0;
    for (const auto* v : {&r.o, &r.lse, &r.weights, &r.mag_a, &r.mag_c, &r.mag_g, &r.mag_u,
                          &r.mag_exp, &r.lse_mag_c, &r.lse_mag_g}) {
      result += v->size() * sizeof(double);
    }
    const HarnessMemory one = harness_memory(c.problem, false, 1);
    EXPECT_GT(one.reference, result) << "the result, and a slice's working set on top";
    // Every further thread computes one more (b, h) slice at once, up to B * Hq slices.
    const std::uint64_t slice = harness_memory(c.problem, false, 2).reference - one.reference;
    EXPECT_GT(slice, 0u);
    EXPECT_EQ(one.reference - result, slice) << "one slice of working set per thread";
    const std::int64_t slices = c.problem.batch * c.problem.heads_q;
    EXPECT_EQ(harness_memory(c.problem, false, 1000).reference, result + slices * slice);
  }
}

TEST(HarnessMemory, QualityGateAndGoldenValuesCountOnlyWhereTheyAreMade) {
  const Case c = parse_case_id_or_throw(kCases[1]);
  const HarnessMemory generated = harness_memory(c.problem, false, 1);
  EXPECT_GT(generated.baseline, 0u);
  EXPECT_EQ(generated.expected, 0u);
  const HarnessMemory golden = harness_memory(c.problem, true, 1);
  // Expected O, LSE and weights, and the weights' capture magnitudes.
  const std::uint64_t n_out = 2 * 2 * 9 * 8, n_row = 2 * 2 * 9, n_weights = 2 * 2 * 9 * 17;
  EXPECT_EQ(golden.expected, 8 * (n_out + n_row + 2 * n_weights));
  EXPECT_EQ(golden.total(), generated.total() + golden.expected);
  // Past the naive baseline's work limit the gate is skipped, and so is its memory.
  Problem big = parse_case_id_or_throw("b1.hq1.l20000.s20000.dqk64.f32").problem;
  ASSERT_FALSE(quality_gate_runs(big));
  EXPECT_EQ(harness_memory(big, false, 1).baseline, 0u);
}

TEST(HarnessMemory, HugeProblemsSaturateInsteadOfWrapping) {
  // 2^57 rows of 4 f64: every view fits int64 (validate() accepts it), its bytes do not fit 64
  // bits once the reference's five arrays per output element are counted.
  const Problem p = parse_case_id_or_throw("b1.hq1.l144115188075855872.s1.dqk4.dv4.f64").problem;
  ASSERT_EQ(validate(p), "");
  EXPECT_EQ(harness_memory(p, false, 1).total(), UINT64_MAX);
  // The case: 1e11 query rows, far beyond any machine, counted exactly.
  const Problem q = parse_case_id_or_throw("b1.hq1.l99999999999.s1.dqk8.f32").problem;
  const HarnessMemory m = harness_memory(q, false, 1);
  EXPECT_GT(m.inputs, 99999999999ull * 8 * 4 * 2);  // Q and its snapshot, at least
  EXPECT_LT(m.total(), UINT64_MAX);
}

TEST(HarnessMemory, RefusalSaysWhatTheCaseNeedsAndWhatTheRunAllows) {
  const HarnessMemory m = harness_memory(parse_case_id_or_throw(kCases[0]).problem, false, 1);
  EXPECT_EQ(memory_refusal(m, m.total()), "") << "a case that fits exactly is run";
  const std::string why = memory_refusal(m, m.total() - 1);
  EXPECT_EQ(why.rfind("needs " + format_byte_size(m.total()) + " (" + std::to_string(m.total()) +
                          " bytes) of host memory for the harness's buffers (inputs " +
                          format_byte_size(m.inputs) + ", outputs ",
                      0),
            0u)
      << why;
  EXPECT_NE(why.find("; this run lets one case use " + format_byte_size(m.total() - 1) + " (" +
                     std::to_string(m.total() - 1) + " bytes, --max-case-memory)"),
            std::string::npos)
      << why;
}

TEST(CaseMemoryLimit, DefaultIsHalfThePhysicalMemoryPerJob) {
  const std::uint64_t physical = physical_memory_bytes();
  ASSERT_GT(physical, 0u) << "sysconf tells the physical memory on Linux";
  EXPECT_EQ(default_case_memory_limit(1), physical / 2);
  EXPECT_EQ(default_case_memory_limit(4), physical / 2 / 4);
  EXPECT_EQ(default_case_memory_limit(0), physical / 2) << "no jobs count as one";
  EXPECT_EQ(case_memory_limit(0, 4), default_case_memory_limit(4));
  EXPECT_EQ(case_memory_limit(12345, 4), 12345u) << "--max-case-memory wins";
}

}  // namespace
}  // namespace sdpa
