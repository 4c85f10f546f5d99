// The buffers of one case: guarded inputs (filled by a data generator or read from a golden
// file) and guarded outputs (poisoned, checked after the kernel ran), all laid out as the
// problem's views describe.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "core/guarded_buffer.hpp"
#include "core/problem.hpp"

namespace sdpa {

// Element-0 pointers of the inputs (what the reference reads).
struct InputPointers {
  const void* q = nullptr;     // Q in problem.dtype
  const void* k = nullptr;     // K in problem.dtype
  const void* v = nullptr;     // V in problem.dtype
  const void* mask = nullptr;  // mask view: uint8 (boolean) or problem.dtype (additive)
};

// Guarded input buffers of a case; gaps and margins keep the poison pattern.
struct InputBuffers {
  GuardedBuffer q;                     // Q view
  GuardedBuffer k;                     // K view
  GuardedBuffer v;                     // V view
  std::optional<GuardedBuffer> mask;   // mask view when the problem has a mask tensor
  std::optional<GuardedBuffer> d_out;  // dO in O's layout (o_view) when the problem is backward
  InputPointers pointers() const;      // element-0 pointers
  // Snapshots every input, so that check_unchanged() finds any later write.
  void snapshot();
  // The first input a kernel modified, or no violation.
  GuardViolation check_unchanged() const;
};

// Guarded output buffers: every byte poisoned until a kernel writes it.
struct OutputBuffers {
  GuardedBuffer o;        // O view (with the problem's base offset and gaps)
  GuardedBuffer lse;      // lse_view, f32 (allocated empty when the LSE is not wanted)
  GuardedBuffer weights;  // weights_view in dtype (empty when the weights are not wanted)
  // The first violation (an unwritten element, a write outside a view), or none. Only the
  // outputs the problem asks for are checked.
  GuardViolation check(const Problem& p) const;
};

// Poisoned outputs for `p`.
OutputBuffers make_outputs(const Problem& p);

// Guarded gradient outputs of a backward problem, each in its input's layout (dQ in Q's,
// dK in K's, dV in V's, with their base offsets): every byte poisoned until written.
struct GradientBuffers {
  GradientBuffers(GuardedBuffer q, GuardedBuffer k, GuardedBuffer v)
      : dq(std::move(q)), dk(std::move(k)), dv(std::move(v)) {}
  GuardedBuffer dq;                    // q_view
  GuardedBuffer dk;                    // k_view
  GuardedBuffer dv;                    // v_view
  std::optional<GuardedBuffer> dbias;  // mask_view in dtype, when the problem asks for d bias
                                       // (one element per stored mask element)
  // The first violation (an unwritten element, a write outside a view), or none.
  GuardViolation check() const;
};
GradientBuffers make_gradient_outputs(const Problem& p);

// dO of a backward problem as the logical [B, Hq, L, Dv] array the reference takes; rows
// i >= L_b are 0 (never read).
std::vector<double> logical_d_out(const Problem& p, const GuardedBuffer& d_out);

}  // namespace sdpa
