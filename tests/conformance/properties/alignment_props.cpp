// Family "alignment" (docs/TESTING.md): head dims 1..256 (non-multiples of 8 included), base
// pointers offset by one element, row strides that are not multiples of the vector width,
// and explicit permuted, gapped and zero strides, on every backend and SIMD target.
#include <algorithm>
#include <numeric>

#include "tests/conformance/properties/gen_util.hpp"
#include "tests/conformance/properties/prop_util.hpp"

namespace sdpa::props {

using namespace sdpa::conformance;
namespace {

class Alignment : public testing::TestWithParam<Combo> {
 protected:
  const Backend& backend() const { return *GetParam().backend; }
  TargetRun options() const { return {0, GetParam().target}; }
};

TEST_P(Alignment, HeadDimsOneTo256) {
  check("any head dims in 1..256 pass", [&] {
    const Heads h = gen_heads(2, 2);
    Problem p = make_problem(1, h.q, h.kv, in_range(1, 20), in_range(1, 40), in_range(1, 256),
                             in_range(1, 256), gen_dtype(backend()));
    p.causal = one_of<Causal>({Causal::none, Causal::bottom_right});
    p.want_lse = backend().capabilities().lse;
    require_pass(backend(), {p, gen_recipe()}, options());
  });
}

// Named layouts with a gap after every row (odd gaps: rows not a multiple of the vector
// width) and a base offset (one element: misaligned base pointers).
TEST_P(Alignment, GapsAndBaseOffsets) {
  check("bhsd / bshd with gaps and base offsets pass", [&] {
    const Heads h = gen_heads();
    Problem p = make_problem(in_range(1, 2), h.q, h.kv, in_range(1, 24), in_range(1, 48),
                             in_range(1, 40), in_range(1, 40), gen_dtype(backend()));
    p.mask = one_of<MaskKind>({MaskKind::none, MaskKind::additive});
    gen_varlen(p, true);
    apply_layout(p, one_of<LayoutKind>({LayoutKind::bhsd, LayoutKind::bshd}), in_range(0, 7),
                 in_range(0, 3));
    p.want_lse = backend().capabilities().lse;
    require_pass(backend(), {p, gen_recipe()}, options());
  });
}

// Strides of a tensor [n0, n1, n2, n3] with its dimensions nested in a random order, a gap
// after each dimension, and (inputs only) sometimes a zero stride on the batch or head
// dimension (one head or batch element broadcast, as an expanded KV head is).
TensorLayout gen_strides(const std::array<std::int64_t, 4>& n, bool allow_zero) {
  std::vector<int> order = {3, 2, 1, 0};  // innermost first
  for (int x = 3; x > 0; --x) std::swap(order[x], order[x - in_range(0, x)]);
  TensorLayout t;
  std::int64_t next = in_range(1, 2);  // the innermost stride: 1 or 2
  for (int dim : order) {
    if (allow_zero && dim < 2 && in_range(0, 3) == 0) {
      t.stride[dim] = 0;
      continue;
    }
    t.stride[dim] = next;
    next = next * std::max<std::int64_t>(n[dim], 1) + in_range(0, 3);
  }
  t.base_offset = in_range(0, 3);
  return t;
}

TEST_P(Alignment, PermutedGappedAndZeroStrides) {
  check("explicit permuted, gapped and zero strides pass", [&] {
    const Heads h = gen_heads();
    Problem p = make_problem(in_range(1, 2), h.q, h.kv, in_range(1, 30), in_range(1, 50),
                             in_range(1, 24), in_range(1, 24), gen_dtype(backend()));
    const std::int64_t B = p.batch, L = p.len_q, S = p.len_kv;
    p.q = gen_strides({B, p.heads_q, L, p.head_dim_qk}, true);
    p.k = gen_strides({B, p.heads_kv, S, p.head_dim_qk}, true);
    p.v = gen_strides({B, p.heads_kv, S, p.head_dim_v}, true);
    p.o = gen_strides({B, p.heads_q, L, p.head_dim_v}, false);
    p.causal = one_of<Causal>({Causal::none, Causal::bottom_right});
    p.want_lse = backend().capabilities().lse;
    RC_PRE(validate(p).empty());
    require_pass(backend(), {p, gen_recipe()}, options());
  });
}

INSTANTIATE_TEST_SUITE_P(All, Alignment, testing::ValuesIn(every_backend_and_target()), combo_name);

}  // namespace
}  // namespace sdpa::props
