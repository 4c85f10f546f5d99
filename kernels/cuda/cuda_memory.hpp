// Where the CUDA family's backends take their buffers: CUDA device memory on a GPU, host
// memory standing in for it on an emulated GPU.
#pragma once

#include "core/device.hpp"
#include "kernels/backend.hpp"

namespace sdpa::cuda {

// Registers cuda_device (kernels/device_memory.hpp) when the CUDA runtime is linked.
void register_cuda_memory();

// The memory space a CUDA backend's run() gets on `device` (Backend::run_memory_space).
MemorySpace run_memory_space(const Capabilities& caps, const Device& device);

}  // namespace sdpa::cuda
