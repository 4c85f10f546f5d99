// The backward half of the judge (conformance/judge/gradient_judge.hpp): a backend whose
// gradients are the reference's, rounded once, passes every backward feature; one whose
// gradients are moved, left unwritten, NaN, or that writes its inputs, throws, or has no
// backward, gets the verdict that names it.
#include "conformance/judge/gradient_judge.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "conformance/engine/data_gen.hpp"
#include "conformance/judge/gradient_tolerance.hpp"
#include "conformance/judge/judge.hpp"
#include "conformance/judge/requested_outputs.hpp"
#include "core/device.hpp"
#include "kernels/lowered_problem.hpp"
#include "reference/sdpa_backward.hpp"
#include "tests/conformance/fake_backends.hpp"

namespace sdpa {

using namespace sdpa::conformance;
namespace {

enum class GradFault {
  none,
  moved,      // the planted element of the planted gradient (d bias: its element 0) moved by delta
  unwritten,  // the planted gradient's last element unwritten (d bias: every element)
  nan_dv,
  writes_input,   // one byte of the planted input flipped: q, k, v, mask, d_out, o or lse
  writes_margin,  // one element of the planted gradient written just before its element 0
  throws,
  thread_dependent,  // the planted element of the planted gradient one f32 ulp off, unless at 1
                     // thread (d bias: its element 0)
  rounds_to_f32,     // every dQ and dK element rounded to f32 (in an f64 problem)
  dbias_first_head_only,  // d bias of an H-broadcast mask from head 0's dS alone
};

// Which gradient element a fault touches, and by how much a `moved` one moves.
struct Plant {
  std::int64_t b = 0, h = 0, row = 0, col = 0;  // element (b, h, row, col) of the tensor
  double delta = 0;
  std::string tensor = "dk";  // dq, dk, dv, dbias; an input for writes_input
};

// The forward of testing::FakeBackend (the reference, rounded) and the reference's gradients
// rounded once to the dtype, with the contract of an f32-accumulating kernel.
class GradFake : public Backend {
 public:
  GradFake(GradFault fault, Plant plant = {}, bool deterministic = false)
      : fault_(fault), plant_(plant) {
    caps_ = forward_.capabilities();
    caps_.backward = true;
    caps_.bias_gradient = true;
    caps_.deterministic = deterministic;
  }
  std::string_view name() const override { return "grad-fake"; }
  const Capabilities& capabilities() const override { return caps_; }
  // The forward's contract; the backward keeps P and dS in the accumulator (f64 for f64).
  PrecisionContract precision(DType t) const override {
    PrecisionContract c = forward_.precision(t);
    c.ds_type = c.accumulate;
    return c;
  }
  Support supports(const LoweredProblem& lowered, const Device& d) const override {
    const Problem& p = lowered.source();
    Support s;
    check_capabilities(caps_, p, d, s);
    return s;
  }
  void run(const LoweredProblem& lowered, const Device& d, const RunOptions& o) const override {
    const Problem& p = lowered.source();
    const Buffers b = lowered.buffers();
    forward_.run(LoweredProblem(p, b), d, o);
  }
  void run_backward(const LoweredProblem& lowered, const Device&,
                    const RunOptions& options) const override {
    const Problem& p = lowered.source();
    const Buffers f = lowered.buffers();
    const GradientPointers g = lowered.gradients();
    if (fault_ == GradFault::throws) throw std::runtime_error("fake backward failure");
    const std::int64_t B = p.batch, H = p.heads_q, Hkv = p.heads_kv, L = p.len_q, S = p.len_kv;
    const std::int64_t Dq = p.head_dim_qk, Dv = p.head_dim_v;
    const auto cuq = cu_seqlens_q(p), cuk = cu_seqlens_kv(p);
    std::vector<double> d_out(static_cast<std::size_t>(B * H * L * Dv), 0.0);
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t i = 0; i < seqlen_q(p, b); ++i)
          for (std::int64_t d = 0; d < Dv; ++d)
            d_out[static_cast<std::size_t>(((b * H + h) * L + i) * Dv + d)] =
                load_as_double(p.dtype, g.d_out,
                               element_offset(p.o, p.packed, b, h, p.packed ? cuq[b] + i : i, d));
    const reference::Gradients r = reference::run_sdpa_backward(p, {f.q, f.k, f.v, f.mask}, d_out);
    auto write = [&](void* dst, const TensorLayout& t, const std::vector<double>& src,
                     std::int64_t heads, std::int64_t rows, std::int64_t cols, bool q_side,
                     const std::string& name) {
      for (std::int64_t b = 0; b < B; ++b) {
        const std::int64_t valid = q_side ? seqlen_q(p, b) : seqlen_kv(p, b);
        const std::int64_t first = p.packed ? (q_side ? cuq[b] : cuk[b]) : 0;
        for (std::int64_t h = 0; h < heads; ++h)
          for (std::int64_t i = 0; i < (p.packed ? valid : rows); ++i)
            for (std::int64_t e = 0; e < cols; ++e) {
              const bool last = b == B - 1 && h == heads - 1 &&
                                i == (p.packed ? valid : rows) - 1 && e == cols - 1;
              if (fault_ == GradFault::unwritten && name == plant_.tensor && last) continue;
              double x = src[static_cast<std::size_t>(((b * heads + h) * rows + i) * cols + e)];
              const bool planted =
                  b == plant_.b && h == plant_.h && i == plant_.row && e == plant_.col;
              if (fault_ == GradFault::moved && planted && name == plant_.tensor) x += plant_.delta;
              if (fault_ == GradFault::nan_dv && planted && std::string(name) == "dv") x = NAN;
              // dS rounded to f32 before the products: dQ and dK carry f32's relative error.
              if (fault_ == GradFault::rounds_to_f32 && std::string(name) != "dv")
                x = static_cast<float>(x);
              // A sum whose order follows the thread count: one unit in the last place of
              // the planted dK element moves with it (within the bound).
              if (fault_ == GradFault::thread_dependent && planted && options.threads != 1 &&
                  name == plant_.tensor)
                x = std::nextafter(static_cast<float>(x), INFINITY);
              store_from_double(p.dtype, dst, element_offset(t, p.packed, b, h, first + i, e), x);
            }
      }
    };
    write(g.dq, p.q, r.dq, H, L, Dq, true, "dq");
    write(g.dk, p.k, r.dk, Hkv, S, Dq, false, "dk");
    write(g.dv, p.v, r.dv, Hkv, S, Dv, false, "dv");
    const bool dbias_planted = plant_.tensor == "dbias";
    if (p.bias_grad && !(fault_ == GradFault::unwritten && dbias_planted)) {
      const StridedView mv = mask_view(p);
      std::vector<double> db = r.dbias;
      if (fault_ == GradFault::dbias_first_head_only && mv.stride[1] == 0) {
        std::fill(db.begin(), db.end(), 0.0);
        for (std::int64_t b = 0; b < B; ++b)
          for (std::int64_t i = 0; i < L; ++i)
            for (std::int64_t j = 0; j < S; ++j)
              db[static_cast<std::size_t>(b * mv.stride[0] + i * mv.stride[2] +
                                          j * mv.stride[3])] +=
                  r.ds[static_cast<std::size_t>((b * H * L + i) * S + j)];
      }
      if (fault_ == GradFault::moved && dbias_planted) db[0] += plant_.delta;
      if (fault_ == GradFault::thread_dependent && dbias_planted && options.threads != 1)
        db[0] = std::nextafter(static_cast<float>(db[0]), INFINITY);
      for (std::size_t x = 0; x < db.size(); ++x)
        store_from_double(p.dtype, g.dbias, static_cast<std::int64_t>(x), db[x]);
    }
    if (fault_ == GradFault::writes_margin) {
      const std::string& t = plant_.tensor;
      void* dst = t == "dq" ? g.dq : t == "dv" ? g.dv : t == "dbias" ? g.dbias : g.dk;
      store_from_double(p.dtype, dst, -1, 0.0);
    }
    // Once: the judge runs the backward twice, and a second flip would undo the first.
    if (fault_ == GradFault::writes_input && options.threads != 1) {
      const std::string& t = plant_.tensor;
      const void* in = t == "k"       ? f.k
                       : t == "v"     ? f.v
                       : t == "mask"  ? f.mask
                       : t == "d_out" ? g.d_out
                       : t == "o"     ? f.o
                       : t == "lse"   ? static_cast<const void*>(f.lse)
                                      : f.q;
      static_cast<unsigned char*>(const_cast<void*>(in))[0] ^= 0x40;
    }
  }

