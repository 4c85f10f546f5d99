// Family "batch=1 parallelization" (docs/TESTING.md): B = 1, H = 1 with a long L (query split),
// L = 1 with a long S (split-KV), GQA decode; any thread count 1..N gives a result within
// the bounds, and a backend that declares determinism / batch invariance gives the same
// bits across runs, thread counts and batch compositions.
#include <algorithm>
#include <cstring>
#include <thread>

#include "tests/conformance/properties/gen_util.hpp"
#include "tests/conformance/properties/kernel_io.hpp"
#include "tests/conformance/properties/prop_util.hpp"

namespace sdpa::props {

using namespace sdpa::conformance;
namespace {

class Parallel : public testing::TestWithParam<Combo> {
 protected:
  const Backend& backend() const { return *GetParam().backend; }
};

// N: the cores, at least 3 (more threads than items, and an odd count, on any machine).
std::int64_t max_threads() {
  return std::max<std::int64_t>(3, static_cast<std::int64_t>(std::thread::hardware_concurrency()));
}

enum class Shape { long_query, long_keys, gqa_decode };

// The three single-sequence shapes; keys up to 6000 and queries up to 700.
Case gen_shape(const Backend& b, Shape s) {
  Problem p;
  switch (s) {
    case Shape::long_query:
      p = make_problem(1, 1, 1, in_range(64, 700), in_range(1, 200), in_range(1, 64),
                       in_range(1, 64), gen_dtype(b));
      p.causal = one_of<Causal>({Causal::none, Causal::top_left, Causal::bottom_right});
      break;
    case Shape::long_keys:
      p = make_problem(1, 1, 1, 1, in_range(257, 6000), in_range(1, 128), in_range(1, 128),
                       gen_dtype(b));
      break;
    case Shape::gqa_decode: {
      const std::int64_t kv = in_range(1, 2);
      p = make_problem(1, kv * one_of<std::int64_t>({4, 8, 16}), kv, in_range(1, 2),
                       in_range(64, 3000), 64, 64, gen_dtype(b));
      p.causal = one_of<Causal>({Causal::none, Causal::bottom_right});
      break;
    }
  }
  p.want_lse = b.capabilities().lse;
  return {p, gen_recipe()};
}

void within_bounds_at_any_thread_count(const Backend& b, const std::string& target, Shape s) {
  check(
      "within the bounds at any thread count",
      [&] {
        const Case c = gen_shape(b, s);
        require_pass(b, c, {static_cast<int>(in_range(1, max_threads())), target});
      },
      0.5);
}

TEST_P(Parallel, LongQueryOneHead) {
  within_bounds_at_any_thread_count(backend(), GetParam().target, Shape::long_query);
}
TEST_P(Parallel, LongKeysOneQuery) {
  within_bounds_at_any_thread_count(backend(), GetParam().target, Shape::long_keys);
}
TEST_P(Parallel, GqaDecode) {
  within_bounds_at_any_thread_count(backend(), GetParam().target, Shape::gqa_decode);
}

TEST_P(Parallel, SameBitsAtEveryThreadCountAndRun) {
  if (!backend().capabilities().deterministic) {
    GTEST_SKIP() << backend().name() << " does not declare determinism";
  }
  check(
      "same bits at threads 1..N and across runs",
      [&] {
        const Case c = gen_shape(
            backend(), one_of<Shape>({Shape::long_query, Shape::long_keys, Shape::gqa_decode}));
        const InputBuffers in = make_inputs(c);
        Outputs first;
        for (std::int64_t t = 1; t <= max_threads() + 1; ++t) {
          // The last run repeats a random thread count.
          const int threads = static_cast<int>(t <= max_threads() ? t : in_range(1, max_threads()));
          const TargetRun opt{threads, GetParam().target};
          Outputs out;
          if (std::string why = run_kernel(backend(), c.problem, in, opt, &out); !why.empty()) {
            fail(why + "\n  " + repro(backend(), c, opt));
          }
          if (t == 1) {
            first = out;
          } else if (out.o_bytes != first.o_bytes || out.lse_bytes != first.lse_bytes) {
            fail("O or LSE bits at " + std::to_string(threads) +
                 " threads differ from 1 thread\n  " + repro(backend(), c, opt));
          }
        }
      },
      0.25);
}

// Batch element e computed alone (its own buffers, B = 1, the dropout counter offset moved
// to its position) equals element e of a batch, bit for bit, at other thread counts.
TEST_P(Parallel, BatchCompositionInvariant) {
  if (!backend().capabilities().batch_invariant) {
    GTEST_SKIP() << backend().name() << " does not declare batch invariance";
  }
  check(
      "an element alone has the bits it has in a batch",
      [&] {
        const Heads h = gen_heads();
        Problem p = make_problem(in_range(2, 3), h.q, h.kv, in_range(1, 80), in_range(1, 1500),
                                 in_range(1, 64), in_range(1, 64), gen_dtype(backend()));
        p.causal = one_of<Causal>({Causal::none, Causal::top_left, Causal::bottom_right});
        p.mask = one_of<MaskKind>({MaskKind::none, MaskKind::additive});
        gen_varlen(p, false);
        if (coin()) {
          p.dropout_p = 0.25;
          p.dropout_seed = static_cast<std::uint64_t>(in_range(0, 1000));
        }
        p.want_lse = backend().capabilities().lse;
        const Case c{p, gen_recipe()};
        const std::int64_t e = in_range(0, p.batch - 1);
        const InputBuffers in = make_inputs(c);
        const Tensors t = read_inputs(p, in);
        const TargetRun batch_opt{static_cast<int>(in_range(1, max_threads())), GetParam().target};
        Outputs all;
        if (std::string why = run_kernel(backend(), p, in, batch_opt, &all); !why.empty()) {
          fail(why + "\n  " + repro(backend(), c, batch_opt));
        }
        // Element e alone.
        Problem one = p;
        one.batch = 1;
        if (!p.seqlens_q.empty()) {
          one.seqlens_q = {p.seqlens_q[e]};
          one.seqlens_kv = {p.seqlens_kv[e]};
        }
        const std::int64_t H = p.heads_q, Hk = p.heads_kv, L = p.len_q, S = p.len_kv;
        one.dropout_offset = p.dropout_offset + static_cast<std::uint64_t>(e * H * L * S);
        apply_layout(one, LayoutKind::bhsd, 0, 0);
        auto slice = [&](const std::vector<double>& v, std::int64_t per) {
          return std::vector<double>(v.begin() + e * per, v.begin() + (e + 1) * per);
        };
        Tensors u{slice(t.q, H * L * p.head_dim_qk), slice(t.k, Hk * S * p.head_dim_qk),
                  slice(t.v, Hk * S * p.head_dim_v),
                  t.mask.empty() ? t.mask : slice(t.mask, H * L * S)};
        const TargetRun one_opt{static_cast<int>(in_range(1, max_threads())), GetParam().target};
        Outputs alone;
        if (std::string why = run_kernel(backend(), one, write_inputs(one, u), one_opt, &alone);
            !why.empty()) {
          fail(why + "\n  " + repro(backend(), c, one_opt) + " (element " + std::to_string(e) +
               " alone)");
        }
        const std::size_t ob = static_cast<std::size_t>(H * L * p.head_dim_v) * dtype_size(p.dtype);
        const std::size_t lb = static_cast<std::size_t>(H * L) * 4;
        if (std::memcmp(all.o_bytes.data() + e * ob, alone.o_bytes.data(), ob) != 0 ||
            (!all.lse_bytes.empty() &&
             std::memcmp(all.lse_bytes.data() + e * lb, alone.lse_bytes.data(), lb) != 0)) {
          fail("element " + std::to_string(e) + " alone (" + std::to_string(one_opt.threads) +
               " threads) differs from the batch (" + std::to_string(batch_opt.threads) +
               " threads)\n  " + repro(backend(), c, batch_opt));
        }
      },
      0.25);
}

INSTANTIATE_TEST_SUITE_P(All, Parallel, testing::ValuesIn(every_backend()), combo_name);

}  // namespace
}  // namespace sdpa::props
