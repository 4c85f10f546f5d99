// Conformance of every CPU backend in builtin_backends(), with one test body run over
// backend x SIMD target x thread count (1 and 2): each case goes through check_case
// (guarded buffers, reference comparison with the backend's precision contract).
// Backends that declare determinism / batch invariance are also checked bitwise across
// thread counts, repeated runs and batch compositions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "conformance/engine/check_case.hpp"
#include "conformance/engine/data_gen.hpp"
#include "conformance/judge/requested_outputs.hpp"
#include "core/case_id.hpp"
#include "core/guarded_buffer.hpp"
#include "kernels/cpu/sdpa_rows.hpp"
#include "kernels/lowered_problem.hpp"
#include "kernels/registry.hpp"
#include "reference/sdpa_reference.hpp"
#include "tests/kernels/target_run.hpp"

namespace sdpa {

using namespace sdpa::conformance;
namespace {

const Device& cpu() {
  static const Device d = detect_cpu();
  return d;
}

std::vector<const Backend*> cpu_backends() {
  std::vector<const Backend*> v;
  for (const Backend* b : builtin_backends())
    if (b->capabilities().device == DeviceKind::cpu) v.push_back(b);
  return v;
}

struct Combo {
  const Backend* backend;
  std::string target;
  int threads;
};

void PrintTo(const Combo& c, std::ostream* os) {
  *os << c.backend->name() << " [" << c.target << ", " << c.threads << " threads]";
}

std::vector<Combo> combos() {
  std::vector<Combo> v;
  for (const Backend* b : cpu_backends())
    for (const std::string& t : test_support::isa_target_names())
      for (int threads : {1, 2}) v.push_back({b, t, threads});
  return v;
}

std::string combo_name(const testing::TestParamInfo<Combo>& info) {
  std::string n(info.param.backend->name());
  for (char& ch : n)
    if (ch == '.') ch = '_';
  return n + "_" + info.param.target + "_t" + std::to_string(info.param.threads);
}

class CpuBackend : public testing::TestWithParam<Combo> {
 protected:
  const Backend& backend() const { return *GetParam().backend; }
  RunOptions options() const { return {GetParam().threads}; }
  Device device() const { return test_support::target_device(GetParam().target); }

