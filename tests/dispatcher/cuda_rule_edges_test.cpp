// Every numeric threshold of the CUDA descriptors' supports() at both sides of each of its
// boundaries, on each architecture where it applies, with the cases generated from the rule's
// own data (kernels/cuda/cuda_backends.hpp, kernels/cuda/cudnn_rules.hpp, the capabilities):
// a new row of a table is tested without a new test. The expectation is recomputed here from
// the rows, not through the product's lookup, so a comparison changed in the product (a cut
// made exclusive, a version gate off by one) fails; a value changed in a table fails the pin
// of that table against PyTorch's published numbers (the *ArePyTorchs tests).
// docs/DISPATCH.md, "Boundary tests from the rule data".
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cuda/cuda_backends.hpp"
#include "kernels/cuda/cudnn_rules.hpp"
#include "kernels/registry.hpp"
#include "test_backends.hpp"

namespace sdpa {
namespace {

using testing::device;
using testing::problem;
using testing::show;

// Whether one of `b`'s reasons for `case_id` on `dev` contains `part`.
bool gives(const Backend& b, const std::string& case_id, const std::string& dev,
           const std::string& part, std::string* all = nullptr) {
  const Support s = b.supports(problem(case_id), device(dev));
  if (all) *all = show(s.reasons);
  return std::any_of(s.reasons.begin(), s.reasons.end(),
                     [&](const std::string& r) { return r.find(part) != std::string::npos; });
}

// `part` among the reasons exactly when `expected`, with the reasons on failure.
::testing::AssertionResult reason_iff(bool expected, const Backend& b, const std::string& case_id,
                                      const std::string& dev, const std::string& part) {
  std::string all;
  if (gives(b, case_id, dev, part, &all) == expected) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << b.name() << " on " << dev << " for " << case_id << (expected ? " lacks" : " gives")
         << " a reason with \"" << part << "\"; its reasons:" << all;
}

const Backend& by_name(std::string_view name) {
  for (const Backend* b : builtin_backends())
    if (b->name() == name) return *b;
  throw std::logic_error("no backend " + std::string(name));
}

std::string sm(int v) { return "sm" + std::to_string(v); }
std::string cudnn_dev(int arch, int version) {
  return sm(arch) + ":cudnn=" + cudnn_version_name(version);
}
bool in_range(std::string_view backend, int arch) {
  const cuda::ArchRange& r = cuda::cuda_arch_range(backend);
  return arch >= r.from_sm && arch <= r.to_sm;
}

// ---------------------------------------------------------------- architecture ranges

// sm(from - 1) and sm(to + 1) are outside, sm(from) and sm(to) inside, for every row.
TEST(CudaRuleEdges, ArchRangeAtBothEnds) {
  const std::string base = "b1.hq2.l128.s128.dqk64.f16.seed1.gen=normal";
  ASSERT_FALSE(cuda::cuda_arch_ranges().empty());
  for (const auto& r : cuda::cuda_arch_ranges()) {
    const Backend& b = by_name(r.backend);
    const std::string range = "[" + sm(r.from_sm) + ", " + sm(r.to_sm) + "]";
    for (int arch : {r.from_sm - 1, r.from_sm, r.to_sm, r.to_sm + 1}) {
      const bool outside = arch < r.from_sm || arch > r.to_sm;
      EXPECT_TRUE(reason_iff(
          outside, b, base, sm(arch),
          "compute capability " + sm(arch) + " is outside the supported range " + range));
    }
  }
}

// The descriptors' ranges are PyTorch's (check_sm_version in can_use_*): flash and cuDNN from
// sm80, mem-efficient from sm50, all up to sm121.
TEST(CudaRuleEdges, ArchRangesArePyTorchs) {
  EXPECT_EQ(cuda::cuda_arch_range("cuda.flash").from_sm, 80);
  EXPECT_EQ(cuda::cuda_arch_range("cuda.flash").to_sm, 121);
  EXPECT_EQ(cuda::cuda_arch_range("cuda.mem_efficient").from_sm, 50);
  EXPECT_EQ(cuda::cuda_arch_range("cuda.mem_efficient").to_sm, 121);
  EXPECT_EQ(cuda::cuda_arch_range("cuda.cudnn").from_sm, 80);
  EXPECT_EQ(cuda::cuda_arch_range("cuda.cudnn").to_sm, 121);
  EXPECT_EQ(cuda::cuda_arch_ranges().size(), 3u);
}

// ---------------------------------------------------------------- dtype and pointer cut-offs

TEST(CudaRuleEdges, DtypeArchCutOnBothSides) {
  ASSERT_FALSE(cuda::cuda_dtype_arch_cuts().empty());
  for (const auto& c : cuda::cuda_dtype_arch_cuts()) {
    const Backend& b = by_name(c.backend);
    const std::string dt(dtype_name(c.dtype));
    const std::string id = "b1.hq2.l16.s16.dqk64." + dt + ".seed1.gen=normal";
    for (int arch : {c.from_sm - 1, c.from_sm}) {
      if (!in_range(c.backend, arch)) continue;
      EXPECT_TRUE(reason_iff(
          arch < c.from_sm, b, id, sm(arch),
          "dtype " + dt + " needs " + sm(c.from_sm) + " or newer, device is " + sm(arch)));
    }
  }
}

TEST(CudaRuleEdges, DtypeArchCutsArePyTorchs) {
  const auto& cuts = cuda::cuda_dtype_arch_cuts();
  ASSERT_EQ(cuts.size(), 1u);
  EXPECT_EQ(std::string(cuts[0].backend), "cuda.mem_efficient");
  EXPECT_EQ(cuts[0].dtype, DType::bf16);
  EXPECT_EQ(cuts[0].from_sm, 80);  // check_bf16_supported: Ampere
}

TEST(CudaRuleEdges, PointerAlignmentFromItsArchitecture) {
  const int from = cuda::kMemEfficientPointerAlignmentFromSm;
  EXPECT_EQ(from, 80);  // PyTorch's can_use_mem_efficient_attention: sm80 and newer
  const Backend& b = cuda::mem_efficient_backend();
  for (int arch : {from - 1, from}) {
    EXPECT_TRUE(reason_iff(arch >= from, b, "b1.hq2.l16.s16.dqk64.f16.off=3.seed1.gen=normal",
                           sm(arch), "q starts 3 elements"));
  }
}

// ---------------------------------------------------------------- cuda.cudnn head dims

// The limit the cut rows give, recomputed from the rows (the first that applies).
int cut_limit(int arch, int version) {
  for (const auto& c : cuda::cudnn_head_dim_cuts())
    if (arch >= c.from_sm && arch <= c.to_sm && version > c.above_version) return c.limit;
  return cuda::kCudnnBaseHeadDimLimit;
}

// Each cut row at its architecture edges (from - 1, from, to, to + 1) and its version edge
// (above_version itself, the next patch): a head dim at the limit passes, one multiple of 8
// past it is declined with the limit in the text.
TEST(CudaRuleEdges, CudnnHeadDimLimitAtEveryCut) {
  const Backend& b = cuda::cudnn_backend();
  ASSERT_FALSE(cuda::cudnn_head_dim_cuts().empty());
  int raised = 0;
  for (const auto& c : cuda::cudnn_head_dim_cuts()) {
    for (int arch : {c.from_sm - 1, c.from_sm, c.to_sm, c.to_sm + 1}) {
      if (!in_range("cuda.cudnn", arch)) continue;
      for (int v : {c.above_version, c.above_version + 1}) {
        const int limit = cut_limit(arch, v);
        raised += limit > cuda::kCudnnBaseHeadDimLimit;
        const std::string dev = cudnn_dev(arch, v);
        const auto id = [](int d) {
          return "b1.hq2.l128.s128.dqk" + std::to_string(d) + ".f16.seed1.gen=normal";
        };
        SCOPED_TRACE(dev);
        EXPECT_TRUE(reason_iff(false, b, id(limit), dev, "exceeds cuDNN's limit"));
        EXPECT_TRUE(reason_iff(true, b, id(limit + 8), dev,
                               "head dim dqk=" + std::to_string(limit + 8) +
                                   " exceeds cuDNN's limit of " + std::to_string(limit) + " on " +
                                   sm(arch) + " with cuDNN " + cudnn_version_name(v)));
      }
    }
  }
  EXPECT_GT(raised, 0) << "no case on the raised side of a cut";
}

// Each pair row at its architecture edges and its version edge (from_version - 1, from).
TEST(CudaRuleEdges, CudnnHeadDimPairsAtTheirCuts) {
  const Backend& b = cuda::cudnn_backend();
  ASSERT_FALSE(cuda::cudnn_head_dim_pairs().empty());
  for (const auto& pr : cuda::cudnn_head_dim_pairs()) {
    const std::string id = "b1.hq2.l128.s128.dqk" + std::to_string(pr.dqk) + ".dv" +
                           std::to_string(pr.dv) + ".f16.seed1.gen=normal";
    for (int arch : {pr.from_sm - 1, pr.from_sm, pr.to_sm, pr.to_sm + 1}) {
      if (!in_range("cuda.cudnn", arch)) continue;
      for (int v : {pr.from_version - 1, pr.from_version}) {
        bool taken = false;
        for (const auto& q : cuda::cudnn_head_dim_pairs()) {
          taken = taken || (arch >= q.from_sm && arch <= q.to_sm && v >= q.from_version &&
                            q.dqk == pr.dqk && q.dv == pr.dv);
        }
        const bool over = std::max(pr.dqk, pr.dv) > cut_limit(arch, v);
        EXPECT_TRUE(reason_iff(over && !taken, b, id, cudnn_dev(arch, v), "exceeds cuDNN's limit"));
      }
    }
  }
}

// check_cudnn_tensor_shapes: 128; 256 on sm90 (minor 0) and sm10x with cuDNN > 9.22.0, on
// sm107 only with cuDNN > 9.25.0; (192, 128) on sm90 and sm10x from cuDNN 9.11.0.
TEST(CudaRuleEdges, CudnnHeadDimTablesArePyTorchs) {
  EXPECT_EQ(cuda::kCudnnBaseHeadDimLimit, 128);
  const auto& cuts = cuda::cudnn_head_dim_cuts();
  ASSERT_EQ(cuts.size(), 4u);
  const int expected[4][4] = {
      {90, 90, 92200, 256}, {100, 106, 92200, 256}, {107, 107, 92500, 256}, {108, 109, 92200, 256}};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(cuts[i].from_sm, expected[i][0]) << i;
    EXPECT_EQ(cuts[i].to_sm, expected[i][1]) << i;
    EXPECT_EQ(cuts[i].above_version, expected[i][2]) << i;
    EXPECT_EQ(cuts[i].limit, expected[i][3]) << i;
  }
  const auto& pairs = cuda::cudnn_head_dim_pairs();
  ASSERT_EQ(pairs.size(), 2u);
  const int expected_pairs[2][5] = {{90, 90, 91100, 192, 128}, {100, 109, 91100, 192, 128}};
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(pairs[i].from_sm, expected_pairs[i][0]) << i;
    EXPECT_EQ(pairs[i].to_sm, expected_pairs[i][1]) << i;
    EXPECT_EQ(pairs[i].from_version, expected_pairs[i][2]) << i;
    EXPECT_EQ(pairs[i].dqk, expected_pairs[i][3]) << i;
    EXPECT_EQ(pairs[i].dv, expected_pairs[i][4]) << i;
  }
}

