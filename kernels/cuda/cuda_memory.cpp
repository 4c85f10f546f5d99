// The CUDA family's memory space: cuda_device through the CUDA runtime
// (core/cuda_runtime.hpp), registered with the family's backends when the runtime is linked.
#include "kernels/cuda/cuda_memory.hpp"

#include <stdexcept>
#include <string>

#include "core/cuda_runtime.hpp"
#include "kernels/device_memory.hpp"

namespace sdpa::cuda {
namespace {

// Errors name the space.
class CudaDeviceMemory final : public DeviceMemory {
 public:
  void* allocate(std::size_t bytes) const override {
    return named([&] { return cuda_runtime::allocate(bytes); });
  }
  void release(void* p) const override { cuda_runtime::release(p); }
  void to_device(void* dst, const void* src, std::size_t n) const override {
    named([&] { cuda_runtime::to_device(dst, src, n); });
  }
  void to_host(void* dst, const void* src, std::size_t n) const override {
    named([&] { cuda_runtime::to_host(dst, src, n); });
  }

 private:
  template <class F>
  static auto named(F f) -> decltype(f()) {
    try {
      return f();
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(std::string("memory space cuda_device: ") + e.what());
    }
  }
};

}  // namespace

void register_cuda_memory() {
  static const CudaDeviceMemory memory;
  if (cuda_runtime::linked()) register_device_memory(MemorySpace::cuda_device, memory);
}

MemorySpace run_memory_space(const Capabilities& caps, const Device& device) {
  // The emulated kernels read and write host memory: test_device, a separate host
  // allocation, so that the judge's copies and guards are exercised as on a GPU.
  if (caps.memory == MemorySpace::cuda_device && device.kind == DeviceKind::cuda &&
      device.cuda.emulated) {
    return MemorySpace::test_device;
  }
  return caps.memory;
}

}  // namespace sdpa::cuda
