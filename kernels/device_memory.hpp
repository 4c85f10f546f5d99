// Memory spaces other than the host's, as the backend families that use them provide them.
// The judge and the bench allocate, fill and guard every buffer in host memory; for a
// backend whose run() expects another space they mirror the buffers through that space's
// DeviceMemory (conformance/judge/memory_space.hpp). A family registers the operations of its
// space when it registers its backends (the CUDA family: cuda_device, when the CUDA runtime
// is linked); test_device, a separate host allocation standing in for a device, is always
// there. Nothing outside a family knows how its device memory works.
#pragma once

#include <cstddef>

#include "kernels/backend.hpp"

namespace sdpa {

// Raw memory of one space.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual void* allocate(std::size_t bytes) const = 0;
  virtual void release(void* p) const = 0;
  virtual void to_device(void* dst, const void* src, std::size_t bytes) const = 0;
  virtual void to_host(void* dst, const void* src, std::size_t bytes) const = 0;
};

// Makes `memory` the operations of `space` (a family's registration calls it; `memory`
// lives as long as the process). A later registration of the same space replaces it.
void register_device_memory(MemorySpace space, const DeviceMemory& memory);

// The memory of `space`: nullptr for host memory (buffers are used in place). Throws
// std::runtime_error naming the space when no family of this build provides it. The
// families register when the backend registry is first used, which every run of a backend
// follows.
const DeviceMemory* device_memory(MemorySpace space);

}  // namespace sdpa
