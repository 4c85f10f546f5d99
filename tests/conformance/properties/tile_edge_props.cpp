// Family "lengths at tile edges" (docs/TESTING.md): L and S at 1, 2, tile-1, tile, tile+1 for
// the tiles of every CPU kernel (GEMM panels and micro-tiles of 8 / 16 / 32, row blocks of
// 48, query tiles of 64, key blocks of 128, row blocks up to 192, chunks of 256), and 113,
// 203, 513, 1023, on every backend and SIMD target (the panels differ per target).
// 65537 and the index-width boundaries belong to the nightly tier.
#include "tests/conformance/properties/gen_util.hpp"
#include "tests/conformance/properties/prop_util.hpp"

namespace sdpa::props {

using namespace sdpa::conformance;
namespace {

class TileEdges : public testing::TestWithParam<Combo> {
 protected:
  const Backend& backend() const { return *GetParam().backend; }
  TargetRun options() const { return {0, GetParam().target}; }
};

std::vector<std::int64_t> edge_lengths() {
  std::vector<std::int64_t> v = {1, 2};
  for (std::int64_t t : {8, 16, 32, 48, 64, 128, 192, 256}) {
    v.push_back(t - 1);
    v.push_back(t);
    v.push_back(t + 1);
  }
  for (std::int64_t n : {113, 203, 513, 1023}) v.push_back(n);
  return v;
}

TEST_P(TileEdges, LengthsAtTileEdgesPass) {
  check(
      "L and S at tile edges pass",
      [&] {
        const std::vector<std::int64_t> edges = edge_lengths();
        const std::int64_t L = one_of(edges), S = one_of(edges);
        const Heads h = gen_heads(1, 2);
        Problem p = make_problem(1, h.q, h.kv, L, S, in_range(1, 24), in_range(1, 24),
                                 gen_dtype(backend()));
        p.causal = one_of<Causal>({Causal::none, Causal::top_left, Causal::bottom_right});
        p.want_lse = backend().capabilities().lse;
        require_pass(backend(), {p, gen_recipe()}, options());
      },
      0.5);
}

// Valid lengths at the edges inside a longer padded batch (the last partial tile of a
// batch element that is not the last of the buffer).
TEST_P(TileEdges, ValidLengthsAtTileEdgesPass) {
  check(
      "L_b and S_b at tile edges pass",
      [&] {
        const std::vector<std::int64_t> edges = edge_lengths();
        Problem p =
            make_problem(2, 1, 1, 260, 260, in_range(1, 16), in_range(1, 16), gen_dtype(backend()));
        for (int b = 0; b < 2; ++b) {
          std::int64_t lq = one_of(edges), lk = one_of(edges);
          p.seqlens_q.push_back(std::min<std::int64_t>(lq, 260));
          p.seqlens_kv.push_back(std::min<std::int64_t>(lk, 260));
        }
        p.causal = one_of<Causal>({Causal::none, Causal::bottom_right});
        p.want_lse = backend().capabilities().lse;
        require_pass(backend(), {p, gen_recipe()}, options());
      },
      0.5);
}

INSTANTIATE_TEST_SUITE_P(All, TileEdges, testing::ValuesIn(every_backend_and_target()), combo_name);

}  // namespace
}  // namespace sdpa::props
