// The host side of plugin ABI 2 (plugins/host/, include/sdpa_cts/plugin.h): what a plugin's
// supports() and run() receive (the lowered problem, sdpa_cts_params: no tensor pointer in
// supports(), the run's pointers in run(), the mask strides and per-batch lengths as data),
// a reason the host's capability check already gave recorded once, the memory-space rule,
// and what a probe reports of a plugin built from this repository.
#include "plugins/host/plugin_backend.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/case_id.hpp"
#include "core/device.hpp"
#include "kernels/lowered_problem.hpp"
#include "plugins/host/plugin_loader.hpp"
#include "sdpa_cts/plugin.h"

namespace sdpa::plugins {
namespace {

// What the fake plugin's callbacks saw and do.
struct Seen {
  int supports_calls = 0, run_calls = 0;
  sdpa_cts_params params{};                           // the last params passed (a shallow copy)
  std::vector<std::int64_t> seqlens_q, cu_seqlens_q;  // copied while the call lasted
  std::vector<std::string> declines;                  // what supports() declines with
};
Seen g_seen;

int32_t g_mma_block = 0, g_mma_extra_bits = 0;  // what fake_precision declares (ABI 2.2)

int32_t fake_precision(void*, int32_t, sdpa_cts_precision* out) {
  out->accumulate = SDPA_CTS_DTYPE_F64;
  out->p_type = SDPA_CTS_DTYPE_F64;
  out->mma_block = g_mma_block;
  out->mma_extra_bits = g_mma_extra_bits;
  return 0;
}

void record(const sdpa_cts_params* p) {
  g_seen.params = *p;
  g_seen.seqlens_q.assign(p->seqlens_q, p->seqlens_q + p->batch);
  g_seen.cu_seqlens_q.assign(p->cu_seqlens_q, p->cu_seqlens_q + p->batch + 1);
}

void fake_supports(void*, const sdpa_cts_params* p, const sdpa_cts_device*,
                   sdpa_cts_decline_fn decline, void* context) {
  ++g_seen.supports_calls;
  record(p);
  for (const auto& r : g_seen.declines) decline(context, r.c_str());
}

int32_t fake_run(void*, const sdpa_cts_params* p, const sdpa_cts_device*, int32_t, char*, size_t) {
  ++g_seen.run_calls;
  record(p);
  return 0;
}

sdpa_cts_backend fake_backend(uint32_t flags, int32_t memory = SDPA_CTS_MEMORY_HOST,
                              int32_t device_kind = SDPA_CTS_DEVICE_CPU) {
  sdpa_cts_backend b{};
  b.struct_size = sizeof b;
  b.name = "test.fake";
  b.capabilities.struct_size = sizeof b.capabilities;
  b.capabilities.dtypes = (1u << SDPA_CTS_DTYPE_F32) | (1u << SDPA_CTS_DTYPE_F64);
  b.capabilities.device_kind = device_kind;
  b.capabilities.head_dim_multiple = 1;
  b.capabilities.flags = flags;
  b.capabilities.memory = memory;
  b.precision = fake_precision;
  b.supports = fake_supports;
  b.run = fake_run;
  return b;
}

constexpr uint32_t kMost = SDPA_CTS_CAP_BOOL_MASK | SDPA_CTS_CAP_ADDITIVE_MASK | SDPA_CTS_CAP_GQA |
                           SDPA_CTS_CAP_PADDED_SEQLENS | SDPA_CTS_CAP_PACKED_SEQLENS |
                           SDPA_CTS_CAP_LSE | SDPA_CTS_CAP_DIFFERENT_V_DIM |
                           SDPA_CTS_CAP_EMPTY_PROBLEMS;

TEST(PluginAbi2, SupportsGetsTheLoweredProblemWithoutTensorPointers) {
  g_seen = Seen{};
  const sdpa_cts_backend b = fake_backend(kMost);
  const auto backend = make_plugin_backend(b);
  // A mask broadcast over H and L, padded per-batch lengths.
  const Case c = parse_case_id_or_throw(
      "b2.hq4.hkv2.l5.s7.dqk8.f32.mask=bool.mbc=hl.qlen=3_5.kvlen=7_2.lse.seed1.gen=normal");
  const Support s = backend->supports(c.problem, detect_cpu());
  EXPECT_TRUE(s.ok()) << (s.reasons.empty() ? "" : s.reasons.front());
  ASSERT_EQ(g_seen.supports_calls, 1);
  const sdpa_cts_params& p = g_seen.params;
  EXPECT_EQ(p.struct_size, sizeof(sdpa_cts_params));
  EXPECT_EQ(p.q, nullptr);
  EXPECT_EQ(p.k, nullptr);
  EXPECT_EQ(p.v, nullptr);
  EXPECT_EQ(p.o, nullptr);
  EXPECT_EQ(p.mask, nullptr);
  EXPECT_EQ(p.lse, nullptr);
  EXPECT_EQ(p.weights, nullptr);
  EXPECT_EQ(p.group, 2);
  EXPECT_EQ(p.mask_kind, SDPA_CTS_MASK_BOOL);
  // Broadcast over H and L: contiguous over B and S, S counted first ([B, Hq, L, S] order).
  EXPECT_EQ(p.mask_stride[0], 7);
  EXPECT_EQ(p.mask_stride[1], 0);
  EXPECT_EQ(p.mask_stride[2], 0);
  EXPECT_EQ(p.mask_stride[3], 1);
  EXPECT_EQ(p.varlen, 1);
  EXPECT_EQ(p.packed, 0);
  EXPECT_EQ(g_seen.seqlens_q, (std::vector<std::int64_t>{3, 5}));
  EXPECT_EQ(g_seen.cu_seqlens_q, (std::vector<std::int64_t>{0, 3, 8}));
  EXPECT_EQ(p.want_lse, 1);
}

// ABI 2.2: a plugin declares tensor-core accumulation in its precision contract; values out of
// range are an error naming them, never a bound computed from garbage.
TEST(PluginAbi2, PrecisionCarriesTensorCoreAccumulation) {
  const sdpa_cts_backend b = fake_backend(kMost);
  const auto backend = make_plugin_backend(b);
  g_mma_block = 8;
  g_mma_extra_bits = 1;
  const PrecisionContract c = backend->precision(DType::f32);
  EXPECT_EQ(c.mma_block, 8);
  EXPECT_EQ(c.mma_extra_bits, 1);
  g_mma_block = 100;
  try {
    (void)backend->precision(DType::f32);
    ADD_FAILURE() << "an mma block of 100 was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("mma_block 100 / mma_extra_bits 1 out of range"),
              std::string::npos)
        << e.what();
  }
  g_mma_block = g_mma_extra_bits = 0;
  EXPECT_EQ(backend->precision(DType::f32).mma_block, 0);
}

TEST(PluginAbi2, MaskStridesCountASizeZeroDimensionAsOne) {
  g_seen = Seen{};
  const sdpa_cts_backend b = fake_backend(kMost);
  const auto backend = make_plugin_backend(b);
  // L = 0 (an empty problem): the stride of B still steps over one row of S keys per head.
  const Case c = parse_case_id_or_throw("b2.hq2.l0.s3.dqk4.f32.mask=add.seed1.gen=normal");
  (void)backend->supports(c.problem, detect_cpu());
  ASSERT_EQ(g_seen.supports_calls, 1);
  EXPECT_EQ(g_seen.params.mask_stride[3], 1);
  EXPECT_EQ(g_seen.params.mask_stride[2], 3);
  EXPECT_EQ(g_seen.params.mask_stride[1], 3);
  EXPECT_EQ(g_seen.params.mask_stride[0], 6);
}

TEST(PluginAbi2, RunGetsTheRunsPointersInTheParams) {
  g_seen = Seen{};
  const sdpa_cts_backend b = fake_backend(kMost);
  const auto backend = make_plugin_backend(b);
  const Case c = parse_case_id_or_throw("b1.hq2.l3.s4.dqk8.f32.mask=bool.lse.seed1.gen=normal");
  float q[1], k[1], v[1], o[1], lse[1];
  unsigned char mask[1];
  Buffers buf;
  buf.q = q;
  buf.k = k;
  buf.v = v;
  buf.o = o;
  buf.mask = mask;
  buf.lse = lse;
  backend->run(LoweredProblem(c.problem, buf), detect_cpu(), RunOptions{});
  ASSERT_EQ(g_seen.run_calls, 1);
  EXPECT_EQ(g_seen.params.q, q);
  EXPECT_EQ(g_seen.params.k, k);
  EXPECT_EQ(g_seen.params.v, v);
  EXPECT_EQ(g_seen.params.o, o);
  EXPECT_EQ(g_seen.params.mask, mask);
  EXPECT_EQ(g_seen.params.lse, lse);
  EXPECT_EQ(g_seen.params.weights, nullptr);  // not asked for
}

TEST(PluginAbi2, RunRefusesBuffersOutsideTheDeclaredMemorySpace) {
  g_seen = Seen{};
  const sdpa_cts_backend b = fake_backend(kMost);
  const auto backend = make_plugin_backend(b);
  const Case c = parse_case_id_or_throw("b1.hq2.l3.s4.dqk8.f32.seed1.gen=normal");
  Buffers buf;
  buf.memory = MemorySpace::test_device;
  try {
    backend->run(LoweredProblem(c.problem, buf), detect_cpu(), RunOptions{});
    FAIL() << "run() accepted test_device buffers for a host-memory plugin";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("buffers are in test_device memory, the plugin "
                                         "declares host"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(g_seen.run_calls, 0);
}

TEST(PluginAbi2, AReasonTheHostAlreadyGaveIsRecordedOnce) {
  g_seen = Seen{};
  // No dropout in the capabilities, and supports() declines it too, in the host's words,
  // plus a reason of its own and that one again.
  g_seen.declines = {"dropout is not supported", "needs a head dim of at least 16",
                     "needs a head dim of at least 16"};
  const sdpa_cts_backend b = fake_backend(kMost);
  const auto backend = make_plugin_backend(b);
  const Case c = parse_case_id_or_throw("b1.hq2.l3.s4.dqk8.f32.p0.5.seed1.gen=normal");
  const Support s = backend->supports(c.problem, detect_cpu());
  ASSERT_EQ(g_seen.supports_calls, 1);
  EXPECT_EQ(std::count(s.reasons.begin(), s.reasons.end(), "dropout is not supported"), 1);
  // Only the host's reasons are deduplicated: the plugin's own repeat stays, as it said it.
  EXPECT_EQ(std::count(s.reasons.begin(), s.reasons.end(), "needs a head dim of at least 16"), 2);
  EXPECT_EQ(s.reasons.size(), 3u);
}

TEST(PluginAbi2, ACudaMemoryPluginDeclinesAnEmulatedGpu) {
  g_seen = Seen{};
  const sdpa_cts_backend b = fake_backend(kMost, SDPA_CTS_MEMORY_CUDA_DEVICE, SDPA_CTS_DEVICE_CUDA);
  const auto backend = make_plugin_backend(b);
  const Case c = parse_case_id_or_throw("b1.hq2.l3.s4.dqk8.f32.seed1.gen=normal");
  const Support s = backend->supports(c.problem, parse_device_or_throw("sm90:emulate=1"));
  ASSERT_EQ(s.reasons.size(), 1u);
  EXPECT_EQ(s.reasons[0],
            "its run() takes CUDA device memory, and sm90:emulate=1 is emulated on the host: a "
            "plugin needs a real GPU");
  // Not emulated: nothing to decline.
  EXPECT_TRUE(backend->supports(c.problem, parse_device_or_throw("sm90")).ok());
}

int32_t fake_run_backward(void*, const sdpa_cts_params*, const sdpa_cts_device*, int32_t, char*,
                          size_t) {
  return 0;
}

// SDPA_CTS_CAP_BACKWARD_NEEDS_LSE: the host declines a backward case without `lse` for the
// backend, with its own reason; without the bit, both kinds are the plugin's to take.
TEST(PluginAbi2, ABackwardThatReadsTheLseGetsOnlyCasesWithIt) {
  g_seen = Seen{};
  const Case without = parse_case_id_or_throw("b1.hq2.l3.s4.dqk8.f32.bwd.seed1.gen=normal");
  const Case with = parse_case_id_or_throw("b1.hq2.l3.s4.dqk8.f32.lse.bwd.seed1.gen=normal");
  const Device cpu = parse_device_or_throw("cpu");
  sdpa_cts_backend b =
      fake_backend(kMost | SDPA_CTS_CAP_BACKWARD | SDPA_CTS_CAP_BACKWARD_NEEDS_LSE);
  b.run_backward = fake_run_backward;
  const auto needs = make_plugin_backend(b);
  EXPECT_TRUE(needs->capabilities().backward_needs_lse);
  const Support s = needs->supports(without.problem, cpu);
  ASSERT_EQ(s.reasons.size(), 1u);
  EXPECT_NE(s.reasons[0].find("forward's LSE"), std::string::npos) << s.reasons[0];
  EXPECT_TRUE(needs->supports(with.problem, cpu).ok());
  b.capabilities.flags &= ~static_cast<uint32_t>(SDPA_CTS_CAP_BACKWARD_NEEDS_LSE);
  const auto keeps = make_plugin_backend(b);
  EXPECT_FALSE(keeps->capabilities().backward_needs_lse);
  EXPECT_TRUE(keeps->supports(without.problem, cpu).ok());
}

// SDPA_CTS_CAP_BIAS_GRADIENT: d bias comes from run_backward, so the bit needs the backward;
// with it the backend takes `dbias` cases, without it the host declines them.
TEST(PluginAbi2, TheBiasGradientNeedsTheBackward) {
  sdpa_cts_backend b =
      fake_backend(kMost | SDPA_CTS_CAP_ADDITIVE_MASK | SDPA_CTS_CAP_BIAS_GRADIENT);
  EXPECT_NE(check_description(b).find("SDPA_CTS_CAP_BIAS_GRADIENT without SDPA_CTS_CAP_BACKWARD"),
            std::string::npos)
      << check_description(b);
  b.capabilities.flags |= SDPA_CTS_CAP_BACKWARD;
  b.run_backward = fake_run_backward;
  EXPECT_EQ(check_description(b), "");
  const Case c = parse_case_id_or_throw("b1.hq2.l3.s4.dqk8.f32.mask=add.bwd.dbias.seed1");
  const Device cpu = parse_device_or_throw("cpu");
  EXPECT_TRUE(make_plugin_backend(b)->supports(c.problem, cpu).ok());
  b.capabilities.flags &= ~static_cast<uint32_t>(SDPA_CTS_CAP_BIAS_GRADIENT);
  const Support s = make_plugin_backend(b)->supports(c.problem, cpu);
  ASSERT_EQ(s.reasons.size(), 1u);
  EXPECT_NE(s.reasons[0].find("(dbias)"), std::string::npos) << s.reasons[0];
}

// ABI 2.3: supports() sees whether the case asks for the backward and d bias, as run() does, so
// a plugin declines a backward it cannot compute before its forward runs.
TEST(PluginAbi2, SupportsSeesTheBackwardAndBiasGradientFlags) {
  g_seen = Seen{};
  sdpa_cts_backend b = fake_backend(kMost | SDPA_CTS_CAP_BACKWARD | SDPA_CTS_CAP_BIAS_GRADIENT |
                                    SDPA_CTS_CAP_DETERMINISTIC);
  b.run_backward = fake_run_backward;
  const auto backend = make_plugin_backend(b);
  const Device cpu = detect_cpu();
  EXPECT_TRUE(
      backend->supports(parse_case_id_or_throw("b1.hq1.l4.s8.dqk8.f32.seed1").problem, cpu).ok());
  EXPECT_EQ(g_seen.params.backward, 0);
  EXPECT_EQ(g_seen.params.bias_grad, 0);
  EXPECT_TRUE(
      backend->supports(parse_case_id_or_throw("b1.hq1.l4.s8.dqk8.f32.lse.bwd.seed1").problem, cpu)
          .ok());
  EXPECT_EQ(g_seen.params.backward, 1);
  EXPECT_EQ(g_seen.params.bias_grad, 0);
  EXPECT_TRUE(
      backend
          ->supports(
              parse_case_id_or_throw("b1.hq1.l4.s8.dqk8.f32.mask=add.lse.bwd.dbias.seed1").problem,
              cpu)
          .ok());
  EXPECT_EQ(g_seen.params.backward, 1);
  EXPECT_EQ(g_seen.params.bias_grad, 1);
}

// The probe of the minimal plugin (its path comes from tests/plugins/CMakeLists.txt): ABI 2.3,
// and a description listing only traits the ABI declares.
TEST(PluginAbi2, ProbeReportsOnlyWhatTheAbiDeclares) {
  const ProbedPlugin p = probe_plugin(SDPA_CTS_MINIMAL_PLUGIN);
  EXPECT_EQ(p.abi, "2.3");
  ASSERT_EQ(p.backends.size(), 1u);
  const std::string& d = p.backends[0].description;
  EXPECT_NE(d.find("\"traits\":{\"split_kv\":false,\"pytorch\":\"math\",\"fused_mha\":false}"),
            std::string::npos)
      << d;
  EXPECT_EQ(d.find("isa_targets"), std::string::npos) << d;
}

}  // namespace
}  // namespace sdpa::plugins
