// The fragment probe's kernel body (docs/KERNELS.md, "The fragment probe"): one warp copies a
// 16 x 16 tile A (row-major) and a 16 x 16 tile B (k x n, row-major) into shared memory,
// loads A by ldmatrix .x4 and B by ldmatrix .x4 .trans, and runs two mma.sync m16n8k16 (B's
// columns 0-7 and 8-15) from the given f32 accumulators; every lane writes its registers.
// nvcc compiles it for a GPU (fragment_probe_gpu.cu), the host compiler for the emulator, so
// that the two are compared bit for bit on the GPU's first day.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/simt.hpp"

namespace sdpa::cuda::detail::probe {

// Words each lane writes: A's fragment (4 registers), B's two fragment pairs from the
// transposing load (4), the mma results for B's columns 0-7 (4) and 8-15 (4).
constexpr int kWordsPerLane = 16;

template <class T>
struct FragmentProbeBody {
  static constexpr int kThreads = 32;
  static constexpr int kMinBlocks = 1;
  static constexpr std::size_t kSmemBytes = 2 * 256 * sizeof(std::uint16_t);

  const std::uint16_t* a;  // 16 x 16 element bits, row-major
  const std::uint16_t* b;  // 16 x 16 element bits, k x n, row-major
  const float* c;          // 32 lanes x 4 accumulators; both mma start from them
  std::uint32_t* out;      // 32 lanes x kWordsPerLane

  SDPA_CTS_KERNEL_FN void operator()(unsigned char* smem) const {
    const int lane = thread_x();
    auto* sa = reinterpret_cast<std::uint16_t*>(smem);
    std::uint16_t* sb = sa + 256;
    for (int i = lane; i < 256; i += 32) {
      sa[i] = a[i];
      sb[i] = b[i];
    }
    sync_threads();
    // Lanes 0-15 give the rows 0-15 of columns 0-7 (matrices 0 and 1), lanes 16-31 those of
    // columns 8-15 (matrices 2 and 3): A's fragment registers 0-3, and with .trans B's
    // (k 0-7, k 8-15) for columns 0-7, then for columns 8-15.
    const int row = lane % 16, col = (lane / 16) * 8;
    unsigned ra[4], rb[4];
    ldmatrix_x4(ra, sa + row * 16 + col);
    ldmatrix_x4_trans(rb, sb + row * 16 + col);
    float d0[4], d1[4];
    for (int i = 0; i < 4; ++i) d0[i] = d1[i] = c[lane * 4 + i];
    mma_16816<T>(d0, ra, rb[0], rb[1]);
    mma_16816<T>(d1, ra, rb[2], rb[3]);
    std::uint32_t* o = out + lane * kWordsPerLane;
    for (int i = 0; i < 4; ++i) {
      o[i] = ra[i];
      o[4 + i] = rb[i];
      o[8 + i] = float_bits(d0[i]);
      o[12 + i] = float_bits(d1[i]);
    }
  }
};

}  // namespace sdpa::cuda::detail::probe