// ---------------------------------------------------------------- cuda.cudnn version gates

// A problem each gate declines while it applies, and a part of its reason text.
struct GateProbe {
  std::string case_id;
  std::string reason;
};
GateProbe probe(cuda::CudnnGate g) {
  switch (g) {
    case cuda::CudnnGate::no_sdpa:
      return {"b1.hq2.l128.s128.dqk64.f16.seed1.gen=normal", "has no SDPA"};
    case cuda::CudnnGate::dropout:
      return {"b1.hq2.l128.s128.dqk64.f16.p0.125.seed1.gen=normal", "dropout needs cuDNN"};
    case cuda::CudnnGate::kv_len_multiple_64:
      return {"b1.hq2.l128.s100.dqk64.f16.seed1.gen=normal", "is not a multiple of 64, needed"};
    case cuda::CudnnGate::q_len_at_least_64:
      return {"b1.hq2.l32.s128.dqk64.f16.seed1.gen=normal", "is below 64, needed before"};
    case cuda::CudnnGate::dropout_lens_64:
      return {"b1.hq2.l96.s128.dqk64.f16.p0.25.seed1.gen=normal", "must be multiples of 64"};
    case cuda::CudnnGate::dropout_disabled:
      return {"b1.hq2.l128.s128.dqk64.f16.p0.125.seed1.gen=normal", "dropout is disabled"};
  }
  return {};
}