  // Whether the backend's declared capabilities take the problem, once the judge has taken out
  // the outputs it does not return (conformance/judge/requested_outputs.hpp).
  bool declared(const Problem& p) const {
    Support caps;
    check_capabilities(backend().capabilities(),
                       without_unreturned_outputs(backend().capabilities(), p).judged, cpu(), caps);
    return caps.ok();
  }
  // Runs a case; PASS is required unless the backend's declared capabilities exclude the
  // problem (then NOT_SUPPORTED is the only acceptable answer). Returns true on PASS.
  bool check(const std::string& id) {
    const Case c = parse_case_id_or_throw(id);
    const CaseOutcome out = check_case(backend(), c, device(), options());
    const bool accepts = declared(c.problem);
    if (out.status == Status::not_supported) {
      EXPECT_FALSE(accepts) << backend().name() << " declined " << id
                            << " beyond its declared capabilities: " << out.message;
      return false;
    }
    EXPECT_TRUE(accepts) << backend().name() << " accepted " << id
                         << " although its capabilities exclude it";
    EXPECT_EQ(out.status, Status::pass)
        << backend().name() << " [" << GetParam().target << ", " << GetParam().threads
        << " threads] " << id << ": " << status_name(out.status) << " " << out.message;
    return out.status == Status::pass;
  }
  // Runs a list; at least one case must be supported and pass.
  void check_all(const std::vector<std::string>& ids) {
    int passed = 0, declined = 0;
    for (const auto& id : ids) {
      declined += !declared(parse_case_id_or_throw(id).problem);
      passed += check(id);
    }
    // A list must exercise the backend unless its declared capabilities exclude all of it.
    EXPECT_TRUE(passed > 0 || declined == static_cast<int>(ids.size()))
        << backend().name() << " passed none of the cases it supports";
  }
};

// ------------------------------------------------------------------ case lists

TEST_P(CpuBackend, MaskKinds) {
  const std::string base = "b2.hq4.hkv2.l33.s47.dqk40.dv24.f32.lse.seed3";
  std::vector<std::string> ids;
  for (const char* m : {"",
                        ".mask=bool",
                        ".mask=add",
                        ".mask=bool.mbc=bh",
                        ".mask=add.mbc=l",
                        ".mask=add.mbc=bhl",
                        ".mask=bool.mbc=s",
                        ".causal=tl",
                        ".causal=br",
                        ".causal=tl.mask=bool",
                        ".causal=br.mask=add",
                        ".win=4_0_br",
                        ".win=0_0_tl",
                        ".win=1_1_tl",
                        ".win=-1_3_br",
                        ".win=46_0_br",
                        ".win=47_-1_tl",
                        ".win=5_-1_br",
                        ".win=0_0_br.causal=br",
                        ".win=8_2_tl.mask=add",
                        ".softcap=5",
                        ".softcap=2.mask=add.causal=br",
                        ".scale=-0.3",
                        ".scale=2.5.mask=bool",
                        ".gen=int",
                        ".gen=sparse",
                        ".gen=uniform"}) {
    ids.push_back(base + m);
  }
  check_all(ids);
}

TEST_P(CpuBackend, CausalShapes) {
  std::vector<std::string> ids;
  for (const char* ls : {"l33.s47", "l47.s33", "l40.s40", "l1.s60", "l60.s1", "l130.s97"})
    for (const char* m : {"causal=tl", "causal=br", "win=3_0_br", "win=2_5_tl"})
      ids.push_back(std::string("b1.hq2.") + ls + ".dqk32.f32.lse.seed5." + m);
  check_all(ids);
}

TEST_P(CpuBackend, VarlenAndFullyMaskedRows) {
  check_all({
      "b2.hq4.hkv2.l33.s47.dqk32.f32.lse.kvlen=47_0.seed1",
      "b2.hq4.hkv2.l33.s47.dqk32.f32.lse.kvlen=13_47.qlen=33_5.seed2",
      "b3.hq2.l33.s47.dqk32.f32.lse.qlen=0_33_7.kvlen=5_0_47.causal=br.seed3",
      "b3.hq2.l33.s47.dqk32.f32.lse.qlen=33_5_17.kvlen=47_9_0.packed.seed4",
      "b3.hq4.hkv1.l70.s300.dqk32.dv16.f32.lse.qlen=70_0_9.kvlen=300_280_1.packed.causal=br.seed5",
      "b2.hq2.l17.s20.dqk16.f32.lse.win=0_0_tl.kvlen=20_3.seed6",  // window misses keys
      "b2.hq2.l17.s20.dqk16.f32.lse.mask=bool.mbc=s.seed7",        // whole rows masked
      "b2.hq2.l17.s20.dqk16.f32.lse.mask=add.qlen=17_3.kvlen=11_20.seed8",
      "b2.hq2.l5.s0.dqk16.f32.lse.seed9",
      "b1.hq2.l9.s300.dqk16.f16.lse.kvlen=257.seed10",
      "b2.hq2.l9.s600.dqk16.bf16.lse.kvlen=513_256.causal=br.seed11",
  });
}

TEST_P(CpuBackend, EmptyProblems) {
  check_all({
      "b0.hq2.l5.s7.dqk8.f32.lse",
      "b1.hq0.hkv0.l5.s7.dqk8.f32.lse",
      "b1.hq2.l0.s7.dqk8.f32.lse",
      "b1.hq2.l5.s0.dqk8.f32.lse",
      "b1.hq2.l5.s7.dqk8.dv0.f32.lse",
      "b1.hq2.l5.s7.dqk0.dv8.f32.lse",
      "b1.hq2.l5.s7.dqk8.f32.lse",
  });
}

TEST_P(CpuBackend, Dropout) {
  check_all({
      "b2.hq4.hkv2.l33.s47.dqk32.f32.p0.2.dseed7.lse.seed1",
      "b2.hq2.l33.s47.dqk32.f32.p0.5.dseed3.doff11.causal=br.lse.seed2",
      "b1.hq2.l20.s300.dqk16.bf16.p0.9.dseed5.mask=add.lse.seed3",
      "b1.hq2.l1.s600.dqk16.f16.p0.3.dseed9.lse.seed4",
      "b2.hq2.l9.s31.dqk16.f32.p0.3.dseed9.qlen=9_4.kvlen=31_12.packed.lse.seed5",
  });
}

TEST_P(CpuBackend, AttentionWeights) {
  check_all({
      "b2.hq4.hkv2.l33.s47.dqk32.f32.attnw.lse.seed1",
      "b2.hq2.l33.s47.dqk32.f32.attnw.mask=bool.causal=br.p0.3.dseed2.seed2",
      "b2.hq2.l9.s31.dqk16.bf16.attnw.kvlen=31_0.qlen=9_4.seed3",
      "b2.hq2.l9.s31.dqk16.f16.attnw.qlen=9_4.kvlen=31_12.packed.seed4",
      "b1.hq2.l9.s31.dqk16.f64.attnw.mask=add.softcap=3.seed5",
  });
}

TEST_P(CpuBackend, Dtypes) {
  std::vector<std::string> ids;
  for (const char* t : {"f64", "f32", "f16", "bf16"}) {
    for (const char* m : {"", ".causal=br.mask=add", ".mask=bool.p0.25.dseed4", ".softcap=4"}) {
      ids.push_back(std::string("b2.hq4.hkv2.l33.s47.dqk40.dv24.") + t + ".lse.seed9" + m);
    }
    ids.push_back(std::string("b1.hq2.l1.s400.dqk64.") + t + ".lse.seed4");
  }
  check_all(ids);
}

TEST_P(CpuBackend, HeadDims) {
  std::vector<std::string> ids;
  for (int d : {1, 3, 8, 15, 17, 33, 63, 64, 65, 127, 128, 129, 200, 255, 256}) {
    const std::string ds = std::to_string(d);
    // Dqk = d (Dv small) on the GEMM path, Dv = d (Dqk small) on the decode path.
    ids.push_back("b1.hq2.hkv1.l50.s37.dqk" + ds + ".dv" + std::to_string(d % 7 + 1) +
                  (d % 2 ? ".bf16" : ".f32") + ".lse.causal=br.seed" + ds);
    ids.push_back("b1.hq2.l1.s270.dqk" + std::to_string(d % 40 + 1) + ".dv" + ds +
                  (d % 2 ? ".f16" : ".f32") + ".lse.seed" + ds);
  }
  check_all(ids);
}

TEST_P(CpuBackend, TileEdgeLengths) {
  std::vector<std::string> ids;
  // Tiles here: GEMM micro-tiles (mr 4/6/12, nr 16/32), row blocks of 48, chunks of 256
  // keys aligned to 64, decode rows <= 8; the other backends' tiles are covered alike.
  int k = 0;
  for (int n : {1,  2,  15,  16,  17,  31,  32,  33,  47,  48,  49, 63,
                64, 65, 113, 127, 128, 129, 203, 255, 256, 257, 513}) {
    const std::string s = std::to_string(n), t = ++k % 2 ? ".f32" : ".bf16";
    ids.push_back("b1.hq2.hkv1.l" + s + ".s" + s + ".dqk16" + t + (k % 3 ? ".causal=br" : "") +
                  ".lse.seed" + s);
    ids.push_back("b1.hq1.l1.s" + s + ".dqk24.f16.lse.seed" + s);
    ids.push_back("b1.hq1.l" + s + ".s" + std::to_string(n % 50 + 1) + ".dqk8" + t + ".lse.seed" +
                  s);
  }
  check_all(ids);
}

TEST_P(CpuBackend, DecodeAndSingleHead) {
  check_all({
      "b1.hq1.l1.s4097.dqk128.bf16.lse.seed1",
      "b1.hq1.l1.s1100.dqk64.f32.lse.causal=br.seed2",
      "b1.hq8.hkv2.l1.s1500.dqk64.f16.lse.seed3",
      "b2.hq8.hkv1.l1.s700.dqk64.bf16.lse.kvlen=700_333.seed4",
      "b1.hq16.hkv2.l2.s600.dqk64.f32.lse.causal=br.seed5",
      "b1.hq1.l203.s513.dqk64.f32.lse.causal=br.seed6",
      "b1.hq1.l513.s113.dqk32.bf16.lse.seed7",
  });
}

TEST_P(CpuBackend, StridedLayouts) {
  std::vector<std::string> ids;
  for (const char* t : {"f32", "bf16", "f16"}) {
    const std::string b = std::string("b2.hq4.hkv2.l33.s47.dqk40.dv24.") + t + ".lse.seed2";
    for (const char* l :
         {".lay=bshd", ".gap=3", ".lay=bshd.gap=5.off=1", ".off=1", ".off=1.causal=br.mask=add"})
      ids.push_back(b + l);
    // Decode shapes and the GEMM path with a layout.
    ids.push_back(std::string("b1.hq4.hkv2.l1.s300.dqk24.") + t + ".lse.lay=bshd.off=1.seed3");
    ids.push_back(std::string("b1.hq4.hkv2.l60.s300.dqk24.") + t + ".lse.lay=bshd.gap=1.seed4");
    // Explicit strides: K and V share one head (zero head stride), V and O permuted
    // (head dim not contiguous), base offsets.
    ids.push_back(std::string("b2.hq2.hkv2.l5.s7.dqk4.dv3.") + t +
                  ".qst=40_20_4_1_0.kst=28_0_4_1_0.vst=21_0_1_7_1.ost=30_1_6_2_3.lse.seed5");
    // K with the head dim strided (dim-major keys), decode and GEMM shapes.
    ids.push_back(std::string("b1.hq4.hkv2.l1.s300.dqk8.dv8.") + t +
                  ".qst=32_8_8_1_0.kst=4800_2400_1_300_0.vst=4800_2400_8_1_1.ost=32_8_8_1_0.lse"
                  ".seed6");
    ids.push_back(std::string("b1.hq2.hkv2.l60.s300.dqk8.dv8.") + t +
                  ".qst=960_480_8_1_1.kst=4800_2400_1_300_0.vst=4800_2400_1_300_2."
                  "ost=960_1_16_2_0.lse.seed7");
  }
  check_all(ids);
}

// The backward (docs/SEMANTICS.md, "Backward"): dQ, dK, dV judged with the gradients' bound,
// for the backends that declare one (the others must decline every case).
TEST_P(CpuBackend, Backward) {
  check_all({
      "b2.hq4.hkv2.l33.s47.dqk40.dv24.f32.causal=br.lse.bwd.seed1",
      "b2.hq4.hkv1.l47.s33.dqk32.bf16.causal=tl.mask=add.mbc=h.lse.bwd.seed2",
      "b1.hq2.l40.s40.dqk24.f16.win=3_1_br.softcap=5.lse.bwd.seed3",
      "b1.hq2.l40.s300.dqk16.f32.mask=bool.p0.3.dseed5.doff3.lse.bwd.seed4",
      "b3.hq2.l33.s47.dqk32.f32.qlen=33_5_0.kvlen=47_0_9.packed.lse.bwd.seed5",
      "b3.hq2.l33.s47.dqk32.bf16.qlen=33_5_0.kvlen=47_0_9.lse.bwd.seed6",
      "b2.hq2.l17.s20.dqk16.f32.mask=bool.mbc=s.lse.bwd.seed7",  // whole rows masked
      "b1.hq2.l9.s31.dqk16.f64.mask=add.softcap=3.attnw.lse.bwd.seed8",
      "b2.hq4.hkv2.l33.s47.dqk40.f32.lay=bshd.gap=2.off=3.lse.bwd.seed9",
      "b1.hq2.hkv2.l60.s300.dqk8.dv8.f32.qst=960_480_8_1_1.kst=4800_2400_1_300_0."
      "vst=4800_2400_1_300_2.ost=960_1_16_2_0.lse.bwd.seed10",
      "b1.hq2.l0.s7.dqk8.f32.lse.bwd",
      "b1.hq2.l5.s0.dqk8.f32.lse.bwd",
      // Without the LSE: a backend whose backward reads it declines (backward_needs_lse).
      "b2.hq4.hkv2.l33.s47.dqk40.dv24.f32.causal=br.p0.2.dseed3.bwd.seed11",
      "b1.hq2.l40.s40.dqk24.bf16.mask=add.softcap=5.bwd.seed12",
      // d bias, over each broadcast dimension (a backend without it declines: bias_gradient)
      "b2.hq4.hkv2.l33.s47.dqk16.f32.mask=add.mbc=h.lse.bwd.dbias.seed13",
      "b2.hq4.l17.s29.dqk16.bf16.mask=add.mbc=bs.causal=br.lse.bwd.dbias.seed14",
      "b2.hq2.l17.s29.dqk16.f64.mask=add.p0.2.dseed3.bwd.dbias.seed15",
  });
}

// cpu.flash recomputes P from its forward's LSE: a backward case without `lse` is declined,
// with the reason; cpu.math materialises P and takes it.
TEST(CpuBackendBackward, FlashNeedsTheLseMathDoesNot) {
  const Problem p = parse_case_id_or_throw("b1.hq2.l40.s40.dqk24.f32.bwd.seed1").problem;
  const Support flash = find_backend_or_throw("cpu.flash").supports(p, cpu());
  ASSERT_EQ(flash.reasons.size(), 1u);
  EXPECT_NE(flash.reasons[0].find("recomputes P from the forward's LSE"), std::string::npos)
      << flash.reasons[0];
  EXPECT_TRUE(find_backend_or_throw("cpu.math").supports(p, cpu()).ok());
  Problem with_lse = p;
  with_lse.want_lse = true;
  EXPECT_TRUE(find_backend_or_throw("cpu.flash").supports(with_lse, cpu()).ok());
}

INSTANTIATE_TEST_SUITE_P(All, CpuBackend, testing::ValuesIn(combos()), combo_name);

// ------------------------------------------------------------------ bitwise properties

// Output bytes (O and LSE) of one run of a case on a backend, in guarded buffers.
struct RunResult {
  std::vector<unsigned char> o, lse;
};

RunResult run_bytes(const Backend& b, const Case& c, InputBuffers& in,
                    const test_support::TargetRun& opt) {
  const Problem& p = c.problem;
  GuardedBuffer o("o", dtype_size(p.dtype), o_view(p), p.o.base_offset);
  std::vector<float> lse(static_cast<std::size_t>(p.batch * p.heads_q * p.len_q));
  Buffers buf{in.q.data(), in.k.data(), in.v.data(), in.mask ? in.mask->data() : nullptr,
              o.data(),    lse.data(),  nullptr};
  Problem pl = p;
  pl.want_lse = true;
  test_support::run_with(b, pl, buf, opt);
  RunResult r;
  const auto* ob = static_cast<const unsigned char*>(o.data());
  r.o.assign(ob, ob + view_extent(o_view(p)) * static_cast<std::int64_t>(dtype_size(p.dtype)));
  const auto* lb = reinterpret_cast<const unsigned char*>(lse.data());
  r.lse.assign(lb, lb + lse.size() * sizeof(float));
  return r;
}

const std::vector<std::string>& bitwise_cases() {
  static const std::vector<std::string> ids = {
      "b1.hq1.l1.s4097.dqk128.bf16.seed1",
      "b1.hq8.hkv2.l1.s1500.dqk64.f16.causal=br.seed2",
      "b2.hq4.hkv2.l130.s700.dqk40.dv24.f32.causal=br.mask=add.seed3",
      "b1.hq2.l200.s300.dqk64.bf16.p0.2.dseed5.seed4",
      "b3.hq2.l33.s600.dqk32.f32.qlen=33_5_17.kvlen=600_9_300.packed.seed5",
  };
  return ids;
}

class CpuBitwise : public testing::TestWithParam<const Backend*> {};

TEST_P(CpuBitwise, SameBitsAtAnyThreadCountAndRun) {
  const Backend& b = *GetParam();
  if (!b.capabilities().deterministic) GTEST_SKIP() << b.name() << " does not claim determinism";
  int compared = 0;
  for (const std::string& target : test_support::isa_target_names()) {
    for (const auto& id : bitwise_cases()) {
      const Case c = parse_case_id_or_throw(id);
      if (!b.supports(c.problem, cpu()).ok()) continue;
      InputBuffers in = make_inputs(c);
      const RunResult one = run_bytes(b, c, in, {1, target});
      const RunResult two = run_bytes(b, c, in, {2, target});
      const RunResult three = run_bytes(b, c, in, {3, target});
      const RunResult again = run_bytes(b, c, in, {2, target});
      EXPECT_TRUE(one.o == two.o && one.o == three.o && one.o == again.o)
          << b.name() << " [" << target << "] " << id << ": O differs across thread counts";
      EXPECT_TRUE(one.lse == two.lse && one.lse == three.lse && one.lse == again.lse)
          << b.name() << " [" << target << "] " << id << ": LSE differs across thread counts";
      ++compared;
    }
  }
  EXPECT_GT(compared, 0);
}

// A deterministic backend's backward too: forward then backward at 1, 2 and 3 threads and
// again, on every SIMD target, every gradient byte compared (dK and dV sum over a GQA group's
// query heads; the tasks outnumber the threads, and a GQA group's heads share one task).
TEST_P(CpuBitwise, BackwardSameBitsAtAnyThreadCountAndRun) {
  const Backend& b = *GetParam();
  if (!b.capabilities().backward) GTEST_SKIP() << b.name() << " has no backward pass";
  ASSERT_TRUE(b.capabilities().deterministic) << b.name() << ": a backward must be deterministic";
  int compared = 0;
  for (const std::string& target : test_support::isa_target_names())
    for (const char* id :
         {"b2.hq8.hkv2.l130.s200.dqk40.dv24.f32.causal=br.mask=add.lse.bwd.seed3",
          "b1.hq4.hkv1.l64.s300.dqk64.bf16.p0.2.dseed5.lse.bwd.seed4",
          "b3.hq4.hkv4.l70.s130.dqk48.bf16.lse.bwd.seed6",
          "b3.hq2.l33.s600.dqk32.f32.qlen=33_5_17.kvlen=600_9_300.packed.lse.bwd.seed5"}) {
      const Case c = parse_case_id_or_throw(id);
      const Problem& p = c.problem;
      const Device device = test_support::target_device(target);
      ASSERT_TRUE(b.supports(p, device).ok()) << id;
      InputBuffers in = make_inputs(c);
      std::vector<std::vector<unsigned char>> runs;
      for (int threads : {1, 2, 3, 2}) {
        OutputBuffers out = make_outputs(p);
        GradientBuffers g = make_gradient_outputs(p);
        const Buffers fwd{in.q.data(),  in.k.data(),
                          in.v.data(),  in.mask ? in.mask->data() : nullptr,
                          out.o.data(), static_cast<float*>(out.lse.data()),
                          nullptr};
        b.run(LoweredProblem(p, fwd), device, RunOptions{threads});
        b.run_backward(
            LoweredProblem(p, fwd, {in.d_out->data(), g.dq.data(), g.dk.data(), g.dv.data()}),
            device, RunOptions{threads});
        std::vector<unsigned char> bytes;
        for (const GuardedBuffer* t : {&g.dq, &g.dk, &g.dv})
          bytes.insert(bytes.end(), t->region(), t->region() + t->region_size());
        runs.push_back(std::move(bytes));
      }
      for (std::size_t r = 1; r < runs.size(); ++r)
        EXPECT_TRUE(runs[r] == runs[0]) << b.name() << " [" << target << "] " << id << ": run " << r
                                        << " (threads 2, 3, 2) differs from 1 thread";
      ++compared;
    }
  EXPECT_GT(compared, 0);
}

// A batch element computed alone equals the same element computed in a batch of three: the
// single problem reads the batch's buffers through the same strides, from element b.
TEST_P(CpuBitwise, BatchInvariant) {
  const Backend& b = *GetParam();
  if (!b.capabilities().batch_invariant) {
    GTEST_SKIP() << b.name() << " does not claim batch invariance";
  }
  const std::vector<std::string> ids = {
      // A plain batch, which every CPU backend takes.
      "b3.hq2.l17.s70.dqk16.f32.seed7",
      "b3.hq4.hkv2.l1.s1500.dqk64.bf16.kvlen=1500_700_1100.seed1",
      // Long enough that chunk lengths are not clamped to the minimum: a split rule that
      // looked at the batch (S, B) instead of S_b would show here.
      "b3.hq2.hkv1.l1.s5000.dqk64.bf16.kvlen=5000_4100_2000.seed5",
      "b3.hq2.l40.s5000.dqk32.f32.causal=br.kvlen=4500_5000_300.seed6",
      "b3.hq4.hkv2.l130.s500.dqk40.dv24.f32.causal=br.qlen=130_7_64.kvlen=500_300_129.seed2",
      "b3.hq2.l70.s300.dqk32.f16.mask=add.p0.2.dseed3.seed3",
      "b3.hq2.l33.s600.dqk32.f32.qlen=33_5_17.kvlen=600_9_300.packed.seed4",
  };
  int compared = 0;
  for (const std::string& target : test_support::isa_target_names()) {
    for (const auto& id : ids) {
      const Case c = parse_case_id_or_throw(id);
      const Problem& p = c.problem;
      if (!b.supports(p, cpu()).ok()) continue;
      InputBuffers in = make_inputs(c);
      const std::size_t esz = dtype_size(p.dtype);
      const std::int64_t H = p.heads_q, L = p.len_q;
      // The whole batch.
      GuardedBuffer o("o", esz, o_view(p), p.o.base_offset);
      std::vector<float> lse(static_cast<std::size_t>(p.batch * H * L));
      Problem pl = p;
      pl.want_lse = true;
      test_support::run_with(b, pl,
                             {in.q.data(), in.k.data(), in.v.data(),
                              in.mask ? in.mask->data() : nullptr, o.data(), lse.data(), nullptr},
                             {2, target});
      const auto cuq = cu_seqlens_q(p), cuk = cu_seqlens_kv(p);
      for (std::int64_t e = 0; e < p.batch; ++e) {
        // Batch element e alone, through the same strides.
        Problem one = pl;
        one.batch = 1;
        if (!p.seqlens_q.empty()) one.seqlens_q = {p.seqlens_q[e]};
        if (!p.seqlens_kv.empty()) one.seqlens_kv = {p.seqlens_kv[e]};
        // The keep-mask counter of (e, h, i, j) is offset + ((e*H + h)*L + i)*S + j.
        one.dropout_offset = p.dropout_offset + static_cast<std::uint64_t>(e * H * L * p.len_kv);
        const std::int64_t qo = p.packed ? cuq[e] * p.q.stride[2] : e * p.q.stride[0];
        const std::int64_t ko = p.packed ? cuk[e] * p.k.stride[2] : e * p.k.stride[0];
        const std::int64_t vo = p.packed ? cuk[e] * p.v.stride[2] : e * p.v.stride[0];
        const std::int64_t oo = p.packed ? cuq[e] * p.o.stride[2] : e * p.o.stride[0];
        std::vector<unsigned char> o1(
            o.view().shape[0] ? static_cast<std::size_t>(view_extent(o_view(p)) * esz) : 0);
        std::vector<float> lse1(static_cast<std::size_t>(H * L));
        const void* mask =
            in.mask ? static_cast<const unsigned char*>(in.mask->data()) +
                          e * mask_view(p).stride[0] * (p.mask == MaskKind::boolean ? 1 : esz)
                    : nullptr;
        test_support::run_with(b, one,
                               {static_cast<const unsigned char*>(in.q.data()) + qo * esz,
                                static_cast<const unsigned char*>(in.k.data()) + ko * esz,
                                static_cast<const unsigned char*>(in.v.data()) + vo * esz, mask,
                                o1.data() + oo * esz, lse1.data(), nullptr},
                               {1, target});
        // Compare every O element and LSE entry of element e.
        const std::int64_t rows = p.packed ? seqlen_q(p, e) : L;
        for (std::int64_t h = 0; h < H; ++h) {
          for (std::int64_t i = 0; i < rows; ++i) {
            const std::int64_t r = p.packed ? cuq[e] + i : i;
            for (std::int64_t d = 0; d < p.head_dim_v; ++d) {
              const std::int64_t off = (p.packed ? 0 : e * p.o.stride[0]) + h * p.o.stride[1] +
                                       r * p.o.stride[2] + d * p.o.stride[3];
              ASSERT_EQ(0, std::memcmp(static_cast<const unsigned char*>(o.data()) + off * esz,
                                       o1.data() + off * esz, esz))
                  << b.name() << " [" << target << "] " << id << ": o[" << e << "," << h << "," << i
                  << "," << d << "] differs between the batch and the element alone";
            }
            ASSERT_EQ(0, std::memcmp(&lse[(e * H + h) * L + i], &lse1[h * L + i], 4))
                << b.name() << " [" << target << "] " << id << ": lse differs";
          }
        }
      }
      ++compared;
    }
  }
  EXPECT_GT(compared, 0);
}

std::string backend_name(const testing::TestParamInfo<const Backend*>& info) {
  std::string n(info.param->name());
  for (char& ch : n)
    if (ch == '.') ch = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(All, CpuBitwise, testing::ValuesIn(cpu_backends()), backend_name);

// ------------------------------------------------------------------ non-finite inputs

// NaN in one query row poisons exactly that row; NaN stored beyond a batch element's valid
// keys changes nothing (bitwise).
TEST(CpuBackendNonFinite, NanRowAndNanBeyondLength) {
  for (const Backend* b : cpu_backends()) {
    const Case c = parse_case_id_or_throw("b2.hq2.l9.s300.dqk16.f32.kvlen=300_200.lse.seed3");
    const Problem& p = c.problem;
    if (!b->supports(p, cpu()).ok()) continue;
    for (const std::string target : {"scalar", ""}) {
      // Same data with NaN in K and V at keys >= S_1 = 200 of batch element 1.
      InputBuffers in = make_inputs(c);
      const RunResult clean = run_bytes(*b, c, in, {2, target});
      for (std::int64_t h = 0; h < p.heads_kv; ++h)
        for (std::int64_t j = 200; j < 300; ++j) {
          for (std::int64_t e = 0; e < p.head_dim_qk; ++e)
            static_cast<float*>(
                in.k.data())[p.k.stride[0] + h * p.k.stride[1] + j * p.k.stride[2] + e] = NAN;
          for (std::int64_t e = 0; e < p.head_dim_v; ++e)
            static_cast<float*>(
                in.v.data())[p.v.stride[0] + h * p.v.stride[1] + j * p.v.stride[2] + e] = NAN;
        }
      // And NaN in query row (b=0, h=1, i=4).
      static_cast<float*>(in.q.data())[p.q.stride[1] + 4 * p.q.stride[2] + 3] = NAN;
      GuardedBuffer o("o", 4, o_view(p));
      std::vector<float> lse(static_cast<std::size_t>(p.batch * p.heads_q * p.len_q));
      test_support::run_with(
          *b, p, {in.q.data(), in.k.data(), in.v.data(), nullptr, o.data(), lse.data(), nullptr},
          {2, target});
      const auto* got = static_cast<const float*>(o.data());
      const auto* want = reinterpret_cast<const float*>(clean.o.data());
      for (std::int64_t bb = 0; bb < 2; ++bb)
        for (std::int64_t h = 0; h < 2; ++h)
          for (std::int64_t i = 0; i < 9; ++i) {
            const bool poisoned = bb == 0 && h == 1 && i == 4;
            const std::int64_t row = (bb * 2 + h) * 9 + i;
            EXPECT_EQ(std::isnan(lse[row]), poisoned) << b->name() << " lse row " << row;
            for (std::int64_t d = 0; d < 16; ++d) {
              const std::int64_t off =
                  bb * p.o.stride[0] + h * p.o.stride[1] + i * p.o.stride[2] + d;
              if (poisoned) {
                EXPECT_TRUE(std::isnan(got[off])) << b->name() << " o" << off;
              } else {
                EXPECT_EQ(0, std::memcmp(&got[off], &want[off], 4))
                    << b->name() << " [" << target << "] o" << off
                    << " changed by NaN beyond the valid keys or in another row";
              }
            }
          }
    }
  }
}

// A NaN query row with a boolean mask: O and LSE NaN, and (for backends with the weights
// output) P NaN exactly at the keys the row attends and 0 at masked keys, as the reference.
TEST(CpuBackendNonFinite, NanRowKeepsMaskedWeightsZero) {
  const Case c = parse_case_id_or_throw("b1.hq2.l9.s40.dqk16.f32.mask=bool.attnw.lse.seed3");
  const Problem& p = c.problem;
  for (const Backend* b : cpu_backends()) {
    Problem pb = p;
    pb.want_weights = b->capabilities().weights;
    if (!b->supports(pb, cpu()).ok()) continue;
    InputBuffers in = make_inputs(c);
    static_cast<float*>(in.q.data())[p.q.stride[1] + 4 * p.q.stride[2]] = NAN;  // (0, 1, 4, 0)
    const reference::Result ref = reference::run_sdpa(p, in.pointers());
    GuardedBuffer o("o", 4, o_view(p));
    std::vector<float> lse(static_cast<std::size_t>(p.heads_q * p.len_q));
    std::vector<float> w(static_cast<std::size_t>(p.heads_q * p.len_q * p.len_kv));
    test_support::run_with(*b, pb,
                           {in.q.data(), in.k.data(), in.v.data(), in.mask->data(), o.data(),
                            lse.data(), pb.want_weights ? w.data() : nullptr},
                           {2, ""});
    for (std::size_t x = 0; x < lse.size(); ++x)
      EXPECT_EQ(std::isnan(lse[x]), std::isnan(ref.lse[x])) << b->name() << " lse " << x;
    for (std::size_t x = 0; x < ref.o.size(); ++x)
      EXPECT_EQ(std::isnan(static_cast<const float*>(o.data())[x]), std::isnan(ref.o[x]))
          << b->name() << " o " << x;
    if (!pb.want_weights) continue;
    int nan_weights = 0;
    for (std::size_t x = 0; x < w.size(); ++x) {
      nan_weights += std::isnan(w[x]);
      EXPECT_EQ(std::isnan(w[x]), std::isnan(ref.weights[x])) << b->name() << " weights " << x;
      if (!std::isnan(ref.weights[x]) && ref.weights[x] == 0) {
        EXPECT_EQ(w[x], 0.0f);
      }
    }
    EXPECT_GT(nan_weights, 0);
  }
}

// cpu.mem_efficient's split rule (docs/KERNELS.md): a function of (S_b, Dqk, Dv) only, with
// enough chunks that a single long decode row keeps every core busy.
TEST(MemEfficientSplitRule, ChunkLengths) {
  using cpu::mem_efficient_chunk_length;
  EXPECT_EQ(mem_efficient_chunk_length(8192, 128, 128), 512);  // 16 chunks
  EXPECT_EQ(mem_efficient_chunk_length(4097, 128, 128), 320);  // 13 chunks
  EXPECT_EQ(mem_efficient_chunk_length(2048, 128, 128), 256);  // 8 chunks
  EXPECT_EQ(mem_efficient_chunk_length(100, 128, 128), 256);   // one chunk
  EXPECT_EQ(mem_efficient_chunk_length(0, 128, 128), 256);
  EXPECT_EQ(mem_efficient_chunk_length(1 << 20, 128, 128), 512);  // capped by L2
  EXPECT_EQ(mem_efficient_chunk_length(1 << 20, 64, 64), 1024);
  EXPECT_EQ(mem_efficient_chunk_length(1 << 20, 256, 256), 256);
  for (std::int64_t s : {1, 255, 256, 257, 4097, 65537, 1 << 22}) {
    const std::int64_t c = mem_efficient_chunk_length(s, 128, 128);
    EXPECT_EQ(c % 64, 0);
    EXPECT_GE(c, 256);
    if (s >= 4096) {
      EXPECT_GE((s + c - 1) / c, 8) << "S = " << s << " gives too few chunks";
    }
  }
}

TEST(CpuBackendOptions, UnknownOrMissingSimdTargetIsAnError) {
  const Case c = parse_case_id_or_throw("b1.hq1.l3.s5.dqk8.f32");
  for (const Backend* b : cpu_backends()) {
    InputBuffers in = make_inputs(c);
    EXPECT_THROW(run_bytes(*b, c, in, {1, "avx9"}), std::invalid_argument) << b->name();
  }
}

}  // namespace
}  // namespace sdpa
