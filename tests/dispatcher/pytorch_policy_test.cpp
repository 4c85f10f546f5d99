// The PyTorch policy (`explain --policy pytorch`): every decision where PyTorch's own picker
// differs from the suite policy, one table row each naming the PyTorch function it mirrors;
// the front end (what the public API cannot express, CausalBias, NestedTensors); "selected,
// then raises"; and the suite policy's account of where it departs from PyTorch. The
// agreement with the real PyTorch on sampled problems is the CTest test
// dispatcher.pytorch_picker_replay (scripts/pytorch-picker-diff.py).
#include <gtest/gtest.h>

#include <algorithm>

#include "core/case_id.hpp"
#include "dispatcher/dispatcher.hpp"
#include "dispatcher/mha_path.hpp"
#include "dispatcher/pytorch_model.hpp"
#include "kernels/lowered_problem.hpp"

namespace sdpa {
namespace {

using dispatcher::Explanation;
using dispatcher::Outcome;
using dispatcher::Policy;
using dispatcher::PolicyModel;

Problem problem(const std::string& id) { return parse_case_id_or_throw(id).problem; }
Device device(const std::string& name) { return parse_device_or_throw(name); }

Policy pytorch_policy() {
  Policy p;
  p.model = PolicyModel::pytorch;
  return p;
}

Explanation torch_explain(const std::string& id, const std::string& dev) {
  return dispatcher::explain(problem(id), device(dev), pytorch_policy());
}

Explanation suite_explain(const std::string& id, const std::string& dev) {
  return dispatcher::explain(problem(id), device(dev), Policy{});
}

struct Row {
  std::string mirrors;  // the PyTorch function (or Python code) the row checks
  std::string case_id;
  std::string device;
  std::string pytorch;  // the PyTorch policy's choice ("" = none)
  std::string suite;    // the suite policy's choice, where the two differ
};

class PytorchPolicy : public ::testing::TestWithParam<Row> {};

TEST_P(PytorchPolicy, PicksWhatPyTorchPicks) {
  const Row& r = GetParam();
  const Explanation t = torch_explain(r.case_id, r.device);
  EXPECT_EQ(t.chosen, r.pytorch) << r.mirrors << ": " << r.case_id << " on " << r.device << "\n"
                                 << t.message;
  if (!r.suite.empty()) {
    const Explanation s = suite_explain(r.case_id, r.device);
    EXPECT_EQ(s.chosen, r.suite) << "suite policy: " << r.case_id << " on " << r.device;
    ASSERT_TRUE(s.pytorch.has_value());
    EXPECT_EQ(s.pytorch->backend, r.pytorch);
    EXPECT_TRUE(s.pytorch->departs) << "the suite policy must say it departs";
    EXPECT_FALSE(s.pytorch->why.empty());
  }
}

std::vector<Row> rows() {
  return {
      // 1. Decode on sm90 with cuDNN 9.16: PyTorch puts cuDNN first; the suite's
      // decode_split_kv promotes flash.
      {"check_prefer_cudnn_attention + priority_order (cuda/sdp_utils.cpp)",
       "b1.hq8.l1.s4096.dqk128.f16", "sm90", "cuda.cudnn", "cuda.flash"},
      {"check_prefer_cudnn_attention: cuDNN 9.15.0 is not > 9.15.0", "b1.hq8.l1.s4096.dqk128.f16",
       "sm90:cudnn=9.15.0", "cuda.flash", ""},
      // 2. Square bottom-right causal becomes is_causal=True and reaches cuDNN.
      {"CausalBias._dispatch (torch/nn/attention/bias.py): L == S passes is_causal=True",
       "b1.hq8.l128.s128.dqk64.f16.causal=br", "sm90", "cuda.cudnn", "cuda.flash"},
      {"CausalBias._dispatch: L != S asks can_use_flash_attention on the mask-free call",
       "b1.hq8.l64.s128.dqk64.f16.causal=br", "sm90", "cuda.flash", ""},
      {"CausalBias._dispatch: then can_use_efficient_attention (f32: no flash)",
       "b1.hq8.l64.s128.dqk64.f32.causal=br", "sm90", "cuda.mem_efficient", ""},
      {"CausalBias._dispatch: then SDPA with the materialised [L, S] boolean mask",
       "b1.hq8.l64.s128.dqk64.f64.causal=br", "sm90", "cuda.math", ""},
      // 3. cuDNN's dropout gate is 91100 < version < 91400.
      {"can_use_cudnn_attention: dropout gate excludes 9.11.0", "b1.hq2.l128.s128.dqk64.f16.p0.125",
       "sm90:cudnn=9.16.0", "cuda.cudnn", ""},
      {"can_use_cudnn_attention: dropout with cuDNN 9.12.0 declines",
       "b1.hq2.l128.s128.dqk64.f16.p0.125", "sm90:cudnn=9.12.0", "cuda.flash", ""},
      // 4. cuDNN head dim 256: major 9 minor 0, or major 10.
      {"check_cudnn_tensor_shapes: d=256 on sm90 with cuDNN > 9.22", "b1.hq2.l128.s128.dqk256.f16",
       "sm90:cudnn=9.23.0", "cuda.cudnn", ""},
      {"check_cudnn_tensor_shapes: d=256 not on sm91 (minor != 0)", "b1.hq2.l128.s128.dqk256.f16",
       "sm91:cudnn=9.23.0", "cuda.flash", ""},
      // 5. NestedTensor inputs: the jagged picker (flash, efficient, math, cudnn), cuDNN only
      // with TORCH_CUDNN_SDPA_NESTED_TENSOR_ENABLED (see CudnnNeedsTheNestedSwitch).
      {"_select_sdp_backend (torch/nested/_internal/sdpa.py): flash first, no cuDNN preference",
       "b2.hq8.l256.s256.dqk64.f16.qlen=200_256.kvlen=200_256.packed", "sm90", "cuda.flash", ""},
      {"_can_use_math_sdpa_jagged: no is_causal on NestedTensor inputs (CPU: no fused kernel)",
       "b2.hq2.l16.s16.dqk8.f32.qlen=3_16.kvlen=5_16.packed.causal=tl", "cpu", "", ""},
      {"_can_use_math_sdpa_jagged: the CPU takes the math path",
       "b2.hq2.l16.s16.dqk8.f32.qlen=3_16.kvlen=5_16.packed.lay=bshd", "cpu", "torch.cpu.math", ""},
      {"_can_use_math_sdpa_jagged: values not contiguous after transpose(1, 2) (bhsd rows)",
       "b2.hq2.l16.s16.dqk8.f32.qlen=3_16.kvlen=5_16.packed", "cpu", "", ""},
      // 6. CPU: PyTorch's own kernels' rules, not the suite's.
      {"use_flash_attention_cpp: check_for_dropout", "b2.hq4.l64.s64.dqk64.f32.p0.1", "cpu",
       "torch.cpu.math", "cpu.flash"},
      {"use_flash_attention_cpp: check_head_dim_size_cpp (dv != dqk)",
       "b2.hq4.l64.s64.dqk64.dv32.f32", "cpu", "torch.cpu.math", "cpu.flash"},
      {"use_flash_attention_cpp: f64 is a flash dtype", "b2.hq4.l64.s64.dqk64.f64", "cpu",
       "torch.cpu.flash", "cpu.math"},
      {"select_sdp_backend_cpp: no tiny-problem rule", "b1.hq2.l4.s4.dqk8.f32", "cpu",
       "torch.cpu.flash", "cpu.math"},
      {"use_flash_attention_cpp: no head-dim limit", "b1.hq2.l8.s8.dqk512.f32", "cpu",
       "torch.cpu.flash", ""},
      {"check_nonzero_sequence_lengths_dense: L = 0 goes to math", "b1.hq2.l0.s8.dqk8.f32", "cpu",
       "torch.cpu.math", ""},
      {"check_nonzero_sequence_lengths_dense: B = 0 still flash", "b0.hq2.l8.s8.dqk8.f32", "cpu",
       "torch.cpu.flash", ""},
      {"check_last_dim_stride_equals_1_dense<false>: no singleton exception on the CPU",
       "b1.hq2.l8.s8.dqk1.f32.qst=32_16_2_2_0.kst=16_8_1_1_0.vst=16_8_1_1_0.ost=16_8_1_1_0", "cpu",
       "torch.cpu.math", ""},
      // 7. Training (`bwd`: inputs that require grad). The suite's choice differs (its CUDA
      // kernels have no backward), so only PyTorch's is checked.
      {"check_requires_grad_and_head_dim_gt192_constraints_on_sm86_89_or_120: d in (192, 224]",
       "b1.hq2.l64.s64.dqk200.f16.bwd", "sm86", "cuda.mem_efficient", ""},
      {"the same without grad: flash", "b1.hq2.l64.s64.dqk200.f16", "sm86", "cuda.flash", ""},
      {"the same with grad on sm80: flash", "b1.hq2.l64.s64.dqk200.f16.bwd", "sm80", "cuda.flash",
       ""},
      {"the same rule on sm120", "b1.hq2.l64.s64.dqk200.bf16.bwd", "sm120", "cuda.mem_efficient",
       ""},
      {"the same rule: d > 224 only with dropout", "b1.hq2.l64.s64.dqk256.f16.bwd", "sm89",
       "cuda.flash", ""},
      {"the same rule: d > 224 with dropout", "b1.hq2.l64.s64.dqk256.f16.p0.125.bwd", "sm89",
       "cuda.mem_efficient", ""},
      {"_check_for_seq_len_0_nested: one KV head does not broadcast in training",
       "b2.hq8.hkv1.l256.s256.dqk64.f16.qlen=200_256.kvlen=200_256.packed.lay=bshd.bwd", "sm90",
       "cuda.math", ""},
      {"_check_for_seq_len_0_nested: it does without grad",
       "b2.hq8.hkv1.l256.s256.dqk64.f16.qlen=200_256.kvlen=200_256.packed.lay=bshd", "sm90",
       "cuda.flash", ""},
      {"check_cudnn_d256_bprop_head_dim: the backward takes (160, 160) nowhere",
       "b1.hq2.l256.s256.dqk160.f16.bwd", "sm90:cudnn=9.23.0", "cuda.flash", ""},
      {"check_cudnn_d256_bprop_head_dim: the forward does", "b1.hq2.l256.s256.dqk160.f16",
       "sm90:cudnn=9.23.0", "cuda.cudnn", ""},
      {"check_cudnn_d256_bprop_head_dim: (256, 256) has a backward",
       "b1.hq2.l256.s256.dqk256.f16.bwd", "sm90:cudnn=9.23.0", "cuda.cudnn", ""},
      {"check_requires_grad_and_nested: no mem-efficient training on NestedTensor inputs",
       "b2.hq8.l256.s256.dqk256.f32.qlen=200_256.kvlen=200_256.packed.lay=bshd.bwd", "sm90",
       "cuda.math", ""},
      {"check_requires_grad_and_nested: without grad mem-efficient takes them",
       "b2.hq8.l256.s256.dqk256.f32.qlen=200_256.kvlen=200_256.packed.lay=bshd", "sm90",
       "cuda.mem_efficient", ""},
      {"select_sdp_backend_cpp: the CPU picker has no training rule",
       "b2.hq4.l64.s64.dqk64.f32.bwd", "cpu", "torch.cpu.flash", ""},
  };
}

std::string row_name(const ::testing::TestParamInfo<Row>& info) {
  std::string n = std::to_string(info.index) + "_" + info.param.device;
  for (char& c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return n;
}

INSTANTIATE_TEST_SUITE_P(Mismatches, PytorchPolicy, ::testing::ValuesIn(rows()), row_name);

TEST(PytorchPolicyFrontEnd, WhatThePublicApiCannotExpress) {
  const struct {
    std::string id;
    std::string reason;
  } cases[] = {
      {"b1.hq2.l8.s8.dqk8.f32.win=2_0_tl",
       "sliding windows: PyTorch's SDPA has no window argument"},
      {"b1.hq2.l8.s8.dqk8.f32.softcap=30", "softcap: PyTorch's SDPA has no softcap argument"},
      {"b2.hq2.l8.s8.dqk8.f32.qlen=3_8",
       "per-batch lengths on padded rows: PyTorch expresses them as a mask, another problem"},
      {"b1.hq2.l8.s8.dqk8.f32.attnw", "the attention-weights output: the public op returns only O"},
      {"b1.hq2.l8.s8.dqk8.f32.causal=tl.mask=bool",
       "is_causal=True with an attn_mask: PyTorch raises \"Explicit attn_mask should not be set "
       "when is_causal=True\""},
  };
  for (const auto& c : cases) {
    const Explanation e = torch_explain(c.id, "cpu");
    EXPECT_EQ(e.outcome, Outcome::not_expressible) << c.id;
    EXPECT_NE(std::find(e.front_end.begin(), e.front_end.end(), c.reason), e.front_end.end())
        << c.id;
    EXPECT_EQ(e.pytorch_choice, "not_expressible");
  }
  const Explanation lse = torch_explain("b1.hq2.l8.s8.dqk8.f32.lse", "cpu");
  EXPECT_EQ(lse.chosen, "torch.cpu.flash") << "the LSE request is dropped, not refused";
}

// "Selected, then PyTorch raises": mem-efficient takes dropout with B > 65535 and raises.
TEST(PytorchPolicyRaises, MemEfficientDropoutOverTheBatchLimit) {
  const std::string id = "b65536.hq1.l8.s8.dqk8.f32.p0.25";
  const Explanation t = torch_explain(id, "sm80");
  EXPECT_EQ(t.outcome, Outcome::selected);
  EXPECT_EQ(t.chosen, "cuda.mem_efficient");
  ASSERT_EQ(t.raises.size(), 1u);
  EXPECT_EQ(t.raises[0],
            "dropout with batch 65536 > 65535: the kernel cannot produce valid seed and offset "
            "outputs");
  EXPECT_EQ(t.message, "PyTorch selects cuda.mem_efficient, which then raises: " + t.raises[0]);
  // The suite policy declines it and takes math instead, and says why it departs.
  const Explanation s = suite_explain(id, "sm80");
  EXPECT_EQ(s.chosen, "cuda.math");
  ASSERT_TRUE(s.pytorch.has_value());
  EXPECT_TRUE(s.pytorch->departs);
  EXPECT_NE(std::find(s.pytorch->why.begin(), s.pytorch->why.end(),
                      "PyTorch selects cuda.mem_efficient and then raises: " + t.raises[0]),
            s.pytorch->why.end());
  EXPECT_EQ(dispatcher::select(problem(id), device("sm80"), Policy{}).name(), "cuda.math");
  EXPECT_EQ(dispatcher::select(problem(id), device("sm80"), pytorch_policy()).name(),
            "cuda.mem_efficient");
}

TEST(PytorchPolicyNested, CudnnNeedsTheNestedSwitch) {
  Policy only_cudnn = pytorch_policy();
  only_cudnn.enabled = std::vector<std::string>{"cuda.cudnn"};
  const std::string id = "b2.hq8.l256.s256.dqk64.f16.qlen=200_256.kvlen=200_256.packed";
  const Explanation off = dispatcher::explain(problem(id), device("sm90"), only_cudnn);
  EXPECT_EQ(off.outcome, Outcome::no_viable_backend);
  const Explanation on =
      dispatcher::explain(problem(id), device("sm90:cudnn_nested=1"), only_cudnn);
  EXPECT_EQ(on.chosen, "cuda.cudnn");
  EXPECT_TRUE(on.rules.empty()) << "the jagged picker's order is fixed";
}

TEST(PytorchPolicyMha, FloatMaskTextIsOverwrittenByALaterFailingCheck) {
  // MultiheadAttention.forward sets the float-mask text first; the if/elif chain overwrites it.
  auto pick = [](const std::string& spec) {
    return dispatcher::pick_mha_path(reference::parse_mha_spec_or_throw(spec), device("cpu"),
                                     pytorch_policy());
  };
  EXPECT_EQ(
      pick("e64.h4.b2.l5.s5.batch_first=1.need_weights=0.mask=float.training=1").why_not_fast_path,
      "training is enabled");
  EXPECT_EQ(pick("e64.h4.b2.l5.s5.batch_first=1.need_weights=0.mask=float").why_not_fast_path,
            "floating-point masks are not supported for fast path.");
  const auto slow = pick("e64.h4.b2.l5.s5.batch_first=1.need_weights=0.mask=float");
  EXPECT_EQ(slow.sdpa.chosen, "torch.cpu.flash");
}

TEST(PytorchPolicyMha, NativeCudaPathTakesCudnnWithoutAMask) {
  auto pick = [](const std::string& spec, const std::string& dev) {
    return dispatcher::pick_mha_path(reference::parse_mha_spec_or_throw(spec), device(dev),
                                     pytorch_policy());
  };
  const auto fused = pick("e64.h4.b2.l5.s5.f16.batch_first=1.need_weights=0", "sm90");
  EXPECT_EQ(fused.route, dispatcher::MhaRoute::fast_sdpa);
  EXPECT_EQ(fused.sdpa.chosen, "cuda.cudnn");
  const auto masked = pick("e64.h4.b2.l5.s5.f16.batch_first=1.need_weights=0.kpm=bool", "sm90");
  EXPECT_EQ(masked.route, dispatcher::MhaRoute::fast_materialized);
}

TEST(PytorchPolicySuite, AgreesWhereTheChoiceIsTheSame) {
  const Explanation s = suite_explain("b2.hq4.l128.s128.dqk64.f16.causal=tl", "sm80");
  EXPECT_EQ(s.chosen, "cuda.flash");
  ASSERT_TRUE(s.pytorch.has_value());
  EXPECT_FALSE(s.pytorch->departs);
  EXPECT_TRUE(s.pytorch->why.empty());
  EXPECT_EQ(s.pytorch->choice, "flash");
}

TEST(PytorchPolicySuite, NamesItsOwnRuleWhenItDeparts) {
  const Explanation s = suite_explain("b1.hq8.l1.s4096.dqk128.f16", "sm90");
  ASSERT_TRUE(s.pytorch.has_value());
  EXPECT_EQ(s.pytorch->why.at(0).rfind("rule decode_split_kv is this suite's own", 0), 0u)
      << s.pytorch->why.at(0);
}

TEST(PytorchPolicyModel, BackendsAndNames) {
  std::vector<std::string> names;
  for (const Backend* b : dispatcher::pytorch_model_backends()) names.emplace_back(b->name());
  EXPECT_EQ(names, (std::vector<std::string>{"torch.cpu.flash", "torch.cpu.math", "cuda.flash",
                                             "cuda.mem_efficient", "cuda.math", "cuda.cudnn"}));
  EXPECT_THROW(
      dispatcher::pytorch_cpu_flash().run(LoweredProblem(Problem{}, Buffers{}), device("cpu"), {}),
      std::runtime_error);
  EXPECT_EQ(dispatcher::parse_policy_model("pytorch"), PolicyModel::pytorch);
  EXPECT_THROW(dispatcher::parse_policy_model("torch"), std::invalid_argument);
}

}  // namespace
}  // namespace sdpa