// Each gate at both ends of its version interval: from_version - 1 and from_version,
// until_version - 1 and until_version (versions below 0.0.1 are not devices).
TEST(CudaRuleEdges, CudnnVersionGatesOnBothSides) {
  const Backend& b = cuda::cudnn_backend();
  ASSERT_FALSE(cuda::cudnn_version_gates().empty());
  for (const auto& g : cuda::cudnn_version_gates()) {
    const GateProbe pr = probe(g.gate);
    ASSERT_FALSE(pr.case_id.empty()) << "a gate without a probe";
    for (int v : {g.from_version - 1, g.from_version, g.until_version - 1, g.until_version}) {
      if (v <= 0) continue;
      bool applies = false;
      for (const auto& h : cuda::cudnn_version_gates())
        applies = applies || (h.gate == g.gate && v >= h.from_version && v < h.until_version);
      for (int arch : {90, 80}) {
        EXPECT_TRUE(reason_iff(applies, b, pr.case_id, cudnn_dev(arch, v), pr.reason));
      }
    }
  }
}

// can_use_cudnn_attention and its checks: SDPA from 8.9.3; dropout and any S from 8.9.6;
// L < 64 and dropout off multiples of 64 from 9.0.0; dropout off for 91100 < v < 91400.
TEST(CudaRuleEdges, CudnnVersionGatesArePyTorchs) {
  using G = cuda::CudnnGate;
  const std::vector<std::tuple<G, int, int>> expected = {{G::no_sdpa, 0, 80903},
                                                         {G::dropout, 0, 80906},
                                                         {G::kv_len_multiple_64, 0, 80906},
                                                         {G::q_len_at_least_64, 0, 90000},
                                                         {G::dropout_lens_64, 0, 90000},
                                                         {G::dropout_disabled, 91101, 91400}};
  const auto& gates = cuda::cudnn_version_gates();
  ASSERT_EQ(gates.size(), expected.size());
  for (std::size_t i = 0; i < gates.size(); ++i) {
    EXPECT_EQ(gates[i].gate, std::get<0>(expected[i])) << i;
    EXPECT_EQ(gates[i].from_version, std::get<1>(expected[i])) << i;
    EXPECT_EQ(gates[i].until_version, std::get<2>(expected[i])) << i;
  }
}

