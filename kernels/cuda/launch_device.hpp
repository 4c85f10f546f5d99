// The launch device of a resolved CUDA Device (plan.hpp's LaunchDevice): what the fused
// kernels' tiling needs of it, without nvcc parsing core/device.hpp.
#pragma once

#include "core/device.hpp"
#include "kernels/cuda/plan.hpp"

namespace sdpa::cuda::detail {

inline LaunchDevice launch_device(const Device& device) {
  LaunchDevice d;
  d.sm = device.cuda.sm;
  d.sm_count = device.cuda.sm_count;  // a simulated (emulated) GPU has its table's count
  d.smem_per_block = device.cuda.smem_per_block;
  return d;
}

}  // namespace sdpa::cuda::detail
