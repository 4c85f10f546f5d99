// Pair coverage: jobs are classified from the parsed problem (layouts and gaps by the row
// stride, lengths against the running backend's blocks); the generated covering set covers
// every pair it does not report impossible, and a run without a value leaves its pairs
// uncovered.
#include "conformance/pair_coverage.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "kernels/registry.hpp"

namespace sdpa::conformance {
namespace {

// The value name of dimension `name` for `id` on `backend`.
std::string value_of(const std::string& id, const std::string& backend, const std::string& name,
                     IsaTarget isa = IsaTarget::scalar, int threads = 1) {
  const Backend& b = find_backend_or_throw(backend);
  const auto dims = pair_dimensions(b);
  const auto v = classify_job(parse_case_id_or_throw(id), b, isa, threads);
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (dims[d].name == name) return dims[d].values[static_cast<std::size_t>(v[d])];
  }
  ADD_FAILURE() << "no dimension " << name;
  return "";
}

TEST(PairCoverage, LayoutAndRowStrideComeFromTheStrides) {
  const std::string base = "b1.hq2.l5.s7.dqk32.f32";
  EXPECT_EQ(value_of(base, "cpu.math", "layout"), "bhsd");
  EXPECT_EQ(value_of(base, "cpu.math", "row_pitch"), "dense");
  EXPECT_EQ(value_of(base + ".lay=bshd", "cpu.math", "layout"), "bshd");
  EXPECT_EQ(value_of(base + ".gap=2", "cpu.math", "row_pitch"), "gap_even");
  EXPECT_EQ(value_of(base + ".gap=3", "cpu.math", "row_pitch"), "gap_odd");
  EXPECT_EQ(value_of(base + ".lay=bshd.gap=3", "cpu.math", "row_pitch"), "gap_odd");
  // With one or no query row the strides of bhsd and bshd coincide: named as the ID does.
  EXPECT_EQ(value_of("b1.hq2.l0.s7.dqk32.f32", "cpu.math", "layout"), "bhsd");
  EXPECT_EQ(value_of("b1.hq2.l1.s7.dqk32.f32", "cpu.math", "layout"), "bhsd");
}

TEST(PairCoverage, LengthsAreJudgedAgainstTheBackendsBlocks) {
  // cpu.flash tiles 64 (head, query) rows of a KV head's group and steps 128 keys.
  EXPECT_EQ(value_of("b1.hq2.l63.s128.dqk32.f32", "cpu.flash", "group_rows"), "<64");
  EXPECT_EQ(value_of("b1.hq4.hkv2.l32.s128.dqk32.f32", "cpu.flash", "group_rows"), "=64");
  EXPECT_EQ(value_of("b1.hq2.l65.s128.dqk32.f32", "cpu.flash", "keys"), "=128");
  EXPECT_EQ(value_of("b1.hq2.l65.s129.dqk32.f32", "cpu.flash", "keys"), ">128");
  // cpu.mem_efficient: decode rows (<= 8), GEMM blocks of 48 rows, key chunks (256 here).
  EXPECT_EQ(value_of("b1.hq8.hkv1.l1.s300.dqk32.f32", "cpu.mem_efficient", "group_rows"), "=8");
  EXPECT_EQ(value_of("b1.hq2.l48.s256.dqk32.f32", "cpu.mem_efficient", "group_rows"), "=48");
  EXPECT_EQ(value_of("b1.hq2.l48.s256.dqk32.f32", "cpu.mem_efficient", "keys"), "=chunk");
  EXPECT_EQ(value_of("b1.hq2.l48.s257.dqk32.f32", "cpu.mem_efficient", "keys"), ">chunk");
  // cpu.math: none beyond the first row.
  EXPECT_EQ(value_of("b1.hq2.l0.s7.dqk32.f32", "cpu.math", "query_rows"), "<1");
  EXPECT_EQ(value_of("b1.hq2.l2.s7.dqk32.f32", "cpu.math", "query_rows"), ">1");
}

TEST(PairCoverage, FeaturesSimdAndThreads) {
  EXPECT_EQ(value_of("b3.hq4.hkv1.l4.s27.dqk24.f16.qlen=4_1_0.kvlen=0_27_13.packed", "cpu.math",
                     "varlen"),
            "packed");
  EXPECT_EQ(value_of("b1.hq4.hkv1.l4.s27.dqk24.f16", "cpu.math", "heads"), "mqa");
  EXPECT_EQ(value_of("b1.hq4.hkv2.l4.s27.dqk24.f16", "cpu.math", "heads"), "gqa");
  EXPECT_EQ(value_of("b1.hq4.l4.s27.dqk24.f16.p0.3", "cpu.math", "dropout"), "on");
  EXPECT_EQ(value_of("b1.hq4.l4.s27.dqk24.bf16", "cpu.math", "head_dim"), "other");
  EXPECT_EQ(value_of("b1.hq4.l4.s27.dqk24.bf16", "cpu.math", "simd", IsaTarget::avx2), "avx2");
  EXPECT_EQ(value_of("b1.hq4.l4.s27.dqk24.bf16", "cpu.math", "threads", IsaTarget::scalar, 0),
            "2+");
}

TEST(PairCoverage, TheCoveringSetCoversEveryPossiblePairOnItsOwn) {
  const std::vector<const Backend*> backends = {&find_backend_or_throw("cpu.math"),
                                                &find_backend_or_throw("cpu.flash")};
  const Device device = with_isa_target(detect_cpu(), "scalar");
  const CoveringSet set = generate_covering_set(backends, device);
  ASSERT_FALSE(set.case_ids.empty());
  ASSERT_EQ(set.impossible.size(), 2u);
  for (std::size_t i = 0; i < backends.size(); ++i) {
    // At one and at two threads, on the scalar target: every possible pair.
    const auto cov =
        pair_coverage(*backends[i], device, {IsaTarget::scalar},
                      {{"set", set.case_ids, 1}, {"set", set.case_ids, 2}}, set.impossible[i]);
    EXPECT_TRUE(cov.uncovered.empty())
        << backends[i]->name() << ": " << describe_pair(cov.dimensions, cov.uncovered.front());
    EXPECT_GT(cov.covered.size(), 500u);
    // Removing the dropout cases uncovers dropout's pairs.
    std::vector<std::string> no_dropout;
    std::copy_if(set.case_ids.begin(), set.case_ids.end(), std::back_inserter(no_dropout),
                 [](const std::string& id) { return id.find(".p0.") == std::string::npos; });
    const auto less =
        pair_coverage(*backends[i], device, {IsaTarget::scalar},
                      {{"set", no_dropout, 1}, {"set", no_dropout, 2}}, set.impossible[i]);
    bool dropout_uncovered = false;
    for (const auto& p : less.uncovered) {
      if (describe_pair(less.dimensions, p).find("dropout=on") != std::string::npos) {
        dropout_uncovered = true;
      }
    }
    EXPECT_TRUE(dropout_uncovered);
  }
  // f64 is cpu.math's alone: on cpu.flash its pairs are impossible, not uncovered.
  bool f64_impossible = false;
  for (const auto& p : set.impossible[1]) {
    if (p.d1 == 0 && p.v1 == 3) f64_impossible = true;
  }
  EXPECT_TRUE(f64_impossible);
}

}  // namespace
}  // namespace sdpa::conformance
