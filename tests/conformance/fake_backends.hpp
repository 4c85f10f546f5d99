// Small backends for testing the judge and the runner: a correct one (the reference,
// rounded to the output type) and deliberately broken ones.
#pragma once

#include <cmath>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include "kernels/backend.hpp"
#include "kernels/lowered_problem.hpp"
#include "reference/sdpa_reference.hpp"

namespace sdpa::testing {

enum class Fault {
  none,           // correct: the reference rounded once
  zero_output,    // writes zeros
  crash,          // raises SIGSEGV
  hang,           // sleeps far past any timeout
  throws,         // throws std::runtime_error
  declines,       // supports() says no
  bf16_rounding,  // rounds O to bf16 but claims a bf16 contract (within bound, worse than naive)
  // The next four act on the tensor named by at() ("o" by default; "q" for writes_input) ...
  skip_last_row,  // ... leaves O's last query row unwritten (the LSE's, the weights' last entry)
  writes_margin,  // correct, plus one element written just before the tensor's element 0
  writes_input,   // correct, plus one byte of the input (q, k, v or mask) changed
  moved,          // the tensor's first element 1/8 off: far beyond any bound
  moved_last,     // the tensor's last element (the last batch element's last head) 1/8 off
  declines_batch_of_one,  // correct, but supports() declines problems of one batch element
  // Within the bound, but the first element of the tensor named by at() ("o" by default) one
  // unit in the last place of f32 off (toward +inf) ...
  thread_dependent,  // ... unless run at 1 thread: bits that follow the thread count
  batch_dependent,   // ... when the batch has more than one element: bits that follow the batch
  // Correct on the judge's first run (the default thread count, the whole batch); on a rerun at
  // 1 thread (the determinism check) or of a batch of one (the batch invariance check) ...
  throws_on_rerun,        // ... throws
  writes_input_on_rerun,  // ... changes one byte of Q
  skips_on_rerun,         // ... leaves O's last element unwritten
};

class FakeBackend : public Backend {
 public:
  FakeBackend(std::string name, Fault fault, MemorySpace memory = MemorySpace::host)
      : name_(std::move(name)), fault_(fault), caps_(Capabilities::every_forward_input()) {
    caps_.dtypes = {DType::f64, DType::f32, DType::f16, DType::bf16};
    caps_.weights = false;
    caps_.memory = memory;
  }
  // The tensor a fault acts on: "o", "lse", "weights" (outputs) or "q", "k", "v", "mask" (inputs).
  FakeBackend& at(std::string tensor) {
    target_ = std::move(tensor);
    return *this;
  }
  // Computes the attention weights (case flag `attnw`).
  FakeBackend& with_weights() {
    caps_.weights = true;
    return *this;
  }
  // Declares the forward properties the judge verifies (conformance/judge/forward_properties.hpp).
  FakeBackend& declare(bool deterministic, bool batch_invariant) {
    caps_.deterministic = deterministic;
    caps_.batch_invariant = batch_invariant;
    return *this;
  }
  std::string_view name() const override { return name_; }
  const Capabilities& capabilities() const override { return caps_; }
  PrecisionContract precision(DType t) const override {
    PrecisionContract c;
    c.accumulate = t == DType::f64 ? DType::f64 : DType::f32;
    c.p_type = c.accumulate;
    if (fault_ == Fault::bf16_rounding) c.accumulate = c.p_type = DType::bf16;
    return c;
  }
  Support supports(const LoweredProblem& lowered, const Device& d) const override {
    const Problem& p = lowered.source();
    Support s;
    check_capabilities(caps_, p, d, s);
    if (fault_ == Fault::declines) s.decline("this fake declines everything");
    if (fault_ == Fault::declines_batch_of_one && p.batch == 1)
      s.decline("this fake declines a batch of one");
    return s;
  }
  void run(const LoweredProblem& lowered, const Device&, const RunOptions& options) const override {
    const Problem& p = lowered.source();
    const Buffers b = lowered.buffers();
    if (fault_ == Fault::crash) std::raise(SIGSEGV);
    if (fault_ == Fault::hang) std::this_thread::sleep_for(std::chrono::hours(1));
    if (fault_ == Fault::throws) throw std::runtime_error("fake failure");
    const bool rerun = options.threads == 1 || p.batch == 1;
    if (fault_ == Fault::throws_on_rerun && rerun) throw std::runtime_error("fake rerun failure");
    const std::string& target =
        target_.empty()
            ? (fault_ == Fault::writes_input || fault_ == Fault::writes_input_on_rerun ? q_ : o_)
            : target_;
    // The change of one ulp of f32 that thread_dependent and batch_dependent make, where they do.
    const bool nudge = (fault_ == Fault::thread_dependent && options.threads != 1) ||
                       (fault_ == Fault::batch_dependent && p.batch > 1);
    if (b.memory != caps_.memory) throw std::runtime_error("buffers in the wrong memory space");
    const reference::Result r = reference::run_sdpa(p, {b.q, b.k, b.v, b.mask});
    const auto cuq = cu_seqlens_q(p);
    const std::int64_t B = p.batch, H = p.heads_q, L = p.len_q, Dv = p.head_dim_v;
    for (std::int64_t bb = 0; bb < B; ++bb) {
      const std::int64_t rows = p.packed ? seqlen_q(p, bb) : L;
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t i = 0; i < rows; ++i) {
          if (fault_ == Fault::skip_last_row && target == "o" && bb == B - 1 && h == H - 1 &&
              i == rows - 1)
            continue;
          for (std::int64_t d = 0; d < Dv; ++d) {
            const std::int64_t row = p.packed ? cuq[bb] + i : i;
            const std::int64_t off = element_offset(p.o, p.packed, bb, h, row, d);
            double x = r.o[static_cast<std::size_t>(((bb * H + h) * L + i) * Dv + d)];
            if (fault_ == Fault::zero_output) x = 0;
            if (fault_ == Fault::bf16_rounding) x = bf16_to_float(double_to_bf16(x));
            const bool first = bb == 0 && h == 0 && i == 0 && d == 0;
            const bool last = bb == B - 1 && h == H - 1 && i == rows - 1 && d == Dv - 1;
            if (first && target == "o" && nudge)
              x = std::nextafter(static_cast<float>(x), INFINITY);
            if (first && target == "o" && fault_ == Fault::moved) x += 0.125;
            if (last && target == "o" && fault_ == Fault::moved_last) x += 0.125;
            if (last && fault_ == Fault::skips_on_rerun && rerun) continue;
            store_from_double(p.dtype, b.o, off, x);
          }
        }
    }
    if (p.want_lse && !r.lse.empty()) {
      const std::size_t n = r.lse.size() - (fault_ == Fault::skip_last_row && target == "lse");
      for (std::size_t x = 0; x < n; ++x) b.lse[x] = static_cast<float>(r.lse[x]);
      if (nudge && target == "lse") b.lse[0] = std::nextafter(b.lse[0], INFINITY);
      if (fault_ == Fault::moved && target == "lse") b.lse[0] += 0.125f;
      if (fault_ == Fault::moved_last && target == "lse") b.lse[n - 1] += 0.125f;
    }
    if (p.want_weights && !r.weights.empty()) {
      const std::size_t n =
          r.weights.size() - (fault_ == Fault::skip_last_row && target == "weights");
      for (std::size_t x = 0; x < n; ++x) {
        double w = r.weights[x];
        if (x == 0 && target == "weights" && nudge)
          w = std::nextafter(static_cast<float>(w), INFINITY);
        if (x == 0 && target == "weights" && fault_ == Fault::moved) w += 0.125;
        if (x + 1 == n && target == "weights" && fault_ == Fault::moved_last) w += 0.125;
        store_from_double(p.dtype, b.weights, static_cast<std::int64_t>(x), w);
      }
    }
    if (fault_ == Fault::writes_margin) {
      if (target == "lse")
        b.lse[-1] = 0;
      else
        store_from_double(p.dtype, target == "weights" ? b.weights : b.o, -1, 0.0);
    }
    if (fault_ == Fault::writes_input || (fault_ == Fault::writes_input_on_rerun && rerun)) {
      const void* in = target == "k" ? b.k : target == "v" ? b.v : target == "mask" ? b.mask : b.q;
      static_cast<unsigned char*>(const_cast<void*>(in))[0] ^= 0x40;
    }
  }

 private:
  std::string name_;
  Fault fault_;
  Capabilities caps_;
  std::string target_;
  const std::string o_ = "o", q_ = "q";
};

}  // namespace sdpa::testing
