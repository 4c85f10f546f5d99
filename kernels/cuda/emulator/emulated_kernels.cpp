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

// flash::run's and mem_efficient::run's runtime on the emulator: host vectors for the
// per-batch arrays, the flags and the split partials.
struct EmuRuntime {
  std::vector<long long> batch;
  std::vector<unsigned char> flag_storage;
  int count = 0;
  std::vector<std::vector<unsigned char>> slots = std::vector<std::vector<unsigned char>>(8);

  detail::BatchArrays batch_arrays(const detail::AttentionPlan& pl) {
    batch.clear();
    for (const auto* v :
         {&pl.q.row0, &pl.k.row0, &pl.v.row0, &pl.o.row0, &pl.valid_q, &pl.valid_kv, &pl.o_rows}) {
      batch.insert(batch.end(), v->begin(), v->end());
    }
    const long long* b = batch.data();
    const i64 n = pl.batch;
    return {b, b + n, b + 2 * n, b + 3 * n, b + 4 * n, b + 5 * n, b + 6 * n};
  }
  detail::OverflowFlags overflow_flags(i64 rows) {
    flag_storage.assign(static_cast<std::size_t>(rows), 0);
    count = 0;
    return {flag_storage.data(), &count};
  }
  int read_count(const int* c) { return *c; }
  void* scratch(int slot, std::size_t bytes) {
    auto& s = slots[static_cast<std::size_t>(slot)];
    if (s.size() < bytes) s.resize(bytes);
    return s.data();
  }
  int sm_count(const detail::LaunchDevice& dev) { return dev.sm_count; }
  template <class T, int kD>
  void flash(const detail::flash::FlashParams& p, i64 blocks) {
    launch(blocks, detail::flash::kThreads, detail::flash::smem_bytes<T, kD>(),
           [&](unsigned char* smem) { detail::flash::flash_block<T, kD>(p, smem); });
  }
  template <class T>
  void combine(const detail::flash::FlashParams& p, i64 rows_total) {
    launch(rows_total, detail::flash::kCombineThreads, sizeof(float) * detail::flash::kMaxSplits,
           [&](unsigned char* smem) {
             detail::flash::combine_row<T>(p, rows_total, reinterpret_cast<float*>(smem),
                                           detail::flash::kCombineThreads);
           });
  }
  template <class T>
  void kernel(const detail::mem_efficient::MemEfficientParams& p, i64 blocks) {
    launch(blocks, detail::mem_efficient::kThreads, sizeof(detail::mem_efficient::SharedTiles),
           [&](unsigned char* smem) {
             detail::mem_efficient::mem_efficient_block<T>(
                 p, *reinterpret_cast<detail::mem_efficient::SharedTiles*>(smem));
           });
  }
  void finish() {}
};

}  // namespace

void run_flash_plan(const detail::AttentionPlan& plan, const detail::LaunchDevice& device) {
  EmuRuntime rt;
  switch (plan.dtype) {
    case 1:
      return detail::flash::run<Half>(plan, device, rt);
    case 2:
      return detail::flash::run<Bf16>(plan, device, rt);
  }
  throw std::runtime_error("cuda.flash (emulated): element type not supported by this kernel");
}

void run_mem_efficient_plan(const detail::AttentionPlan& plan) {
  EmuRuntime rt;
  switch (plan.dtype) {
    case 0:
      return detail::mem_efficient::run<float>(plan, rt);
    case 1:
      return detail::mem_efficient::run<Half>(plan, rt);
    case 2:
      return detail::mem_efficient::run<Bf16>(plan, rt);
  }
  throw std::runtime_error(
      "cuda.mem_efficient (emulated): element type not supported by this kernel");
}

}  // namespace sdpa::cuda::emu
