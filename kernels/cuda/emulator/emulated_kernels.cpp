#include "kernels/cuda/emulator/emulated_kernels.hpp"

#include <cstring>
#include <stdexcept>
#include <vector>

#include "kernels/cuda/emulator/emulator.hpp"
#include "kernels/cuda/flash_body.hpp"
#include "kernels/cuda/mem_efficient_body.hpp"

namespace sdpa::cuda::emu {
namespace {

using detail::i64;

// The emulator's runtime for every fused kernel's host side (the twin of
// cuda_runtime.cuh): host vectors for the per-batch arrays, the flags and the scratch, and a
// generic launch of a kernel body on the emulated GPU.
class EmuRuntime {
 public:
  detail::BatchArrays batch_arrays(const std::vector<long long>& host, long long batch) {
    batch_ = host;
    return detail::batch_arrays_at(batch_.data(), batch);
  }
  detail::OverflowFlags overflow_flags(i64 rows) {
    flag_storage_.assign(static_cast<std::size_t>(rows), 0);
    count_ = 0;
    return {flag_storage_.data(), &count_};
  }
  int read_count(const int* c) { return *c; }
  void* scratch(int slot, std::size_t bytes) {
    auto& s = slots_[static_cast<std::size_t>(slot)];
    if (s.size() < bytes) s.resize(bytes);
    return s.data();
  }
  int sm_count(const detail::LaunchDevice& dev) { return dev.sm_count; }
  template <class Body>
  void launch(const Body& body, i64 blocks) {
    emu::launch(blocks, Body::kThreads, Body::kSmemBytes, [&](unsigned char* smem) { body(smem); });
  }
  void finish() {}

 private:
  std::vector<long long> batch_;
  std::vector<unsigned char> flag_storage_;
  int count_ = 0;
  std::vector<std::vector<unsigned char>> slots_ = std::vector<std::vector<unsigned char>>(8);
};

}  // namespace

void run_flash(const sdpa_cts_params& p, const detail::LaunchDevice& device) {
  EmuRuntime rt;
  detail::flash::run_lowered(p, device, rt);
}

void run_mem_efficient(const sdpa_cts_params& p, const detail::LaunchDevice&) {
  EmuRuntime rt;
  detail::mem_efficient::run_lowered(p, rt);
}

}  // namespace sdpa::cuda::emu
