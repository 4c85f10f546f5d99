// Family "dropout" (docs/TESTING.md): the exact keep-mask reproduced by the reference, the keep
// rate within a binomial bound, the 1/(1-p) scaling, p = 0 bitwise equal to no dropout,
// p near 1.
#include <cmath>

#include "tests/conformance/properties/gen_util.hpp"
#include "tests/conformance/properties/kernel_io.hpp"
#include "tests/conformance/properties/prop_util.hpp"

namespace sdpa::props {

using namespace sdpa::conformance;
namespace {

class Dropout : public testing::TestWithParam<Combo> {
 protected:
  const Backend& backend() const { return *GetParam().backend; }
  TargetRun options() const { return {0, GetParam().target}; }
};

double gen_rate() { return one_of<double>({0.5, 0.1, 0.25, 0.75, 0.9, 0.99, 0.999}); }

void gen_dropout(Problem& p) {
  p.dropout_p = gen_rate();
  p.dropout_seed = static_cast<std::uint64_t>(in_range(0, 1 << 30));
  p.dropout_offset = static_cast<std::uint64_t>(in_range(0, 1 << 30));
}

// Random data, masks and lengths with dropout: every kept P_j / (1-p) and dropped 0 as the
// reference's shared keep-mask says, within the bound.
TEST_P(Dropout, CasesWithDropoutPass) {
  check("a case with dropout passes", [&] {
    const Heads h = gen_heads();
    Problem p = make_problem(in_range(1, 2), h.q, h.kv, in_range(1, 40), in_range(1, 80),
                             in_range(1, 32), in_range(1, 32), gen_dtype(backend()));
    gen_dropout(p);
    p.causal = one_of<Causal>({Causal::none, Causal::top_left, Causal::bottom_right});
    p.mask = one_of<MaskKind>({MaskKind::none, MaskKind::boolean, MaskKind::additive});
    gen_varlen(p, true);
    p.want_lse = backend().capabilities().lse;
    p.want_weights = backend().capabilities().weights && coin();
    require_pass(backend(), {p, gen_recipe()}, options());
  });
}

// The keep-mask read out of O itself: with Q = 0 every logit is 0 and P_j = 1/S, and with
// V the identity (Dv = S) output element (i, d) is keep(i, d) / (S (1 - p)). So the zero
// pattern of O is the kernel's keep-mask, element for element; it must equal the
// reference's (its weights are 0 exactly where it dropped), every kept element must be
// 1/(S (1-p)) within the bound, and the keep rate must lie within 5 sigma of 1 - p.
TEST_P(Dropout, KeepMaskIsTheReferenceMaskExactly) {
  check("keep-mask, 1/(1-p) scaling and keep rate", [&] {
    const Heads h = gen_heads();
    const std::int64_t S = in_range(1, 64);
    Problem p = make_problem(in_range(1, 2), h.q, h.kv, in_range(1, 24), S, in_range(1, 8), S,
                             gen_dtype(backend()));
    gen_dropout(p);
    const Case c{p, {"normal", 0}};
    Tensors t = read_inputs(p, make_inputs(c));
    for (double& x : t.q) x = 0;
    for (std::int64_t b = 0; b < p.batch; ++b)
      for (std::int64_t hk = 0; hk < p.heads_kv; ++hk)
        for (std::int64_t j = 0; j < S; ++j)
          for (std::int64_t d = 0; d < S; ++d) t.v[at(b, hk, j, d, p.heads_kv, S, S)] = j == d;
    const InputBuffers in = write_inputs(p, t);
    const std::string id = repro(backend(), c, options()) + " with Q = 0 and V = identity";
    Outputs out;
    if (std::string why = run_kernel(backend(), p, in, options(), &out); !why.empty()) {
      fail(why + "\n  " + id);
    }
    Problem pw = p;
    pw.want_weights = true;
    const reference::Result ref = reference::run_sdpa(pw, in.pointers());
    const Bounds bd = bounds(backend(), p, in);
    std::int64_t kept = 0;
    for (std::size_t x = 0; x < out.o.size(); ++x) {
      // o[b, h, i, d] and weights[b, h, i, j = d] share one index since Dv = S.
      const bool ref_kept = ref.weights[x] != 0;
      if ((out.o[x] != 0) != ref_kept) {
        fail("keep-mask differs from the reference at o[" + std::to_string(x) +
             "] = " + std::to_string(out.o[x]) + " (reference " + (ref_kept ? "keeps" : "drops") +
             " it)\n  " + id);
      }
      kept += ref_kept;
      const double want = ref_kept ? 1.0 / (static_cast<double>(S) * (1 - p.dropout_p)) : 0.0;
      if (std::fabs(out.o[x] - want) > bd.o[x]) {
        fail("o[" + std::to_string(x) + "] = " + std::to_string(out.o[x]) +
             ", expected 1/(S (1-p)) = " + std::to_string(want) + " (bound " +
             std::to_string(bd.o[x]) + ")\n  " + id);
      }
    }
    const double n = static_cast<double>(out.o.size()), q = 1 - p.dropout_p;
    const double sigma = std::sqrt(n * q * (1 - q));
    if (std::fabs(static_cast<double>(kept) - n * q) > 5 * sigma + 1) {
      fail("kept " + std::to_string(kept) + " of " + std::to_string(n) +
           " elements, outside 5 sigma of the expected " + std::to_string(n * q) + "\n  " + id);
    }
  });
}

// The keep rate over a large sample (2^16 elements and more): within 5 sigma of 1 - p.
TEST_P(Dropout, KeepRateWithinFiveSigma) {
  check(
      "keep rate of a large sample",
      [&] {
        const std::int64_t S = 64;
        Problem p = make_problem(1, 2, 2, 512, S, 1, S, gen_dtype(backend()));
        gen_dropout(p);
        const Case c{p, {"normal", 0}};
        Tensors t = read_inputs(p, make_inputs(c));
        for (double& x : t.q) x = 0;
        for (std::int64_t hk = 0; hk < 2; ++hk)
          for (std::int64_t j = 0; j < S; ++j)
            for (std::int64_t d = 0; d < S; ++d) t.v[at(0, hk, j, d, 2, S, S)] = j == d;
        const InputBuffers in = write_inputs(p, t);
        Outputs out;
        const std::string id = repro(backend(), c, options()) + " with Q = 0 and V = identity";
        if (std::string why = run_kernel(backend(), p, in, options(), &out); !why.empty()) {
          fail(why + "\n  " + id);
        }
        double kept = 0;
        for (double x : out.o) kept += x != 0;
        const double n = static_cast<double>(out.o.size()), q = 1 - p.dropout_p;
        const double sigma = std::sqrt(n * q * (1 - q));
        if (std::fabs(kept - n * q) > 5 * sigma + 1) {
          fail("kept " + std::to_string(kept) + " of " + std::to_string(n) + ", outside 5 sigma (" +
               std::to_string(sigma) + ") of " + std::to_string(n * q) + "\n  " + id);
        }
      },
      0.25);
}

// p = 0 is no dropout, whatever the seed and offset: the same bits.
TEST_P(Dropout, ZeroRateIsBitwiseNoDropout) {
  check("p = 0 with a seed equals no dropout bit for bit", [&] {
    const Heads h = gen_heads();
    Problem p = make_problem(in_range(1, 2), h.q, h.kv, in_range(1, 40), in_range(1, 80),
                             in_range(1, 32), in_range(1, 32), gen_dtype(backend()));
    p.causal = one_of<Causal>({Causal::none, Causal::bottom_right});
    Problem z = p;
    z.dropout_p = 0;
    z.dropout_seed = static_cast<std::uint64_t>(in_range(1, 1 << 30));
    z.dropout_offset = static_cast<std::uint64_t>(in_range(0, 1 << 30));
    const DataRecipe r = gen_recipe();
    const InputBuffers in = make_inputs({p, r});
    Outputs a, b;
    const std::string id = repro(backend(), {z, r}, options());
    if (std::string why = run_kernel(backend(), p, in, options(), &a); !why.empty()) {
      fail(why + "\n  " + id);
    }
    if (std::string why = run_kernel(backend(), z, in, options(), &b); !why.empty()) {
      fail(why + "\n  " + id);
    }
    if (a.o_bytes != b.o_bytes || a.lse_bytes != b.lse_bytes) {
      fail("p = 0 with a dropout seed changed the output bits\n  " + id);
    }
  });
}

INSTANTIATE_TEST_SUITE_P(All, Dropout, testing::ValuesIn(every_backend()), combo_name);

}  // namespace
}  // namespace sdpa::props
