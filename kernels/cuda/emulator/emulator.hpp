// A host emulator of the CUDA execution model, just enough for this project's fused kernels
// (kernels/cuda/simt.hpp is the interface they are written in): a block's threads run as
// cooperative fibers in one OS thread, scheduled round-robin and switched only at a
// collective (a barrier, a shuffle, ldmatrix, mma), so every run is deterministic. Warp
// collectives exchange their operands and compute what PTX defines: ldmatrix's and mma.sync
// m16n8k16's fragment layouts, and cp.async copies that land at a seeded random point between
// their commit and cp.async.wait_group (a missing wait reads stale or half-landed shared
// memory, as on a GPU it may). What a GPU does not promise is made visible: shared memory
// starts as 0xFF bytes (NaN) in every block, a barrier that not every thread reaches is a
// deadlock instead of a hang, and a 16-byte chunk that one warp reads by ldmatrix and another
// writes by cp.async with no __syncthreads between is a write-after-read (or
// read-after-write) hazard.
//
// It models semantics, not timing: mma.sync sums its 16 products exactly and rounds once to
// nearest (an ideal tensor core), or as a published bit-accurate model of an architecture's
// tensor cores does (MmaRounding: blocks of products, truncated alignment, truncated result);
// exp2/tanh/log are the host's. It lets the
// judge check the real kernel code on machines without a GPU (tests/kernels/), never in
// place of a GPU run: docs/KERNELS.md, "CUDA".
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "core/device.hpp"

namespace sdpa::cuda::emu {

// bf16 and IEEE binary16 as their bits; the conversions are core/dtype's (round to nearest
// even, NaN kept quiet).
struct Bf16 {
  std::uint16_t bits = 0;
  Bf16() = default;
  explicit Bf16(float x);
};
struct Half {
  std::uint16_t bits = 0;
  Half() = default;
  explicit Half(float x);
};

// Runs `body` once per thread of each block of a grid of `blocks` blocks of `threads`
// threads (a multiple of 32), blocks one after another, each with `smem_bytes` of shared
// memory filled with 0xFF bytes, its mma.sync rounding as `mma` says. Throws
// std::runtime_error naming the block and the problem on a deadlock (a barrier some threads
// never reach), a shared-memory hazard, or an error raised in a thread.
void launch(long long blocks, int threads, std::size_t smem_bytes,
            const std::function<void(unsigned char* smem)>& body, const MmaRounding& mma = {});

// One block FMA of a measured tensor-core model (MmaRounding with block > 0): c plus the n
// products a[i] * b[i] of f16 or bf16 values (`input_emin`: the input type's smallest normal
// exponent, -14 or -126), each term aligned to the largest exponent (a product's is the sum
// of its factors' exponents) and truncated `extra_bits` bits below the f32 significand, the
// exact sum truncated to f32. Non-finite terms give IEEE's result.
float block_fma(const float* a, const float* b, int n, float c, int input_emin, int extra_bits);

// The seed of the cp.async delivery draws of every later launch (default 1): the same seed,
// the same run.
void set_seed(std::uint64_t seed);

// What the kernels call (through simt.hpp), valid inside launch() only. In a namespace of
// their own: argument-dependent lookup on Bf16 / Half must not find them next to simt.hpp's.
namespace ops {
float to_float(Bf16 x);
float to_float(Half x);
Bf16 to_bf16(float x);
Half to_half(float x);
inline float round_f32(double x) { return static_cast<float>(x); }
int thread_x();
long long block_x();
long long grid_dim_x();
void sync_threads();
bool sync_threads_or(bool x);
void sync_warp();
float shfl_xor(float x, int mask);
bool any_in_warp(bool x);
void atomic_add(int* p, int v);
void ldmatrix_x4(unsigned (&r)[4], const void* smem, bool trans);
void mma_16816(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1, bool bf16);
void cp_async_16(void* smem, const void* gmem, int src_bytes);
void cp_async_commit();
void cp_async_wait(int n);
}  // namespace ops

}  // namespace sdpa::cuda::emu
