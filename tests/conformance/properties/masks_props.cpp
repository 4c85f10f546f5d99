// Family "masks" (docs/TESTING.md): none, bool, additive with -inf entries (and broadcasts),
// causal TL / BR with L < S, L = S, L > S, windows at the edges (0, 1, S-2, S-1, S,
// unbounded), padding with S_b = 0, packed varlen with empty sequences, and fully masked
// rows from every source, which must give O = 0 exactly and LSE = -inf.
#include <cmath>

#include "tests/conformance/properties/gen_util.hpp"
#include "tests/conformance/properties/kernel_io.hpp"
#include "tests/conformance/properties/prop_util.hpp"

namespace sdpa::props {

using namespace sdpa::conformance;
namespace {

class Masks : public testing::TestWithParam<Combo> {
 protected:
  const Backend& backend() const { return *GetParam().backend; }
  TargetRun options() const { return {0, GetParam().target}; }
};

// L against S: shorter, equal, longer.
void gen_lengths(std::int64_t& L, std::int64_t& S) {
  S = in_range(1, 70);
  switch (in_range(0, 2)) {
    case 0:
      L = S;
      break;
    case 1:
      L = in_range(1, S);
      break;
    default:
      L = S + in_range(1, 30);
  }
}

// A window bound at an edge: 0, 1, S-2, S-1, S, or unbounded (-1).
std::int64_t gen_window_bound(std::int64_t S) {
  return one_of<std::int64_t>({0, 1, std::max<std::int64_t>(S - 2, 0), S - 1, S, -1});
}

// A problem with any combination of the mask sources.
Case gen_masked_case(const Backend& b) {
  std::int64_t L, S;
  gen_lengths(L, S);
  const Heads h = gen_heads();
  Problem p =
      make_problem(in_range(1, 3), h.q, h.kv, L, S, in_range(1, 32), in_range(1, 32), gen_dtype(b));
  p.mask = one_of<MaskKind>({MaskKind::none, MaskKind::boolean, MaskKind::additive});
  if (p.mask != MaskKind::none) p.mask_broadcast = static_cast<std::uint8_t>(in_range(0, 15));
  p.causal = one_of<Causal>({Causal::none, Causal::top_left, Causal::bottom_right});
  if (coin()) {
    p.window = {true, gen_window_bound(S), gen_window_bound(S),
                one_of<Align>({Align::top_left, Align::bottom_right})};
  }
  gen_varlen(p, true);
  if (coin()) p.softcap = one_of<double>({2, 20});
  p.want_lse = b.capabilities().lse;
  p.want_weights = b.capabilities().weights && coin();
  DataRecipe r = gen_recipe();
  // Adversarial data where it applies: NaN in every element beyond the valid lengths (which
  // must not reach the output), runs of masked keys and fully masked rows in the mask.
  if (!p.seqlens_kv.empty() && !p.packed && coin()) {
    r.generator = "nan_beyond";
  } else if (p.mask != MaskKind::none && coin()) {
    r.generator = "neg_inf_blocks";
  }
  return {p, r};
}

TEST_P(Masks, AnyCombinationPasses) {
  check("any combination of masks, causal, windows and lengths passes",
        [&] { require_pass(backend(), gen_masked_case(backend()), options()); });
}

// Fully masked rows, one source per draw, each sure to produce at least one such row
// (or, for the mask tensors, likely to): a row with no attended key is O = 0, LSE = -inf.
TEST_P(Masks, FullyMaskedRowsAreZeroWithLseMinusInfinity) {
  check("fully masked rows give O = 0 exactly and LSE = -inf", [&] {
    const Heads h = gen_heads();
    const std::int64_t S = in_range(1, 40);
    Problem p = make_problem(in_range(1, 3), h.q, h.kv, in_range(1, 20), S, in_range(1, 24),
                             in_range(1, 24), gen_dtype(backend()));
    const int source = static_cast<int>(in_range(0, 6));
    switch (source) {
      case 0:  // S_b = 0 for the first batch element (padded or packed)
        for (std::int64_t b = 0; b < p.batch; ++b) {
          p.seqlens_kv.push_back(b == 0 ? 0 : in_range(0, S));
        }
        if (coin()) {
          p.packed = true;
          apply_layout(p, LayoutKind::bhsd, 0, 0);
        }
        break;
      case 1:  // causal BR with L > S: the first L - S rows see no key
        p.len_q = S + in_range(1, 10);
        apply_layout(p, LayoutKind::bhsd, 0, 0);
        p.causal = Causal::bottom_right;
        break;
      case 2:  // a window that ends before key 0 for the first rows
        p.len_q = S + in_range(2, 10);
        apply_layout(p, LayoutKind::bhsd, 0, 0);
        p.window = {true, in_range(0, 2), 0, Align::bottom_right};
        break;
      case 3:  // a window that starts after the last key for the last rows
        p.len_q = S + in_range(1, 10);
        apply_layout(p, LayoutKind::bhsd, 0, 0);
        p.window = {true, 0, in_range(-1, 2), Align::top_left};
        break;
      case 4:  // a mask tensor broadcast along keys: whole rows masked (bool 0 or add -inf)
      case 5:
        p.mask = source == 4 ? MaskKind::boolean : MaskKind::additive;
        p.mask_broadcast = kBroadcastS | (coin() ? kBroadcastB : 0);
        break;
      default:  // the neg_inf_blocks generator: runs of masked keys, some rows fully masked
        p.mask = coin() ? MaskKind::boolean : MaskKind::additive;
    }
    DataRecipe r = gen_recipe();
    if (source == 6) r.generator = "neg_inf_blocks";
    const Case c{p, r};
    const InputBuffers in = make_inputs(c);
    Outputs out;
    if (std::string why = run_kernel(backend(), p, in, options(), &out); !why.empty()) {
      fail(why + "\n  " + repro(backend(), c, options()));
    }
    const Bounds bd = bounds(backend(), p, in);
    int masked_rows = 0;
    for (std::int64_t b = 0; b < p.batch; ++b)
      for (std::int64_t hh = 0; hh < p.heads_q; ++hh)
        for (std::int64_t i = 0; i < seqlen_q(p, b); ++i) {
          const std::size_t row = at(b, hh, i, 0, p.heads_q, p.len_q, 1);
          if (bd.ref.lse[row] != -INFINITY) continue;
          ++masked_rows;
          if (!out.lse.empty() && out.lse[row] != -INFINITY) {
            fail("lse of fully masked row " + std::to_string(row) + " is " +
                 std::to_string(out.lse[row]) + ", expected -inf\n  " +
                 repro(backend(), c, options()));
          }
          for (std::int64_t d = 0; d < p.head_dim_v; ++d) {
            if (out.o[row * p.head_dim_v + d] != 0) {
              fail("o of fully masked row " + std::to_string(row) + " is " +
                   std::to_string(out.o[row * p.head_dim_v + d]) + " at d = " + std::to_string(d) +
                   ", expected 0\n  " + repro(backend(), c, options()));
            }
          }
        }
    RC_CLASSIFY(masked_rows > 0, "has fully masked rows");
    if (source < 4 && masked_rows == 0) {
      fail("the generator made no fully masked row (source " + std::to_string(source) + ")\n  " +
           repro(backend(), c, options()));
    }
    // The other rows are judged as usual.
    require_pass(backend(), c, options());
  });
}

INSTANTIATE_TEST_SUITE_P(All, Masks, testing::ValuesIn(every_backend()), combo_name);

}  // namespace
}  // namespace sdpa::props
