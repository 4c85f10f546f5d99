#include "conformance/memory_space.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include "core/cuda_runtime.hpp"

namespace sdpa::conformance {
namespace {

// A separate host allocation standing in for a device: nothing a backend writes through
// the host pointers reaches it, so the judge's copies are exercised without hardware.
class TestDeviceMemory final : public DeviceMemory {
 public:
  void* allocate(std::size_t bytes) const override {
    return ::operator new(bytes == 0 ? 1 : bytes);
  }
  void release(void* p) const override { ::operator delete(p); }
  void to_device(void* dst, const void* src, std::size_t n) const override {
    if (n) std::memcpy(dst, src, n);
  }
  void to_host(void* dst, const void* src, std::size_t n) const override {
    if (n) std::memcpy(dst, src, n);
  }
};

// CUDA device memory through the CUDA runtime (core/cuda_runtime.hpp); errors name the space.
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

const DeviceMemory* device_memory(MemorySpace space) {
  static const TestDeviceMemory test_device;
  static const CudaDeviceMemory cuda_device;
  switch (space) {
    case MemorySpace::host:
      return nullptr;
    case MemorySpace::test_device:
      return &test_device;
    case MemorySpace::cuda_device:
      if (cuda_runtime::linked()) return &cuda_device;
      break;
  }
  throw std::runtime_error(std::string("memory space ") + memory_space_name(space) +
                           " is not reachable: this build has no CUDA runtime");
}

Mirror::Mirror(const DeviceMemory& memory, GuardedBuffer& host) : memory_(memory), host_(host) {
  device_ = static_cast<unsigned char*>(memory_.allocate(host_.region_size()));
  memory_.to_device(device_, host_.region(), host_.region_size());
}

Mirror::~Mirror() { memory_.release(device_); }

void* Mirror::data() const { return device_ + host_.data_offset(); }

void Mirror::copy_back() { memory_.to_host(host_.region(), device_, host_.region_size()); }

MemorySpace run_memory_space(const Capabilities& caps, const Device& device) {
  if (caps.memory == MemorySpace::cuda_device && device.kind == DeviceKind::cuda &&
      device.cuda.emulated) {
    return MemorySpace::test_device;
  }
  return caps.memory;
}

PlacedBuffers::PlacedBuffers(MemorySpace space, const Problem& p, InputBuffers& in,
                             OutputBuffers& out) {
  const DeviceMemory* memory = device_memory(space);
  auto place = [&](GuardedBuffer& g) -> void* {
    if (!memory) return g.data();
    mirrors_.push_back(std::make_unique<Mirror>(*memory, g));
    return mirrors_.back()->data();
  };
  buffers_.q = place(in.q);
  buffers_.k = place(in.k);
  buffers_.v = place(in.v);
  buffers_.mask = in.mask ? place(*in.mask) : nullptr;
  buffers_.o = place(out.o);
  buffers_.lse = p.want_lse ? static_cast<float*>(place(out.lse)) : nullptr;
  buffers_.weights = p.want_weights ? place(out.weights) : nullptr;
  buffers_.memory = space;
}

void PlacedBuffers::copy_back() {
  for (auto& m : mirrors_) m->copy_back();
}

}  // namespace sdpa::conformance