 private:
  testing::FakeBackend forward_{"fake", testing::Fault::none};
  GradFault fault_;
  Plant plant_;
  Capabilities caps_;
};

CaseOutcome judge_case(const Backend& backend, const char* id) {
  const Case c = parse_case_id_or_throw(id);
  InputBuffers in = make_inputs(c);
  return judge(backend, c.problem, in, detect_cpu(), RunOptions{});
}

constexpr const char* kCase =
    "b2.hq4.hkv2.l13.s29.dqk16.dv8.f32.causal=br.lse.bwd.seed3.gen=normal";

TEST(GradientJudge, ExactGradientsPassOnEveryBackwardFeature) {
  const GradFake backend(GradFault::none);
  for (const char* id :
       {kCase, "b1.hq2.l9.s17.dqk8.dv4.f64.lse.bwd.seed1.gen=normal",
        "b2.hq2.l24.s40.dqk32.bf16.causal=br.mask=add.softcap=10.p0.2.dseed1.lse.bwd.seed57.gen="
        "normal",
        "b3.hq2.l33.s41.dqk32.f16.qlen=33_1_0.kvlen=0_41_17.packed.lse.bwd.seed53.gen=normal",
        "b3.hq2.l33.s41.dqk32.f32.qlen=33_1_0.kvlen=0_41_17.lse.bwd.seed53.gen=normal",
        "b2.hq4.hkv2.l33.s47.dqk40.dv24.f32.lay=bshd.gap=2.off=3.lse.bwd.seed58.gen=normal",
        "b2.hq2.l24.s40.dqk32.f32.mask=bool.lse.bwd.seed60.gen=neg_inf_blocks",
        "b2.hq4.hkv2.l33.s47.dqk32.f32.causal=br.lse.bwd.seed61.gen=nan_q"}) {
    const CaseOutcome o = judge_case(backend, id);
    EXPECT_EQ(o.status, Status::pass) << id << ": " << o.message;
    for (const char* t : {"forward", "dq", "dk", "dv"}) {
      ASSERT_TRUE(o.tensor_ratios.count(t)) << id << ": no ratio for " << t;
      EXPECT_LE(o.tensor_ratios.at(t), 1.0) << id << " " << t;
    }
  }
}

// The bound of dK element (0, 0, 5, 3) of kCase, as the judge computes it.
double dk_bound() {
  const Case c = parse_case_id_or_throw(kCase);
  const Problem& p = c.problem;
  InputBuffers in = make_inputs(c);
  const reference::Result ref = reference::run_sdpa(p, in.pointers());
  const std::vector<double> d_out = logical_d_out(p, *in.d_out);
  const reference::Gradients g = reference::run_sdpa_backward(p, in.pointers(), d_out);
  const GradFake backend(GradFault::none);
  const GradientTolerances t =
      gradient_tolerances(p, in.pointers(), d_out, ref, g, backend.precision(p.dtype));
  const auto x = static_cast<std::size_t>(5 * p.head_dim_qk + 3);
  // Not looser than a few hundred roundings of the element's own scale: the bound of a correct
  // f32 kernel is a small multiple of u_acc times the terms' magnitudes, not a global atol.
  EXPECT_GT(t.dk[x], 0);
  EXPECT_LT(t.dk[x], 1e-4 * (std::fabs(g.dk[x]) + 1e-2)) << "dk bound " << t.dk[x];
  return t.dk[x];
}

TEST(GradientJudge, AnErrorBeyondTheBoundFailsAndWithinItPasses) {
  const double bound = dk_bound();
  const CaseOutcome beyond = judge_case(GradFake(GradFault::moved, {0, 0, 5, 3, 3 * bound}), kCase);
  EXPECT_EQ(beyond.status, Status::fail) << beyond.message;
  EXPECT_NE(beyond.message.find("dk[0,0,5,3]"), std::string::npos) << beyond.message;
  const CaseOutcome within =
      judge_case(GradFake(GradFault::moved, {0, 0, 5, 3, 0.3 * bound}), kCase);
  EXPECT_EQ(within.status, Status::pass) << within.message;
}

// d bias: the exact sums pass (with the LSE and without, every broadcast kind); head 0's dS
// alone where the mask broadcasts over the heads, or an unwritten element, is a FAIL naming
// dbias.
TEST(GradientJudge, DBiasIsJudgedPerStoredMaskElement) {
  for (const char* id : {"b2.hq4.l13.s29.dqk16.f32.mask=add.mbc=h.lse.bwd.dbias.seed3.gen=normal",
                         "b2.hq4.hkv2.l13.s29.dqk16.bf16.mask=add.mbc=bl.causal=br.bwd.dbias.seed4",
                         "b2.hq4.l13.s29.dqk16.f32.mask=add.softcap=5.bwd.dbias.seed5"}) {
    const CaseOutcome o = judge_case(GradFake(GradFault::none), id);
    EXPECT_EQ(o.status, Status::pass) << id << ": " << o.message;
    ASSERT_TRUE(o.tensor_ratios.count("dbias")) << id;
    EXPECT_LE(o.tensor_ratios.at("dbias"), 1.0) << id;
  }
  const char* h_broadcast = "b2.hq4.l13.s29.dqk16.f32.mask=add.mbc=h.lse.bwd.dbias.seed3";
  const CaseOutcome one_head = judge_case(GradFake(GradFault::dbias_first_head_only), h_broadcast);
  EXPECT_EQ(one_head.status, Status::fail) << one_head.message;
  EXPECT_NE(one_head.message.find("dbias["), std::string::npos) << one_head.message;
  const CaseOutcome unwritten =
      judge_case(GradFake(GradFault::unwritten, {0, 0, 0, 0, 0, "dbias"}), h_broadcast);
  EXPECT_EQ(unwritten.status, Status::fail);
  EXPECT_NE(unwritten.message.find("dbias"), std::string::npos) << unwritten.message;
  // A backend that does not compute d bias declines the case, with the reason.
  const CaseOutcome declined =
      judge_case(testing::FakeBackend("fake", testing::Fault::none), h_broadcast);
  EXPECT_EQ(declined.status, Status::not_supported);
}

TEST(GradientJudge, AnUnwrittenGradientElementIsAFailNamingTheTensor) {
  const CaseOutcome o = judge_case(GradFake(GradFault::unwritten, {0, 0, 0, 0, 0, "dq"}), kCase);
  EXPECT_EQ(o.status, Status::fail);
  EXPECT_NE(o.message.find("dq"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("never written"), std::string::npos) << o.message;
}

TEST(GradientJudge, NanWhereAFiniteGradientIsExpectedIsAFail) {
  const CaseOutcome o = judge_case(GradFake(GradFault::nan_dv, {1, 1, 2, 1, 0}), kCase);
  EXPECT_EQ(o.status, Status::fail);
  EXPECT_NE(o.message.find("dv[1,1,2,1]"), std::string::npos) << o.message;
}

TEST(GradientJudge, ABackwardThatWritesItsInputOIsAFail) {
  const CaseOutcome o = judge_case(GradFake(GradFault::writes_input, {0, 0, 0, 0, 0, "o"}), kCase);
  EXPECT_EQ(o.status, Status::fail);
  EXPECT_NE(o.message.find("input O"), std::string::npos) << o.message;
}

TEST(GradientJudge, AThrowingBackwardIsAFail) {
  const CaseOutcome o = judge_case(GradFake(GradFault::throws), kCase);
  EXPECT_EQ(o.status, Status::fail);
  EXPECT_NE(o.message.find("fake backward failure"), std::string::npos) << o.message;
}

// An f64-accumulating contract is judged near f64's precision: a backward that rounds to f32
// FAILs it, with the LSE output and without (the f32 LSE's rounding no longer enters P's
// error in the second; table 2026-12-9), while the exact gradients pass. Before 2026-12-9 P's
// error carried 2^-24 |LSE| always and this plant passed every f64 case.
TEST(GradientJudge, AnF64BackwardThatRoundsToF32FailsItsF64Contract) {
  for (const char* id : {"b2.hq4.hkv2.l13.s29.dqk16.dv8.f64.causal=br.bwd.seed3.gen=normal",
                         "b1.hq2.hkv1.l9.s17.dqk8.dv8.f64.bwd.seed5.gen=normal"}) {
    const CaseOutcome exact = judge_case(GradFake(GradFault::none), id);
    EXPECT_EQ(exact.status, Status::pass) << id << ": " << exact.message;
    const CaseOutcome planted = judge_case(GradFake(GradFault::rounds_to_f32), id);
    EXPECT_EQ(planted.status, Status::fail) << id << ": " << planted.message;
    EXPECT_NE(planted.message.find("gradient error/tolerance"), std::string::npos)
        << planted.message;
    EXPECT_GT(planted.worst_ratio, 100.0) << id;  // far beyond, not at the edge
  }
  // Where the f32 LSE output may be read back, its rounding stays in P's error.
  Problem p = parse_case_id_or_throw("b1.hq1.l4.s8.dqk8.f64.bwd.seed1.gen=normal").problem;
  PrecisionContract f64;
  f64.accumulate = f64.p_type = f64.ds_type = DType::f64;
  EXPECT_EQ(lse_held_rounding(p, f64), 0x1p-53);
  p.want_lse = true;
  EXPECT_EQ(lse_held_rounding(p, f64), 0x1p-24);
  PrecisionContract f32;
  p.want_lse = false;
  EXPECT_EQ(lse_held_rounding(p, f32), 0x1p-24);
}

TEST(GradientJudge, ABackendWithoutABackwardDeclinesBackwardCases) {
  const CaseOutcome o = judge_case(testing::FakeBackend("fake", testing::Fault::none), kCase);
  EXPECT_EQ(o.status, Status::not_supported);
  EXPECT_NE(o.message.find("no backward pass"), std::string::npos) << o.message;
}

TEST(GradientJudge, ABackwardWhoseBitsFollowTheThreadCountIsRecordedOrFailed) {
  const Plant where{0, 1, 4, 2, 0};
  const CaseOutcome recorded = judge_case(GradFake(GradFault::thread_dependent, where), kCase);
  EXPECT_EQ(recorded.status, Status::pass) << recorded.message;
  EXPECT_TRUE(recorded.nondeterministic_backward);
  EXPECT_NE(recorded.message.find("dk differs"), std::string::npos) << recorded.message;
  // The same backend declaring determinism: its claim is false, a FAIL.
  const CaseOutcome claimed =
      judge_case(GradFake(GradFault::thread_dependent, where, /*deterministic=*/true), kCase);
  EXPECT_EQ(claimed.status, Status::fail);
  EXPECT_NE(claimed.message.find("not bitwise deterministic"), std::string::npos)
      << claimed.message;
  const CaseOutcome exact = judge_case(GradFake(GradFault::none, {}, true), kCase);
  EXPECT_EQ(exact.status, Status::pass) << exact.message;
  EXPECT_FALSE(exact.nondeterministic_backward);
}

// Every check of the backward (docs/TESTING.md, "Every check tripped on purpose"), one planted
// fault each, per tensor: the exact status, and a message that names the check and the tensor.
// The case has every gradient (d bias of an additive mask broadcast over the heads) and every
// input a backward reads (Q, K, V, the mask, dO, and the forward's O and LSE).
TEST(GradientJudge, EveryBackwardCheckIsTrippedOnPurpose) {
  constexpr const char* kAll = "b2.hq4.l13.s29.dqk16.f32.mask=add.mbc=h.lse.bwd.dbias.seed3";
  struct Row {
    GradFault fault;
    std::string tensor;
    bool deterministic;
    Status status;
    std::vector<std::string> says;                  // fragments of the message, in order
    std::array<std::int64_t, 4> at = {0, 1, 4, 2};  // the planted element (b, h, row, col)
  };
  std::vector<Row> rows = {{GradFault::none, "dk", true, Status::pass, {}},
                           {GradFault::writes_input,
                            "o",
                            false,
                            Status::fail,
                            {"the backward wrote its input O: o: input byte 0", "modified"}},
                           {GradFault::writes_input,
                            "lse",
                            false,
                            Status::fail,
                            {"the backward wrote its input LSE: lse: input byte 0", "modified"}}};
  for (std::string input : {"q", "k", "v", "mask", "d_out"}) {
    rows.push_back({GradFault::writes_input,
                    input,
                    false,
                    Status::fail,
                    {input + ": input byte 0 relative to element 0 was modified"}});
  }
  for (std::string t : {"dq", "dk", "dv", "dbias"}) {
    const std::string element = t == "dbias" ? "[0,0,0,0] = " : "[0,1,4,2] = ";
    rows.push_back({GradFault::writes_margin,
                    t,
                    false,
                    Status::fail,
                    {t + ": byte ", "written before the view"}});
    rows.push_back(
        {GradFault::unwritten, t, false, Status::fail, {t + ": element", "was never written"}});
    rows.push_back({GradFault::moved,
                    t,
                    false,
                    Status::fail,
                    {"gradient error/tolerance", " at " + t + element}});
    if (t != "dbias") {  // ... and in the last (b, h) slice: no slice is skipped
      rows.push_back({GradFault::moved,
                      t,
                      false,
                      Status::fail,
                      {"gradient error/tolerance", " at " + t + "[1,3,12,7] = "},
                      {1, 3, 12, 7}});
    }
    rows.push_back({GradFault::thread_dependent,
                    t,
                    true,
                    Status::fail,
                    {"the backward is not bitwise deterministic although the backend declares it",
                     ": " + t + " differs between"}});
    // Undeclared: a PASS that records the tensor.
    rows.push_back({GradFault::thread_dependent,
                    t,
                    false,
                    Status::pass,
                    {"the backward is not bitwise deterministic: " + t + " differs between"}});
  }
  for (const Row& r : rows) {
    const GradFake backend(r.fault, {r.at[0], r.at[1], r.at[2], r.at[3], 1.0, r.tensor},
                           r.deterministic);
    const CaseOutcome o = judge_case(backend, kAll);
    const std::string row =
        "fault " + std::to_string(static_cast<int>(r.fault)) + " on " + r.tensor + ": " + o.message;
    EXPECT_EQ(o.status, r.status) << row;
    EXPECT_EQ(o.nondeterministic_backward,
              r.fault == GradFault::thread_dependent && !r.deterministic)
        << row;
    std::size_t at = 0;
    for (const std::string& fragment : r.says) {
      at = o.message.find(fragment, at);
      ASSERT_NE(at, std::string::npos) << "'" << fragment << "' not in " << row;
    }
  }
}

// A backend that returns no LSE (as every framework's attention): a case that asks for the LSE
// is judged on O and its gradients, the LSE listed as not returned (requested_outputs.hpp); an
// error in O or dK is still a FAIL. It was NOT_SUPPORTED, which judged nothing.
class WithoutLse final : public GradFake {
 public:
  explicit WithoutLse(GradFault fault = GradFault::none, Plant plant = {})
      : GradFake(fault, plant) {
    caps_ = GradFake::capabilities();
    caps_.lse = false;
  }
  const Capabilities& capabilities() const override { return caps_; }

 private:
  Capabilities caps_;
};

TEST(GradientJudge, ABackendWithoutTheLseIsJudgedOnOAndItsGradients) {
  const CaseOutcome o = judge_case(WithoutLse(), kCase);
  EXPECT_EQ(o.status, Status::pass) << o.message;
  EXPECT_EQ(o.judged, (std::vector<std::string>{"o", "dq", "dk", "dv"}));
  EXPECT_EQ(o.not_returned, std::vector<std::string>{"lse"});
  EXPECT_NE(o.message.find("not returned by the backend, so not judged: lse"), std::string::npos)
      << o.message;
  const CaseOutcome moved = judge_case(WithoutLse(GradFault::moved, {0, 0, 5, 3, 1.0}), kCase);
  EXPECT_EQ(moved.status, Status::fail) << moved.message;
  EXPECT_NE(moved.message.find(" at dk[0,0,5,3] = "), std::string::npos) << moved.message;
  // A backend with the LSE judges it too.
  EXPECT_EQ(judge_case(GradFake(GradFault::none), kCase).judged,
            (std::vector<std::string>{"o", "lse", "dq", "dk", "dv"}));
}

// A backward that reads the forward's LSE cannot run without it: the request stays, and a
// backend that declares backward_needs_lse without returning the LSE declines the case.
TEST(GradientJudge, TheLseStaysAConditionForABackwardThatReadsIt) {
  Capabilities caps = GradFake(GradFault::none).capabilities();
  caps.lse = false;
  caps.backward_needs_lse = true;
  const Problem p = parse_case_id_or_throw(kCase).problem;
  EXPECT_TRUE(without_unreturned_outputs(caps, p).judged.want_lse);
  EXPECT_TRUE(without_unreturned_outputs(caps, p).not_returned.empty());
  caps.backward_needs_lse = false;
  EXPECT_FALSE(without_unreturned_outputs(caps, p).judged.want_lse);
}

// A backward without d bias is judged on dQ, dK, dV of a case that asks for d bias; d bias is
// listed as not returned.
TEST(GradientJudge, ABackwardWithoutDBiasIsJudgedOnDqDkDv) {
  Capabilities caps = GradFake(GradFault::none).capabilities();
  caps.bias_gradient = false;
  const Problem p =
      parse_case_id_or_throw("b2.hq4.l13.s29.dqk16.f32.mask=add.mbc=h.lse.bwd.dbias.seed3").problem;
  const RequestedOutputs r = without_unreturned_outputs(caps, p);
  EXPECT_FALSE(r.judged.bias_grad);
  EXPECT_TRUE(r.judged.backward);
  EXPECT_EQ(r.not_returned, std::vector<std::string>{"dbias"});
}

// A backward whose backend runs in another memory space: the judge runs backward passes in
// host memory only, and says so before anything runs (NOT_SUPPORTED, not a FAIL).
TEST(GradientJudge, ABackwardInAnotherMemorySpaceIsNotSupported) {
  class InDeviceMemory final : public GradFake {
   public:
    InDeviceMemory() : GradFake(GradFault::none) {}
    MemorySpace run_memory_space(const Device&) const override { return MemorySpace::test_device; }
  };
  const CaseOutcome o = judge_case(InDeviceMemory(), "b1.hq2.l9.s17.dqk16.f32.lse.bwd.seed3");
  EXPECT_EQ(o.status, Status::not_supported) << o.message;
  EXPECT_EQ(o.message,
            "the judge runs a backward pass in host memory only, and this backend takes "
            "test_device memory")
      << o.message;
}

}  // namespace
}  // namespace sdpa
