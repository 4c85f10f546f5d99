// The host emulator's runtime for a fused kernel's host side (the twin of
// kernels/cuda/cuda_runtime.cuh, the same interface): a descriptor's run() on an emulated GPU
// runs the kernel's body here, compiled by the host compiler against emulator.hpp
// (docs/KERNELS.md, "Adding a CUDA fused kernel"). For tests and for investigating a kernel
// without a GPU; never a substitute for a GPU run.
#pragma once

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/emulator/emulator.hpp"
#include "kernels/cuda/plan.hpp"

namespace sdpa::cuda::emu {

// The emulator's runtime for every fused kernel's host side (the twin of
// cuda_runtime.cuh): host vectors for the per-batch arrays, the flags and the scratch, and a
// generic launch of a kernel body on the emulated GPU.
class EmuRuntime {
 public:
  // `smem_limit`: the emulated device's shared memory per block (0 = unchecked); a launch that
  // asks for more fails as it would on the GPU. `mma`: how its mma.sync rounds.
  explicit EmuRuntime(std::size_t smem_limit = 0, MmaRounding mma = {})
      : smem_limit_(smem_limit), mma_(std::move(mma)) {}
  detail::BatchArrays batch_arrays(const std::vector<long long>& host, long long batch) {
    batch_ = host;
    return detail::batch_arrays_at(batch_.data(), batch);
  }
  detail::OverflowFlags overflow_flags(long long rows) {
    flag_storage_.assign(static_cast<std::size_t>(rows), 0);
    count_ = 0;
    return {flag_storage_.data(), &count_};
  }
  int read_count(const int* c) { return *c; }
  // Scratch comes as a GPU allocation does, uninitialised: poisoned with 0xFF bytes (NaN) on
  // every request, so that a kernel reading a partial it never wrote fails the judge.
  void* scratch(int slot, std::size_t bytes) {
    auto& s = slots_[static_cast<std::size_t>(slot)];
    if (s.size() < bytes) s.resize(bytes);
    std::fill(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(bytes), 0xFF);
    return s.data();
  }
  int sm_count(const detail::LaunchDevice& dev) { return dev.sm_count; }
  template <class Body>
  void launch(const Body& body, long long blocks) {
    if (smem_limit_ > 0 && Body::kSmemBytes > smem_limit_) {
      throw std::runtime_error("emulator: a block needs " + std::to_string(Body::kSmemBytes) +
                               " bytes of shared memory, the device allows " +
                               std::to_string(smem_limit_) + " (the launch fails on a GPU)");
    }
    emu::launch(
        blocks, Body::kThreads, Body::kSmemBytes, [&](unsigned char* smem) { body(smem); }, mma_);
  }
  void finish() {}

 private:
  std::vector<long long> batch_;
  std::vector<unsigned char> flag_storage_;
  std::size_t smem_limit_ = 0;
  MmaRounding mma_;
  int count_ = 0;
  std::vector<std::vector<unsigned char>> slots_ = std::vector<std::vector<unsigned char>>(8);
};

}  // namespace sdpa::cuda::emu
