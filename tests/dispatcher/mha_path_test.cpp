// The nn.MultiheadAttention path picker: every fast-path condition with PyTorch's text,
// the routes and the SDPA backend they reach, the need_weights default (the MHA spec grammar
// itself: tests/reference/mha_spec_test.cpp).
#include "dispatcher/mha_path.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "test_backends.hpp"

namespace sdpa {
namespace {

using dispatcher::MhaCall;
using dispatcher::MhaPath;
using dispatcher::MhaRoute;

MhaPath pick(const std::string& spec, const std::string& dev) {
  return dispatcher::pick_mha_path(reference::parse_mha_spec_or_throw(spec), testing::device(dev),
                                   dispatcher::Policy{}, testing::test_registry());
}

// The fast-path base: every condition holds.
const std::string kFast = "e64.h4.b2.l5.s5.f16.batch_first=1.need_weights=0";

struct FastPathCase {
  std::string spec;    // kFast plus one change
  std::string reason;  // the first failing condition
};

TEST(MhaPath, TheBaseTakesTheFastPath) {
  const MhaPath p = pick(kFast, "sm80");
  EXPECT_TRUE(p.fast_path);
  EXPECT_EQ(p.why_not_fast_path, "");
  for (const auto& c : p.checks) EXPECT_TRUE(c.passed) << c.condition;
  EXPECT_EQ(p.checks.size(), 18u);
}

TEST(MhaPath, EachFastPathConditionGivesItsReason) {
  const std::vector<FastPathCase> cases = {
      {kFast + ".mask=float", "floating-point masks are not supported for fast path."},
      {kFast + ".kpm=float", "floating-point masks are not supported for fast path."},
      {kFast + ".fastpath=0", "torch.backends.mha.get_fastpath_enabled() was not True"},
      {"e64.h4.b1.l5.s5.f16.batch_first=1.need_weights=0.batched=0",
       "input not batched; expected query.dim() of 3 but got 2"},
      {kFast + ".self=0",
       "non-self attention was used (query, key, and value are not the same Tensor)"},
      {kFast + ".wdtype=f32", "dtypes of query (f16) and self.in_proj_bias (f32) don't match"},
      {kFast + ".wdtype=f32.bias=0",
       "dtypes of query (f16) and self.in_proj_weight (f32) don't match"},
      {"e64.h4.b2.l5.s5.f16.batch_first=1.need_weights=0.kdim=32.self=0",
       "non-self attention was used (query, key, and value are not the same Tensor)"},
      {kFast + ".training=1", "training is enabled"},
      {"e64.h1.b2.l5.s5.f16.batch_first=1.need_weights=0", "self.num_heads is not even"},
      {"e64.h4.b2.l5.s5.f16.need_weights=0", "batch_first was not True"},
      {kFast + ".add_bias_kv=1", "self.bias_k was not None"},
      {kFast + ".add_zero_attn=1", "add_zero_attn was enabled"},
      {kFast + ".nested=1.kpm=bool",
       "supplying both src_key_padding_mask and src_mask at the same time is not supported with "
       "NestedTensor input"},
      {kFast + ".autocast=1", "autocast is enabled"},
      {kFast + ".grad=1",
       "grad is enabled and at least one of query or the input/output projection weights or "
       "biases requires_grad"},
      {kFast + ".bias=0",
       "in_proj_bias is None (bias=False): the fast path needs it, and PyTorch falls back without "
       "setting why_not_fast_path"},
  };
  for (const auto& c : cases) {
    const MhaPath p = pick(c.spec, "sm80");
    EXPECT_FALSE(p.fast_path) << c.spec;
    EXPECT_EQ(p.why_not_fast_path, c.reason) << c.spec;
  }
}

TEST(MhaPath, InProjWeightNoneAndQkvSameEmbedDim) {
  // A kdim != e module has no in_proj_weight: that condition fails before _qkv_same_embed_dim.
  MhaCall c = reference::parse_mha_spec_or_throw(kFast);
  c.mha.kdim = 32;
  c.mha.use_separate_proj_weight = true;
  c.self_attention = false;
  const MhaPath p = dispatcher::pick_mha_path(c, testing::device("sm80"), dispatcher::Policy{},
                                              testing::test_registry());
  std::vector<std::string> failed;
  for (const auto& k : p.checks) {
    if (!k.passed) failed.push_back(k.reason);
  }
  EXPECT_EQ(failed,
            (std::vector<std::string>{
                "non-self attention was used (query, key, and value are not the same Tensor)",
                "in_proj_weight was None", "_qkv_same_embed_dim was not True"}));
}

TEST(MhaPath, BiasKvFailsTwoConditions) {
  const MhaPath p = pick(kFast + ".add_bias_kv=1", "sm80");
  std::vector<std::string> failed;
  for (const auto& k : p.checks) {
    if (!k.passed) failed.push_back(k.reason);
  }
  EXPECT_EQ(failed,
            (std::vector<std::string>{"self.bias_k was not None", "self.bias_v was not None"}));
}

TEST(MhaPath, BoolMasksKeepTheFastPath) {
  EXPECT_TRUE(pick(kFast + ".mask=bool.kpm=bool", "sm80").fast_path);
}

TEST(MhaPath, NeedWeightsDefaultsToTrueAndMaterializes) {
  const MhaPath p = pick("e64.h4.b2.l5.s5.f16", "sm80");
  EXPECT_EQ(p.route, MhaRoute::slow_materialized);
  EXPECT_EQ(p.why_not_fast_path, "batch_first was not True");
  EXPECT_FALSE(p.reaches_sdpa);
  EXPECT_EQ(p.route_reason,
            "need_weights=1 by default (the call did not pass need_weights=False): "
            "multi_head_attention_forward computes softmax(QK^T) itself to return the weights; no "
            "SDPA kernel runs (pass need_weights=False to reach SDPA)");
  EXPECT_TRUE(p.sdpa_problem.want_weights);
  EXPECT_EQ(p.sdpa.chosen, "cuda.math") << "only the math path returns weights";
  const MhaPath given = pick("e64.h4.b2.l5.s5.f16.need_weights=1", "sm80");
  EXPECT_EQ(given.route_reason.substr(0, 14), "need_weights=1");
  EXPECT_EQ(given.route_reason.find("by default"), std::string::npos);
}

TEST(MhaPath, FastPathOnAGpuReachesFlashOrMemEfficient) {
  MhaPath p = pick(kFast, "sm80");
  EXPECT_EQ(p.route, MhaRoute::fast_sdpa);
  EXPECT_TRUE(p.reaches_sdpa);
  EXPECT_EQ(p.sdpa.chosen, "cuda.flash");
  EXPECT_EQ(p.route_reason,
            "need_weights=0, head dim a multiple of 8, no mask and the SDPA picker chose "
            "cuda.flash");
  EXPECT_EQ(p.sdpa_problem.dtype, DType::f16);
  EXPECT_EQ(p.sdpa_problem.q.stride[2], 64) << "[B, L, E] viewed as [B, H, L, D]";
  // native_multi_head_attention_cuda hands SDPA only calls without a mask.
  p = pick(kFast + ".mask=bool", "sm80");
  EXPECT_EQ(p.route, MhaRoute::fast_materialized);
  EXPECT_FALSE(p.reaches_sdpa);
  EXPECT_EQ(p.route_reason,
            "the call has a mask: native multi-head attention on CUDA hands SDPA only calls "
            "without one, and uses bmm and a masked softmax");
  p = pick("e64.h4.b2.l5.s5.f32.batch_first=1.need_weights=0", "sm80");
  EXPECT_EQ(p.sdpa.chosen, "cuda.mem_efficient");
}

TEST(MhaPath, FastPathMaterializes) {
  MhaPath p = pick("e64.h4.b2.l5.s5.f16.batch_first=1", "sm80");
  EXPECT_TRUE(p.fast_path);
  EXPECT_EQ(p.route, MhaRoute::fast_materialized);
  EXPECT_EQ(p.route_reason,
            "need_weights=1 by default (the call did not pass need_weights=False): native "
            "multi-head attention materialises the weights (bmm and masked softmax), no SDPA "
            "kernel");
  p = pick("e24.h4.b2.l5.s5.f16.batch_first=1.need_weights=0", "sm80");
  EXPECT_EQ(p.route, MhaRoute::fast_materialized);
  EXPECT_EQ(p.route_reason,
            "head dim 6 is not a multiple of 8: native multi-head attention uses bmm and a masked "
            "softmax");
  p = pick("e48.h4.b2.l5.s5.f16.batch_first=1.need_weights=0", "sm80");
  EXPECT_EQ(p.route, MhaRoute::fast_materialized) << "head dim 12";
  p = pick("e64.h4.b2.l5.s5.f64.batch_first=1.need_weights=0", "sm80");
  EXPECT_EQ(p.route, MhaRoute::fast_materialized);
  EXPECT_EQ(p.route_reason,
            "the SDPA picker chose cuda.math, not flash, mem-efficient or cuDNN: native "
            "multi-head attention uses bmm and a masked softmax");
  EXPECT_FALSE(p.reaches_sdpa);
  // Newer PyTorch hands the native path's SDPA call to cuDNN too (the PyTorch policy); the
  // suite policy takes the next backend with a kernel.
  dispatcher::Policy torch;
  torch.model = dispatcher::PolicyModel::pytorch;
  p = dispatcher::pick_mha_path(reference::parse_mha_spec_or_throw(kFast), testing::device("sm90"),
                                torch, testing::test_registry());
  EXPECT_EQ(p.sdpa.chosen, "cuda.cudnn");
  EXPECT_EQ(p.route, MhaRoute::fast_sdpa);
  p = pick(kFast, "sm90");
  EXPECT_EQ(p.sdpa.chosen, "cuda.flash");
  EXPECT_EQ(p.route, MhaRoute::fast_sdpa);
  p = pick(kFast, "cpu-avx2");
  EXPECT_EQ(p.route, MhaRoute::fast_materialized);
  EXPECT_EQ(p.route_reason,
            "on a CPU, native multi-head attention computes bmm and a masked softmax itself");
  dispatcher::Policy none;
  none.enabled = std::vector<std::string>{"cuda.math"};
  p = dispatcher::pick_mha_path(reference::parse_mha_spec_or_throw(kFast), testing::device("sm80"),
                                none, testing::test_registry());
  EXPECT_EQ(p.route, MhaRoute::fast_materialized);
  none.enabled = std::vector<std::string>{"cuda.cudnn"};
  p = dispatcher::pick_mha_path(
      reference::parse_mha_spec_or_throw("e64.h4.b2.l5.s5.f32.batch_first=1.need_weights=0"),
      testing::device("sm80"), none, testing::test_registry());
  EXPECT_EQ(p.route_reason,
            "the SDPA picker found no backend for it: native multi-head attention uses bmm and a "
            "masked softmax");
}

TEST(MhaPath, SlowPathCallsSdpa) {
  MhaPath p = pick("e48.h3.b2.l5.s5.f16.need_weights=0", "sm80");
  EXPECT_EQ(p.why_not_fast_path, "self.num_heads is not even");
  EXPECT_EQ(p.route, MhaRoute::slow_sdpa);
  EXPECT_TRUE(p.reaches_sdpa);
  EXPECT_EQ(p.route_reason, "need_weights=0: F.scaled_dot_product_attention");
  EXPECT_EQ(p.sdpa.chosen, "cuda.flash");
  EXPECT_EQ(p.sdpa_problem.head_dim_qk, 16);
  EXPECT_FALSE(p.sdpa_problem.want_weights);
}

TEST(MhaPath, SlowPathBackends) {
  EXPECT_EQ(pick("e64.h4.b2.l5.s5.f16.need_weights=0", "sm80").sdpa.chosen, "cuda.flash");
  EXPECT_EQ(pick("e64.h4.b2.l5.s5.f16.need_weights=0.mask=float", "sm80").sdpa.chosen,
            "cuda.mem_efficient");
  EXPECT_EQ(pick("e64.h4.b2.l64.s64.f32.need_weights=0", "cpu-avx2").sdpa.chosen, "cpu.flash");
  EXPECT_EQ(pick("e64.h4.b2.l5.s5.f32.need_weights=0", "cpu-avx2").sdpa.chosen, "cpu.math")
      << "tiny_prefers_math";
  EXPECT_EQ(pick("e64.h4.b2.l5.s5.f32.need_weights=0.training=1.p=0.1", "cpu-avx2").sdpa.chosen,
            "cpu.math")
      << "dropout only in training";
  EXPECT_EQ(pick("e64.h4.b2.l5.s5.f32.need_weights=0.p=0.1", "cpu-avx2").sdpa_problem.dropout_p,
            0.0);
  EXPECT_EQ(pick("e64.h4.b2.l5.s5.f32.need_weights=0.add_bias_kv=1.add_zero_attn=1", "cpu-avx2")
                .sdpa_problem.len_kv,
            7);
}

TEST(MhaPath, IsCausalHintBecomesSdpaCausal) {
  MhaPath p = pick("e64.h4.b2.l5.s5.f16.need_weights=0.mask=bool.is_causal=1", "sm80");
  EXPECT_EQ(p.sdpa_problem.causal, Causal::top_left);
  EXPECT_EQ(p.sdpa_problem.mask, MaskKind::none);
  EXPECT_EQ(p.sdpa.chosen, "cuda.flash");
  EXPECT_EQ(
      p.route_reason,
      "need_weights=0: F.scaled_dot_product_attention with is_causal=True (the is_causal hint "
      "replaces attn_mask when there is no key_padding_mask)");
  // With a key_padding_mask the hint is dropped and the merged mask kept.
  p = pick("e64.h4.b2.l5.s5.f16.need_weights=0.mask=bool.kpm=bool.is_causal=1", "sm80");
  EXPECT_EQ(p.sdpa_problem.causal, Causal::none);
  EXPECT_EQ(p.sdpa_problem.mask, MaskKind::additive);
  EXPECT_EQ(p.sdpa.chosen, "cuda.mem_efficient");
}

TEST(MhaPath, NestedOutsideTheFastPathIsAnError) {
  const MhaPath p = pick("e64.h4.b2.l5.s5.f16.need_weights=0.nested=1", "sm80");
  EXPECT_EQ(p.route, MhaRoute::error);
  EXPECT_EQ(p.route_reason,
            "MultiheadAttention does not support NestedTensor outside of its fast path. The fast "
            "path was not hit because batch_first was not True");
}

TEST(MhaPath, RouteNames) {
  EXPECT_STREQ(dispatcher::route_name(MhaRoute::fast_sdpa), "fast_sdpa");
  EXPECT_STREQ(dispatcher::route_name(MhaRoute::fast_materialized), "fast_materialized");
  EXPECT_STREQ(dispatcher::route_name(MhaRoute::slow_sdpa), "slow_sdpa");
  EXPECT_STREQ(dispatcher::route_name(MhaRoute::slow_materialized), "slow_materialized");
  EXPECT_STREQ(dispatcher::route_name(MhaRoute::error), "error");
}

TEST(MhaSpec, PickRejectsAnInconsistentCall) {
  MhaCall c = reference::parse_mha_spec_or_throw("e64.h4");
  c.mha.need_weights = false;  // but not marked as given
  try {
    dispatcher::pick_mha_path(c, testing::device("sm80"), dispatcher::Policy{},
                              testing::test_registry());
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "invalid MHA call: need_weights: false although not given (PyTorch's default is "
                 "true)");
  }
}

RC_GTEST_PROP(MhaSpec, FormatThenParseIsTheIdentity, ()) {
  MhaCall c;
  c.mha.num_heads = *rc::gen::element<std::int64_t>(1, 2, 4);
  c.mha.embed_dim = c.mha.num_heads * *rc::gen::inRange<std::int64_t>(1, 9);
  c.mha.batch = *rc::gen::inRange<std::int64_t>(1, 4);
  c.mha.len_q = *rc::gen::inRange<std::int64_t>(1, 6);
  c.mha.len_kv = *rc::gen::inRange<std::int64_t>(1, 6);
  c.dtype = *rc::gen::element(DType::f32, DType::f16, DType::bf16, DType::f64);
  c.param_dtype = *rc::gen::element(c.dtype, DType::f32);
  c.mha.bias = *rc::gen::arbitrary<bool>();
  c.mha.add_bias_kv = *rc::gen::arbitrary<bool>();
  c.mha.add_zero_attn = *rc::gen::arbitrary<bool>();
  using reference::MhaMaskKind;
  c.mha.key_padding_mask =
      *rc::gen::element(MhaMaskKind::none, MhaMaskKind::boolean, MhaMaskKind::floating);
  c.mha.attn_mask =
      *rc::gen::element(MhaMaskKind::none, MhaMaskKind::boolean, MhaMaskKind::floating);
  if (c.mha.attn_mask != MhaMaskKind::none) c.mha.attn_mask_rank = *rc::gen::element(2, 3);
  c.need_weights_explicit = *rc::gen::arbitrary<bool>();
  c.mha.need_weights = c.need_weights_explicit ? *rc::gen::arbitrary<bool>() : true;
  c.mha.average_attn_weights = *rc::gen::arbitrary<bool>();
  c.mha.is_causal = c.mha.attn_mask != MhaMaskKind::none && *rc::gen::arbitrary<bool>();
  c.mha.dropout_p = *rc::gen::element(0.0, 0.1, 0.5);
  c.mha.batch_first = *rc::gen::arbitrary<bool>();
  c.training = *rc::gen::arbitrary<bool>();
  c.self_attention = c.mha.len_q == c.mha.len_kv && *rc::gen::arbitrary<bool>();
  c.fastpath_enabled = *rc::gen::arbitrary<bool>();
  c.autocast = *rc::gen::arbitrary<bool>();
  c.requires_grad = *rc::gen::arbitrary<bool>();
  c.nested = *rc::gen::arbitrary<bool>();
  const std::string spec = reference::format_mha_spec(c);
  const MhaCall back = reference::parse_mha_spec_or_throw(spec);
  RC_ASSERT(reference::format_mha_spec(back) == spec);
  RC_ASSERT(back.mha.need_weights == c.mha.need_weights);
  RC_ASSERT(back.need_weights_explicit == c.need_weights_explicit);
  RC_ASSERT(back.self_attention == c.self_attention);
  RC_ASSERT(back.dtype == c.dtype);
  RC_ASSERT(back.param_dtype == c.param_dtype);
  RC_ASSERT(back.mha.dropout_p == c.mha.dropout_p);
  RC_ASSERT(back.nested == c.nested);
  // The picker answers for every such call on every simulated device.
  for (const auto& dev : simulated_device_names()) {
    const MhaPath p = dispatcher::pick_mha_path(back, testing::device(dev), dispatcher::Policy{},
                                                testing::test_registry());
    RC_ASSERT(p.fast_path == p.why_not_fast_path.empty());
    RC_ASSERT(p.route != MhaRoute::fast_sdpa || p.fast_path);
    RC_ASSERT((p.route == MhaRoute::slow_materialized) ==
              (!p.fast_path && !c.nested && c.mha.need_weights));
  }
}

}  // namespace
}  // namespace sdpa
