// The lowering of a Problem and its run's buffers into the one struct every kernel consumes
// (include/sdpa_cts/params.h): the CPU kernels, the CUDA kernels and their emulator, and the
// plugin ABI. The only place a Problem's fields are translated for a kernel: the GQA group,
// the per-batch lengths and packed offsets, the mask strides, the scale, the dropout threshold.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/problem.hpp"
#include "kernels/attended_keys.hpp"
#include "kernels/buffers.hpp"
#include "sdpa_cts/params.h"

namespace sdpa {

// The DType of a C dtype code; throws std::invalid_argument naming `where` and the code
// when it is none of SDPA_CTS_DTYPE_*.
DType dtype_from_code(std::int32_t code, const char* where);
// The C code of a DType (the same value: checked at compile time in lowered_problem.cpp).
constexpr std::int32_t dtype_code(DType t) { return static_cast<std::int32_t>(t); }

// A lowered problem: the kernel boundary. Every backend's supports(), run() and run_backward()
// take one (kernels/backend.hpp); the harness (case IDs, the reference, the judge, the
// dispatcher's front end) keeps the Problem and lowers it here, at the call. Kernels read
// params() and the accessors below, never the Problem (a layout check in .ci/run fails when a
// file under kernels/ other than this one and its .cpp names it). Not copyable or movable:
// params() points into the object.
class LoweredProblem {
 public:
  // Without buffers (supports(), explain): every tensor pointer is null. Implicit on purpose:
  // the harness hands its Problem to supports() and the lowering happens at the boundary.
  LoweredProblem(const Problem& p) : LoweredProblem(p, Buffers{}) {}  // NOLINT
  LoweredProblem(const Problem& p, const Buffers& buffers);
  // A backward call: the forward's buffers (o and lse its outputs, inputs here) and the
  // gradients' pointers, in the layouts of O, Q, K and V.
  LoweredProblem(const Problem& p, const Buffers& forward, const GradientPointers& grads);
  LoweredProblem(const LoweredProblem&) = delete;
  LoweredProblem& operator=(const LoweredProblem&) = delete;

  const sdpa_cts_params& params() const { return params_; }
  DType dtype() const { return static_cast<DType>(params_.dtype); }
  // Where every pointer of params() points (the run's Buffers::memory).
  MemorySpace memory() const { return memory_; }
  // The forward's pointers as Buffers (adapters that hand them on whole: the Python backend).
  Buffers buffers() const;
  // The backward call's pointers (null outside one).
  GradientPointers gradients() const;
  // Valid query rows L_b and keys S_b of batch element b.
  std::int64_t seqlen_q(std::int64_t b) const { return params_.seqlens_q[b]; }
  std::int64_t seqlen_kv(std::int64_t b) const { return params_.seqlens_kv[b]; }
  // Elements the mask tensor (and d bias) stores: the product of its non-broadcast sizes.
  std::int64_t mask_elements() const { return mask_elements_; }
  // Q, K, V and O as allocated (shape and strides; with packing, shape[0] is 1 and the rows
  // are the packed totals), for scans over a whole tensor.
  const StridedView& q_view() const { return views_[0]; }
  const StridedView& k_view() const { return views_[1]; }
  const StridedView& v_view() const { return views_[2]; }
  const StridedView& o_view() const { return views_[3]; }
  // Elements between each allocation's start and element 0 of Q, K, V and O: the pointers'
  // alignment as supports() must judge it before any buffer exists.
  const std::array<std::int64_t, 4>& base_offsets() const { return base_offsets_; }

  // The harness's Problem this was lowered from. For the harness's own adapters only, which
  // answer for a case rather than compute one (recorded results, the Python adapter, the
  // PyTorch picker's model, test doubles); a kernel never reads it.
  const Problem& source() const { return source_; }

 private:
  const Problem& source_;
  MemorySpace memory_ = MemorySpace::host;
  std::int64_t mask_elements_ = 0;
  StridedView views_[4];
  std::array<std::int64_t, 4> base_offsets_{};
  std::vector<std::int64_t> seqlens_q_, seqlens_kv_, cu_seqlens_q_, cu_seqlens_kv_;
  sdpa_cts_params params_{};
};

// The structural masks of `p` (causal, window), as attended_keys() takes them (the harness's
// pair coverage; kernels use key_structure(params)).
KeyStructure key_structure(const Problem& p);

}  // namespace sdpa
