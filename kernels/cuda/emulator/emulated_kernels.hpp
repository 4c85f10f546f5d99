// The fused CUDA kernels run on the host emulator (emulator.hpp): the same kernel bodies as
// on a GPU (flash_body.hpp, mem_efficient_body.hpp), with host memory for every buffer. For tests
// and for investigating a kernel without a GPU; never a substitute for a GPU run.
#pragma once

#include "kernels/cuda/plan.hpp"

namespace sdpa::cuda::emu {

// cuda.flash's kernels on the lowered problem `p` (host pointers), as on a device with
// `device.sm_count` SMs (which decides the split-KV count).
void run_flash(const sdpa_cts_params& p, const detail::LaunchDevice& device);

// cuda.mem_efficient's kernel on `p` (host pointers).
void run_mem_efficient(const sdpa_cts_params& p, const detail::LaunchDevice& device);

}  // namespace sdpa::cuda::emu
