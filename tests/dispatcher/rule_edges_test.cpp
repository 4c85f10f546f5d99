// The dispatcher's ordering rules (dispatcher/rules.hpp) and the PyTorch policy's training rules
// (dispatcher/pytorch_model.hpp) at both sides of each numeric threshold, on each kind of
// device where the rule applies, with the cases generated from the rules' own data
// (kDecode*, kTinyMaxWork, cudnn_preference(), flash_training_*()): a changed threshold moves
// its cases with it. The expectation is recomputed here from the data; the pins of the data
// against PyTorch's published values are the *ArePyTorchs tests.
// docs/DISPATCH.md, "Boundary tests from the rule data".
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dispatcher/pytorch_model.hpp"
#include "dispatcher/rules.hpp"
#include "kernels/cuda/cuda_backends.hpp"
#include "tests/dispatcher/test_backends.hpp"

namespace sdpa {
namespace {

using testing::device;
using testing::problem;

std::unique_ptr<Backend> fake(const std::string& name, bool split_kv, bool math) {
  Capabilities c = Capabilities::every_forward_input();
  c.dtypes = {DType::f32, DType::f16};
  c.traits.split_kv = split_kv;
  if (math) c.traits.pytorch = PytorchKernel::math;
  return std::make_unique<testing::FakeCpuBackend>(name, c);
}

// Whether rule `rule` alone fires for `case_id` on `dev` over `backends`.
bool fires(const std::string& rule, const std::string& case_id, const Device& dev,
           std::vector<const Backend*> order, bool promote_models = false) {
  const std::vector<std::string> only = {rule};
  const auto fired = dispatcher::apply_rules(problem(case_id), dev, order, &only, promote_models);
  return std::any_of(fired.begin(), fired.end(),
                     [&](const dispatcher::RuleFiring& f) { return f.name == rule; });
}

std::string s(std::int64_t v) { return std::to_string(v); }

// ---------------------------------------------------------------- decode_split_kv

// L = kDecodeMaxLenQ, S = kDecodeMinLenKv and B*Hq one below the device's units fire; one step
// past any one of the three does not. On a CPU (cores) and on GPUs (SMs) of several sizes.
TEST(RuleEdges, DecodeSplitKvAtEachCut) {
  const auto cpu_split = fake("fake.split", true, false);
  const auto cpu_plain = fake("fake.plain", false, false);
  Device cpu = device("cpu");
  cpu.cpu.cores = 64;
  struct Target {
    Device dev;
    std::int64_t units;
    std::vector<const Backend*> order;  // a split-KV backend behind another
  };
  std::vector<Target> targets = {{cpu, 64, {cpu_plain.get(), cpu_split.get()}}};
  for (const char* g : {"sm80", "sm90", "sm121", "sm90:sms=16"}) {
    const Device d = device(g);
    targets.push_back(
        {d, d.cuda.sm_count, {&cuda::mem_efficient_backend(), &cuda::flash_backend()}});
  }
  const std::int64_t L = dispatcher::kDecodeMaxLenQ, S = dispatcher::kDecodeMinLenKv;
  for (const auto& t : targets) {
    SCOPED_TRACE(t.dev.name + " with " + s(t.units) + " units");
    const auto id = [](std::int64_t hq, std::int64_t l, std::int64_t kv) {
      return "b1.hq" + s(hq) + ".l" + s(l) + ".s" + s(kv) + ".dqk64.f16.seed1.gen=normal";
    };
    EXPECT_TRUE(fires("decode_split_kv", id(t.units - 1, L, S), t.dev, t.order));
    EXPECT_FALSE(fires("decode_split_kv", id(t.units - 1, L + 1, S), t.dev, t.order));
    EXPECT_FALSE(fires("decode_split_kv", id(t.units - 1, L, S - 1), t.dev, t.order));
    EXPECT_FALSE(fires("decode_split_kv", id(t.units, L, S), t.dev, t.order));
  }
}

// ---------------------------------------------------------------- tiny_prefers_math

// B*Hq*L*S*(Dqk+Dv) = kTinyMaxWork fires on a CPU, one more does not; never on a GPU.
TEST(RuleEdges, TinyPrefersMathAtItsCut) {
  const auto other = fake("fake.other", false, false);
  const auto math = fake("fake.math", false, true);
  const std::int64_t w = dispatcher::kTinyMaxWork;
  const auto id = [](std::int64_t dqk, std::int64_t dv) {
    return "b1.hq1.l1.s1.dqk" + s(dqk) + ".dv" + s(dv) + ".f32.seed1.gen=normal";
  };
  Device cpu = device("cpu");
  EXPECT_TRUE(fires("tiny_prefers_math", id(w / 2, w - w / 2), cpu, {other.get(), math.get()}));
  EXPECT_FALSE(
      fires("tiny_prefers_math", id(w / 2, w - w / 2 + 1), cpu, {other.get(), math.get()}));
  EXPECT_FALSE(fires("tiny_prefers_math", id(w / 2, w - w / 2), device("sm80"),
                     {&cuda::flash_backend(), &cuda::math_backend()}));
}

TEST(RuleEdges, ShapeHeuristicLimitsAreTheDocumentedOnes) {
  EXPECT_EQ(dispatcher::kDecodeMaxLenQ, 4);  // docs/DISPATCH.md, "Rules"
  EXPECT_EQ(dispatcher::kDecodeMinLenKv, 256);
  EXPECT_EQ(dispatcher::kTinyMaxWork, 32768);
}

// ---------------------------------------------------------------- cudnn_preferred

bool expected_preference(int arch, int version, int runtime) {
  const auto& p = dispatcher::cudnn_preference();
  const auto in = [](const std::vector<int>& v, int x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  return in(p.majors, arch / 10) && version > p.above_version &&
         (runtime >= p.any_minor_from_runtime || in(p.minors, arch % 10));
}

// Every edge of the condition: each listed major and the majors next to the list; each listed
// minor and a minor not listed; the version cut (above_version itself, the next patch); the
// runtime cut (one step below, at it).
TEST(RuleEdges, CudnnPreferredAtEveryCut) {
  const auto& p = dispatcher::cudnn_preference();
  ASSERT_FALSE(p.majors.empty());
  std::vector<int> majors = p.majors;
  majors.push_back(*std::min_element(p.majors.begin(), p.majors.end()) - 1);
  majors.push_back(*std::max_element(p.majors.begin(), p.majors.end()) + 1);
  std::vector<int> minors = p.minors;
  for (int m = 0; m < 10; ++m) {
    if (std::find(p.minors.begin(), p.minors.end(), m) == p.minors.end()) {
      minors.push_back(m);  // the first minor the list leaves out
      break;
    }
  }
  int preferred = 0, not_preferred = 0;
  for (int major : majors) {
    for (int minor : minors) {
      for (int v : {p.above_version, p.above_version + 1}) {
        for (int rt : {p.any_minor_from_runtime - 10, p.any_minor_from_runtime}) {
          Device d = device("sm90");
          d.cuda.sm = major * 10 + minor;
          d.cuda.cudnn_version = v;
          d.cuda.cuda_runtime = rt;
          const bool want = expected_preference(d.cuda.sm, v, rt);
          (want ? preferred : not_preferred)++;
          std::vector<const Backend*> order = dispatcher::pytorch_model_backends();
          const std::vector<std::string> only = {"cudnn_preferred"};
          const auto fired =
              dispatcher::apply_rules(problem("b1.hq2.l128.s128.dqk64.f16.seed1.gen=normal"), d,
                                      order, &only, /*promote_models=*/true);
          EXPECT_EQ(!fired.empty(), want)
              << sm_name(d.cuda.sm) << " cuDNN " << cudnn_version_name(v) << " runtime " << rt;
          EXPECT_EQ(dispatcher::cudnn_preferred_on(d), want) << sm_name(d.cuda.sm);
          if (want) {
            EXPECT_EQ(order.front(), &cuda::cudnn_backend());
          }
        }
      }
    }
  }
  EXPECT_GT(preferred, 0);
  EXPECT_GT(not_preferred, 0);
}

// check_prefer_cudnn_attention: sm9x and sm10x with cuDNN above 9.15.0, minor 0 or 3 unless
// the CUDA runtime is 13.0 or newer.
TEST(RuleEdges, CudnnPreferenceIsPyTorchs) {
  const auto& p = dispatcher::cudnn_preference();
  EXPECT_EQ(p.majors, (std::vector<int>{9, 10}));
  EXPECT_EQ(p.above_version, 91500);
  EXPECT_EQ(p.minors, (std::vector<int>{0, 3}));
  EXPECT_EQ(p.any_minor_from_runtime, 13000);
}

// ---------------------------------------------------------------- training: flash on consumer GPUs

// Each band at its head-dim edges (above, above + 1, up_to, up_to + 1), with and without
// dropout, on each consumer architecture and the architectures next to it.
TEST(RuleEdges, FlashTrainingBandsAtEveryCut) {
  const auto& archs = dispatcher::flash_training_consumer_archs();
  const auto& bands = dispatcher::flash_training_head_dim_bands();
  ASSERT_FALSE(archs.empty());
  ASSERT_FALSE(bands.empty());
  std::vector<int> devices;
  for (int a : archs) {
    for (int x : {a - 1, a, a + 1}) {
      if (std::find(devices.begin(), devices.end(), x) == devices.end()) devices.push_back(x);
    }
  }
  std::vector<std::int64_t> dims;
  for (const auto& b : bands) {
    for (std::int64_t d : {b.above, b.above + 1, b.up_to}) {
      if (d > 0 && d < 100000) dims.push_back(d);
    }
    // An open band (up to the int64 maximum) has no upper edge, and no value above it.
    if (b.up_to < 100000) dims.push_back(b.up_to + 1);
  }
  int declined = 0;
  for (int arch : devices) {
    Device dev = device("sm86");
    dev.cuda.sm = arch;
    for (std::int64_t d : dims) {
      for (bool dropout : {false, true}) {
        bool want = false;
        const bool consumer = std::find(archs.begin(), archs.end(), arch) != archs.end();
        for (const auto& b : bands) {
          want = want ||
                 (consumer && d > b.above && d <= b.up_to && (!b.only_with_dropout || dropout));
        }
        declined += want;
        const std::string id = "b1.hq2.l64.s64.dqk" + s(d) + ".f16" + (dropout ? ".p0.25" : "") +
                               ".bwd.seed1.gen=normal";
        const dispatcher::TorchCall call = dispatcher::torch_call(problem(id));
        ASSERT_TRUE(call.requires_grad) << id;
        Support sup;
        dispatcher::pytorch_route_checks(cuda::flash_backend(), call, dev, sup);
        const bool got =
            std::any_of(sup.reasons.begin(), sup.reasons.end(), [](const std::string& r) {
              return r.find("is not supported by flash on") != std::string::npos;
            });
        EXPECT_EQ(got, want) << sm_name(arch) << " " << id;
      }
    }
  }
  EXPECT_GT(declined, 0);
}

// check_requires_grad_and_head_dim_gt192_constraints_on_sm86_89_or_120: (192, 224] always,
// above 224 with dropout; sm86, sm89, sm120 (and sm121, with sm120's shared memory).
TEST(RuleEdges, FlashTrainingBandsArePyTorchs) {
  EXPECT_EQ(dispatcher::flash_training_consumer_archs(), (std::vector<int>{86, 89, 120, 121}));
  const auto& bands = dispatcher::flash_training_head_dim_bands();
  ASSERT_EQ(bands.size(), 2u);
  EXPECT_EQ(bands[0].above, 192);
  EXPECT_EQ(bands[0].up_to, 224);
  EXPECT_FALSE(bands[0].only_with_dropout);
  EXPECT_EQ(bands[1].above, 224);
  EXPECT_EQ(bands[1].up_to, INT64_MAX);
  EXPECT_TRUE(bands[1].only_with_dropout);
}

}  // namespace
}  // namespace sdpa
