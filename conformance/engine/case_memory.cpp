#include "conformance/engine/case_memory.hpp"

#include <omp.h>
#include <unistd.h>

#include <algorithm>

#include "conformance/engine/byte_size.hpp"
#include "conformance/judge/judge.hpp"
#include "core/dtype.hpp"
#include "core/guarded_buffer.hpp"

namespace sdpa::conformance {
namespace {

std::uint64_t add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r;
  return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

std::uint64_t mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

std::uint64_t mul(std::initializer_list<std::int64_t> factors) {
  std::uint64_t r = 1;
  for (std::int64_t f : factors)
    r = mul(r, static_cast<std::uint64_t>(std::max<std::int64_t>(f, 0)));
  return r;
}

constexpr std::uint64_t kDouble = sizeof(double);

// One (b, h) slice of the reference in flight (reference/head_inputs.cpp, engine_f64.cpp), at
// the full lengths L and S: the gathered Q, K, V, the allowed map, an additive bias and a
// dropout keep-map; the engine's Q, |Q|, K^T, |K^T|, V, |V| copies, four rows of logits and
// magnitudes, seven per-key rows and four output rows.
std::uint64_t reference_slice_bytes(const Problem& p) {
  const std::int64_t L = p.len_q, S = p.len_kv, Dqk = p.head_dim_qk, Dv = p.head_dim_v;
  std::uint64_t gathered = mul(kDouble, add(add(mul({L, Dqk}), mul({S, Dqk})), mul({S, Dv})));
  gathered = add(gathered, mul({L, S}));  // allowed
  if (p.mask == MaskKind::additive) gathered = add(gathered, mul(kDouble, mul({L, S})));
  if (p.dropout_p > 0) gathered = add(gathered, mul({L, S}));
  std::uint64_t engine = mul(2 * kDouble, add(add(mul({L, Dqk}), mul({Dqk, S})), mul({S, Dv})));
  engine = add(engine, mul(kDouble, add(add(mul({8, S}), mul({7, S})), mul({4, Dv}))));
  return add(gathered, engine);
}

}  // namespace

std::uint64_t HarnessMemory::total() const {
  return add(add(add(inputs, outputs), add(reference, baseline)), expected);
}

HarnessMemory harness_memory(const Problem& p, bool golden, int reference_threads) {
  HarnessMemory m;
  const std::size_t es = dtype_size(p.dtype);
  // Inputs: each guarded buffer (core/case_buffers.hpp) and the snapshot of its region.
  const auto input = [&](std::size_t element_size, const StridedView& view, std::int64_t base) {
    const GuardedBufferFootprint f = guarded_buffer_footprint(element_size, view, base);
    m.inputs = add(m.inputs, add(f.held(), f.region));
  };
  input(es, q_view(p), p.q.base_offset);
  input(es, k_view(p), p.k.base_offset);
  input(es, v_view(p), p.v.base_offset);
  if (p.mask != MaskKind::none) input(p.mask == MaskKind::boolean ? 1 : es, mask_view(p), 0);
  // Outputs (make_outputs): the LSE and weights buffers are empty unless asked for.
  m.outputs = add(
      guarded_buffer_footprint(es, o_view(p), p.o.base_offset).held(),
      add(guarded_buffer_footprint(4, p.want_lse ? lse_view(p) : StridedView{}).held(),
          guarded_buffer_footprint(es, p.want_weights ? weights_view(p) : StridedView{}).held()));
  // The reference's result (reference/sdpa_reference.hpp): O and four magnitudes per output
  // element, LSE and three more per row, the weights when asked for; plus its slices in flight.
  const std::uint64_t n_out = mul({p.batch, p.heads_q, p.len_q, p.head_dim_v});
  const std::uint64_t n_row = mul({p.batch, p.heads_q, p.len_q});
  const std::uint64_t n_weights = p.want_weights ? mul({p.batch, p.heads_q, p.len_q, p.len_kv}) : 0;
  m.reference = mul(kDouble, add(add(mul(5, n_out), mul(4, n_row)), n_weights));
  const int threads = reference_threads > 0 ? reference_threads : omp_get_max_threads();
  const std::uint64_t slices = std::min<std::uint64_t>(
      mul({p.batch, p.heads_q}), static_cast<std::uint64_t>(std::max(threads, 1)));
  m.reference = add(m.reference, mul(slices, reference_slice_bytes(p)));
  // The quality gate (judge.cpp): one naive output at a time, with its K and V rows.
  if (quality_gate_runs(p)) {
    m.baseline = mul(kDouble, add(n_out, mul({p.len_kv, p.head_dim_qk + p.head_dim_v + 2})));
  }
  // A golden case: its expected O, LSE and weights, and the weights' capture magnitudes.
  if (golden) m.expected = mul(kDouble, add(add(n_out, n_row), mul(2, n_weights)));
  return m;
}

std::uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return mul(static_cast<std::uint64_t>(pages), static_cast<std::uint64_t>(page_size));
}

std::uint64_t default_case_memory_limit(int jobs) {
  const std::uint64_t physical = physical_memory_bytes();
  if (physical == 0) return UINT64_MAX;
  return physical / 2 / static_cast<std::uint64_t>(std::max(jobs, 1));
}

std::uint64_t case_memory_limit(std::uint64_t requested, int jobs) {
  return requested != 0 ? requested : default_case_memory_limit(jobs);
}

std::string memory_refusal(const HarnessMemory& need, std::uint64_t limit) {
  if (need.total() <= limit) return "";
  const auto size = [](std::uint64_t bytes) {
    return format_byte_size(bytes) + " (" + std::to_string(bytes) + " bytes";
  };
  std::string parts = "inputs " + format_byte_size(need.inputs) + ", outputs " +
                      format_byte_size(need.outputs) + ", reference " +
                      format_byte_size(need.reference);
  if (need.baseline) parts += ", quality gate " + format_byte_size(need.baseline);
  if (need.expected) parts += ", golden expected values " + format_byte_size(need.expected);
  return "needs " + size(need.total()) + ") of host memory for the harness's buffers (" + parts +
         "); this run lets one case use " + size(limit) + ", --max-case-memory)";
}

}  // namespace sdpa::conformance
