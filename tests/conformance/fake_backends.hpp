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
  skip_last_row,  // leaves the last query row unwritten
  writes_margin,  // correct, plus one element written just before O's element 0
  writes_input,   // correct, plus one element of Q overwritten
  // Within the bound, but O's first element one unit in the last place off (toward +inf) ...
  thread_dependent,      // ... unless run at 1 thread: bits that follow the thread count
  batch_dependent,       // ... when the batch has more than one element: bits that follow the batch
  lse_thread_dependent,  // the LSE's first entry so, unless run at 1 thread
};

class FakeBackend : public Backend {
 public:
  FakeBackend(std::string name, Fault fault, MemorySpace memory = MemorySpace::host)
      : name_(std::move(name)), fault_(fault), caps_(Capabilities::every_forward_input()) {
    caps_.dtypes = {DType::f64, DType::f32, DType::f16, DType::bf16};
    caps_.weights = false;
    caps_.memory = memory;
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
    return s;
  }
  void run(const LoweredProblem& lowered, const Device&, const RunOptions& options) const override {
    const Problem& p = lowered.source();
    const Buffers b = lowered.buffers();
    if (fault_ == Fault::crash) std::raise(SIGSEGV);
    if (fault_ == Fault::hang) std::this_thread::sleep_for(std::chrono::hours(1));
    if (fault_ == Fault::throws) throw std::runtime_error("fake failure");
    if (b.memory != caps_.memory) throw std::runtime_error("buffers in the wrong memory space");
    const reference::Result r = reference::run_sdpa(p, {b.q, b.k, b.v, b.mask});
    const auto cuq = cu_seqlens_q(p);
    const std::int64_t B = p.batch, H = p.heads_q, L = p.len_q, Dv = p.head_dim_v;
    for (std::int64_t bb = 0; bb < B; ++bb) {
      const std::int64_t rows = p.packed ? seqlen_q(p, bb) : L;
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t i = 0; i < rows; ++i) {
          if (fault_ == Fault::skip_last_row && bb == B - 1 && h == H - 1 && i == rows - 1)
            continue;
          for (std::int64_t d = 0; d < Dv; ++d) {
            const std::int64_t row = p.packed ? cuq[bb] + i : i;
            const std::int64_t off = element_offset(p.o, p.packed, bb, h, row, d);
            double x = r.o[static_cast<std::size_t>(((bb * H + h) * L + i) * Dv + d)];
            if (fault_ == Fault::zero_output) x = 0;
            if (fault_ == Fault::bf16_rounding) x = bf16_to_float(double_to_bf16(x));
            const bool first = bb == 0 && h == 0 && i == 0 && d == 0;
            if (first && ((fault_ == Fault::thread_dependent && options.threads != 1) ||
                          (fault_ == Fault::batch_dependent && p.batch > 1)))
              x = std::nextafter(static_cast<float>(x), INFINITY);
            store_from_double(p.dtype, b.o, off, x);
          }
        }
    }
    if (p.want_lse) {
      for (std::size_t x = 0; x < r.lse.size(); ++x) b.lse[x] = static_cast<float>(r.lse[x]);
      if (fault_ == Fault::lse_thread_dependent && options.threads != 1 && !r.lse.empty())
        b.lse[0] = std::nextafter(b.lse[0], INFINITY);
    }
    if (fault_ == Fault::writes_margin) store_from_double(p.dtype, b.o, -1, 0.0);
    if (fault_ == Fault::writes_input) store_from_double(p.dtype, const_cast<void*>(b.q), 0, 7.0);
  }

 private:
  std::string name_;
  Fault fault_;
  Capabilities caps_;
};

}  // namespace sdpa::testing
