#include "conformance/judge/forward_properties.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "conformance/judge/memory_space.hpp"
#include "kernels/lowered_problem.hpp"

namespace sdpa::conformance {
namespace {

bool same_region(const GuardedBuffer& a, const GuardedBuffer& b) {
  return a.region_size() == b.region_size() &&
         std::equal(a.region(), a.region() + a.region_size(), b.region());
}

// Runs the forward of `p` into fresh outputs; the exception text when it throws.
std::optional<std::string> run_into(const Backend& backend, const Problem& p, InputBuffers& in,
                                    OutputBuffers& out, const Device& device,
                                    const RunOptions& options) {
  try {
    PlacedBuffers placed(backend.run_memory_space(device), p, in, out);
    backend.run(LoweredProblem(p, placed.get()), device, options);
    placed.copy_back();
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

// Batch element 0 of `p` as a problem of its own: batch 1, its lengths, every layout, length
// maximum and Philox coordinate unchanged, so its elements sit at the same offsets of the same
// inputs and its outputs at the same offsets of outputs made for it.
Problem first_batch_element(const Problem& p) {
  Problem one = p;
  one.batch = 1;
  if (!p.seqlens_q.empty()) one.seqlens_q.assign(1, p.seqlens_q.front());
  if (!p.seqlens_kv.empty()) one.seqlens_kv.assign(1, p.seqlens_kv.front());
  return one;
}

// The first byte where batch element 0's outputs of `whole` (problem p) and `alone` (problem
// `one`) differ, as "o[0,h,i,d]" / "lse[0,h,i]" / "weights[0,h,i,j]"; "" when none.
std::string first_difference(const Problem& p, const OutputBuffers& whole,
                             const OutputBuffers& alone) {
  const std::size_t esz = dtype_size(p.dtype);
  const std::int64_t rows = p.packed ? seqlen_q(p, 0) : p.len_q;
  for (std::int64_t h = 0; h < p.heads_q; ++h)
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t d = 0; d < p.head_dim_v; ++d) {
        const std::int64_t x = element_offset(p.o, p.packed, 0, h, i, d);
        if (std::memcmp(static_cast<const unsigned char*>(whole.o.data()) + x * esz,
                        static_cast<const unsigned char*>(alone.o.data()) + x * esz, esz) != 0)
          return "o[0," + std::to_string(h) + "," + std::to_string(i) + "," + std::to_string(d) +
                 "]";
      }
    }
  // The LSE [B, Hq, L] and the weights [B, Hq, L, S] are contiguous: batch element 0 first.
  const std::int64_t rows0 = p.heads_q * p.len_q;
  if (p.want_lse) {
    const auto* a = static_cast<const float*>(whole.lse.data());
    const auto* b = static_cast<const float*>(alone.lse.data());
    for (std::int64_t r = 0; r < rows0; ++r)
      if (std::memcmp(a + r, b + r, sizeof(float)) != 0)
        return "lse[0," + std::to_string(r / p.len_q) + "," + std::to_string(r % p.len_q) + "]";
  }
  if (p.want_weights) {
    const auto* a = static_cast<const unsigned char*>(whole.weights.data());
    const auto* b = static_cast<const unsigned char*>(alone.weights.data());
    const std::int64_t n = rows0 * p.len_kv;
    for (std::int64_t x = 0; x < n; ++x)
      if (std::memcmp(a + x * esz, b + x * esz, esz) != 0)
        return "weights[0," + std::to_string(x / (p.len_q * p.len_kv)) + "," +
               std::to_string(x / p.len_kv % p.len_q) + "," + std::to_string(x % p.len_kv) + "]";
  }
  return "";
}

}  // namespace

int other_thread_count(const RunOptions& options) { return options.threads == 1 ? 3 : 1; }

std::string threads_text(int threads) {
  if (threads <= 0) return "the default thread count";
  return std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

ForwardPropertyOutcome check_forward_properties(const Backend& backend, const Problem& p,
                                                InputBuffers& in, const OutputBuffers& first,
                                                const Device& device, const RunOptions& options) {
  ForwardPropertyOutcome out;
  const Capabilities& caps = backend.capabilities();
  if (caps.deterministic) {
    RunOptions other = options;
    other.threads = other_thread_count(options);
    OutputBuffers again = make_outputs(p);
    if (auto err = run_into(backend, p, in, again, device, other)) {
      out.failure = "the forward threw on its second run (determinism check, " +
                    threads_text(other.threads) + "): " + *err;
      return out;
    }
    const char* differs = !same_region(first.o, again.o)                                 ? "o"
                          : p.want_lse && !same_region(first.lse, again.lse)             ? "lse"
                          : p.want_weights && !same_region(first.weights, again.weights) ? "weights"
                                                                                         : nullptr;
    if (differs) {
      out.failure = std::string(
                        "the forward is not bitwise deterministic although the backend "
                        "declares it: ") +
                    differs + " differs between " + threads_text(options.threads) + " and " +
                    threads_text(other.threads);
      return out;
    }
  }
  if (auto v = in.check_unchanged()) {
    out.failure = "the forward's second run (determinism check) wrote an input: " + v.message;
    return out;
  }
  if (caps.batch_invariant && p.batch >= 2) {
    const Problem one = first_batch_element(p);
    if (Support s = backend.supports(one, device); !s.ok()) {
      out.note = "batch invariance not checked: batch element 0 alone is declined (" +
                 (s.all_reasons().empty() ? std::string() : s.all_reasons().front()) + ")";
      return out;
    }
    OutputBuffers alone = make_outputs(one);
    if (auto err = run_into(backend, one, in, alone, device, options)) {
      out.failure = "the forward threw on batch element 0 alone (batch invariance check): " + *err;
      return out;
    }
    if (auto v = in.check_unchanged()) {
      out.failure = "batch element 0 alone (batch invariance check) wrote an input: " + v.message;
      return out;
    }
    if (auto v = alone.check(one)) {
      out.failure = "batch element 0 alone (batch invariance check): " + v.message;
      return out;
    }
    if (const std::string where = first_difference(p, first, alone); !where.empty()) {
      out.failure =
          "the forward is not batch-invariant although the backend declares it: " + where +
          " differs between the batch of " + std::to_string(p.batch) +
          " and batch element 0 run alone";
      return out;
    }
  }
  return out;
}

}  // namespace sdpa::conformance
