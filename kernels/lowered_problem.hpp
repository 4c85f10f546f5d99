// The lowering of a Problem and its run's buffers into the one struct every kernel consumes
// (include/sdpa_cts/params.h): the CPU kernels, the CUDA kernels and their emulator, and the
// plugin ABI. The only place a Problem's fields are translated for a kernel.
#pragma once

#include <cstdint>
#include <vector>

#include "core/problem.hpp"
#include "kernels/attended_keys.hpp"
#include "kernels/backend.hpp"
#include "sdpa_cts/params.h"

namespace sdpa {

// The DType of a C dtype code; throws std::invalid_argument naming `where` and the code
// when it is none of SDPA_CTS_DTYPE_*.
DType dtype_from_code(std::int32_t code, const char* where);
// The C code of a DType (the same value: checked at compile time in lowered_problem.cpp).
constexpr std::int32_t dtype_code(DType t) { return static_cast<std::int32_t>(t); }

// A lowered problem and the per-batch arrays its params point to. Not copyable or movable:
// params() points into the object.
class LoweredProblem {
 public:
  // Without buffers (supports(), explain): every tensor pointer is null.
  explicit LoweredProblem(const Problem& p) : LoweredProblem(p, Buffers{}) {}
  LoweredProblem(const Problem& p, const Buffers& buffers);
  // A backward call: the forward's buffers (o and lse its outputs, inputs here) and the
  // gradients' pointers, in the layouts of O, Q, K and V.
  LoweredProblem(const Problem& p, const Buffers& forward, const GradientPointers& grads);
  LoweredProblem(const LoweredProblem&) = delete;
  LoweredProblem& operator=(const LoweredProblem&) = delete;

  const sdpa_cts_params& params() const { return params_; }
  DType dtype() const { return static_cast<DType>(params_.dtype); }

 private:
  std::vector<std::int64_t> seqlens_q_, seqlens_kv_, cu_seqlens_q_, cu_seqlens_kv_;
  sdpa_cts_params params_{};
};

// The structural masks of `p` (causal, window), as attended_keys() takes them.
KeyStructure key_structure(const Problem& p);

}  // namespace sdpa
