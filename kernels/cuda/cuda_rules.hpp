// Rules several CUDA descriptors share (internal to kernels/cuda/).
#pragma once

#include <string>

#include "kernels/backend.hpp"
#include "kernels/cuda/cuda_backends.hpp"
#include "kernels/cuda/plan.hpp"
#include "kernels/lowered_problem.hpp"

namespace sdpa::cuda::detail {

// Appends "runs on CUDA devices, not on <device>" and returns false when the device is not
// a GPU: the other rules are about GPU properties and would only add noise.
bool check_cuda_device(const Capabilities& caps, const Device& device, Support& s);

// sm in the backend's row of cuda_arch_ranges() [lo, hi], else "compute capability smXY is
// outside the supported range [smLO, smHI]".
void check_sm_range(std::string_view backend, const Device& device, Support& s);

// The device's launch limits against a configuration's needs: shared memory per block, and
// threads times registers per thread against the registers of a multiprocessor (one block per
// SM). Declines with both numbers, e.g. "needs 128 KiB of shared memory per block (head dims
// up to 256), sm86 allows 99 KiB". A device without known limits (0) is not checked.
void check_launch_limits(const LaunchNeeds& needs, const Device& device, Support& s);

// Head-dimension stride 1 for q, k, v and o; with `singleton_ok` a head dim of 1 passes
// whatever its stride (PyTorch's flash exception, issue #116333).
void check_last_dim_stride(const LoweredProblem& p, bool singleton_ok, Support& s);

// A mask broadcast over keys has stride 0 in its last dimension; CUDA fused kernels need 1.
void check_mask_last_dim_stride(const LoweredProblem& p, Support& s);

// Packed variable-length rows: no batch element may have an empty query or key sequence.
void check_packed_nonempty(const LoweredProblem& p, Support& s);

// The throwing run() of a descriptor backend: a model without a kernel anywhere, or a
// backend whose kernel is not in this build (CUDA off).
[[noreturn]] void no_kernels(std::string_view backend, bool model_only);

// Precision contract shared by the fused kernels: accumulate in f32 (f64 for f64), P
// rounded to the input type before PV, online softmax over key blocks of `key_block`, and for
// f16 / bf16 the sums on tensor cores (mma_block, mma_extra_bits).
PrecisionContract fused_precision(DType dtype, std::int64_t key_block);

}  // namespace sdpa::cuda::detail
