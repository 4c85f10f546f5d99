// The CUDA runtime as this project uses it: finding the GPU and moving bytes. Built against
// the CUDA runtime library when the build has CUDA (SDPA_CTS_HAVE_CUDA, cmake/Cuda.cmake);
// otherwise every function says that this build has none. Errors name the CUDA call and
// CUDA's own message.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace sdpa {

struct CudaProperties;

namespace cuda_runtime {

// Whether this build links the CUDA runtime.
bool linked();

// What the GPU is, or nullopt with the reason in `why` (no runtime in this build, no driver,
// no device). Device 0; the cuDNN version when a cuDNN library can be loaded, else 0.
struct Gpu {
  std::string model;                     // e.g. "NVIDIA H200"
  int sm = 0;                            // compute capability * 10 + minor
  int sm_count = 0;                      // multiprocessors
  std::size_t memory = 0;                // bytes of global memory
  int runtime_version = 0;               // cudaRuntimeGetVersion, e.g. 13000
  int driver_version = 0;                // cudaDriverGetVersion
  int cudnn_version = 0;                 // cudnnGetVersion, e.g. 91002; 0 = none found
  std::size_t smem_per_block_optin = 0;  // sharedMemPerBlockOptin, bytes
  int regs_per_sm = 0;                   // regsPerMultiprocessor
};
std::optional<Gpu> probe(std::string* why);

// Device memory. Throw std::runtime_error naming the call and CUDA's message.
void* allocate(std::size_t bytes);
void release(void* p) noexcept;
void to_device(void* dst, const void* src, std::size_t bytes);
void to_host(void* dst, const void* src, std::size_t bytes);

}  // namespace cuda_runtime
}  // namespace sdpa