// ---------------------------------------------------------------- capability limits

// Every backend's declared head-dim limit and multiple (Capabilities::max_head_dim,
// head_dim_multiple), at the limit and one past it, on each kind of device it runs on (a CUDA
// backend at both ends of its architecture range). cuda.cudnn's limit depends on the
// architecture and the cuDNN version: CudnnHeadDimLimitAtEveryCut.
TEST(CudaRuleEdges, CapabilityHeadDimLimitsOfEveryBackend) {
  int limits = 0;
  for (const Backend* b : builtin_backends()) {
    const Capabilities& c = b->capabilities();
    if (b->name() == "cuda.cudnn" || c.dtypes.empty()) continue;
    if (c.max_head_dim <= 0 && c.head_dim_multiple <= 1) continue;  // no limit (cuda.math)
    std::vector<std::string> devs;
    if (c.device == DeviceKind::cuda) {
      const auto& r = cuda::cuda_arch_range(b->name());
      devs = {sm(r.from_sm), sm(r.to_sm)};
    } else {
      devs = {"cpu"};
    }
    const std::string dt(dtype_name(c.dtypes.front()));
    const auto id = [&](std::int64_t d) {
      return "b1.hq1.l4.s4.dqk" + std::to_string(d) + "." + dt + ".seed1.gen=normal";
    };
    for (const auto& dev : devs) {
      SCOPED_TRACE(std::string(b->name()) + " on " + dev);
      if (c.max_head_dim > 0) {
        ++limits;
        const std::int64_t m = c.max_head_dim;
        EXPECT_TRUE(reason_iff(false, *b, id(m), dev, "exceeds"));
        EXPECT_TRUE(
            reason_iff(true, *b, id(m + 1), dev,
                       "head dim dqk=" + std::to_string(m + 1) + " exceeds " + std::to_string(m)));
      }
      if (c.head_dim_multiple > 1) {
        const std::int64_t k = c.head_dim_multiple;
        EXPECT_TRUE(reason_iff(false, *b, id(8 * k), dev, "is not a multiple of"));
        EXPECT_TRUE(reason_iff(true, *b, id(8 * k + 1), dev,
                               "head dim dqk=" + std::to_string(8 * k + 1) +
                                   " is not a multiple of " + std::to_string(k)));
      }
    }
  }
  EXPECT_GT(limits, 0);
}

}  // namespace
}  // namespace sdpa
