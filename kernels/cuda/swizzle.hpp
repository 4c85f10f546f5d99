// The shared-memory tile layout of cuda.flash: rows of kD 16-bit elements whose 16-byte
// chunks are XOR-swizzled by the row (chunk c / 8 goes to (c / 8) ^ (r % 8)), so that the
// eight rows one ldmatrix matrix reads lie in eight different bank groups. Plain C++ for
// the device, the emulator and the tests.
#pragma once

#include "kernels/cuda/tile_schedule.hpp"

namespace sdpa::cuda::detail {

// Offset, in elements, of element (r, c) of a tile with kD columns (kD a multiple of 64).
template <int kD>
SDPA_CTS_HOST_DEVICE inline int swizzled(int r, int c) {
  static_assert(kD % 64 == 0, "at least eight 16-byte chunks per row");
  return r * kD + ((((c >> 3) ^ (r & 7))) << 3) + (c & 7);
}

}  // namespace sdpa::cuda::detail
