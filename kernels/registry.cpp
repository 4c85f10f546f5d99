#include "kernels/registry.hpp"

#include "kernels/cpu/cpu_backends.hpp"
#include "kernels/cuda/cuda_backends.hpp"

namespace sdpa {

// Each backend's translation unit provides its accessor; the list below is the priority
// order (docs/DISPATCH.md explains it).
const std::vector<const Backend*>& builtin_backends() {
  static const std::vector<const Backend*> list = {
      &cpu::flash_backend(),
      &cpu::mem_efficient_backend(),
      &cpu::math_backend(),
      // CUDA descriptors, after the CPU backends, in PyTorch's default order (flash,
      // efficient, math, cudnn); cuDNN first on sm9x / sm10x is a dispatcher rule.
      &cuda::flash_backend(),
      &cuda::mem_efficient_backend(),
      &cuda::math_backend(),
      &cuda::cudnn_backend(),
  };
  return list;
}

const Backend* find_backend(std::string_view name) {
  for (const Backend* b : builtin_backends()) {
    if (b->name() == name) return b;
  }
  return nullptr;
}

}  // namespace sdpa
