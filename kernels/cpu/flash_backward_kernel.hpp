// cpu.flash's backward internals shared by its driver (flash_backward.cpp) and the per-target
// kernel units (generated from flash_backward_impl.hpp by sdpa_cts_isa_units in
// kernels/cpu/CMakeLists.txt). Plain data and declarations only, as flash_kernel.hpp: nothing
// compiled with one target's flags can be picked by the linker for another.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sdpa_cts/params.h"

namespace sdpa::cpu::flash {

// Keys per block (the dK / dV accumulators) and query rows per block of one step. Measured on
// B4 H16 L=S=2048 D128 bf16 (docs/PERFORMANCE.md): 64 x 64 took 6 % longer than 128 x 128 and
// 128 x 256 about 2 % less (longer accumulating GEMMs, fewer passes over the dQ accumulators);
// beyond that no gain. The ci tier runs in the same time with either.
constexpr std::int64_t kBwdKeyBlock = 128;
constexpr std::int64_t kBwdRowBlock = 256;

// Byte offsets of the arrays in one thread's backward scratch (each 64-byte aligned). Head
// dims are padded to Dqp, Dvp (multiples of 16) with zeros.
struct BackwardScratch {
  std::size_t qr = 0;    // f32 [Br][Dqp]: the step's Q rows
  std::size_t dor = 0;   // f32 [Br][Dvp]: its dO rows
  std::size_t kt = 0;    // f32 [Dqk][Bc]: the key block's K, transposed (keys beyond S_b 0)
  std::size_t vt = 0;    // f32 [Dv][Bc]: its V, transposed
  std::size_t kr = 0;    // f32 [Bc][Dqp]: its K, one key per row
  std::size_t dk = 0;    // f32 [Bc][Dqp]: the block's dK accumulators (unscaled)
  std::size_t dv = 0;    // f32 [Bc][Dvp]: its dV accumulators
  std::size_t s = 0;     // f32 [Br][Bc]: logits S, then the dV operand P z (rounded)
  std::size_t ds = 0;    // f32 [Br][Bc]: dP, then dS (rounded)
  std::size_t tmp = 0;   // f32 [max(Dqp, Dvp) + 32]: one converted row
  std::size_t dq = 0;    // f32 [G][L_max][Dqp]: the task's dQ accumulators (unscaled)
  std::size_t rows = 0;  // f32 [2][G][L_max]: D = dO . O and the LSE of each of its rows
  // The bf16 dot path (vdpbf16ps): bf16 bits, u16 rows or u32 pairs of two elements.
  std::size_t qb = 0;     // u16 [Br][Dqp]: Q rows (pairs along the head dim)
  std::size_t dob = 0;    // u16 [Br][Dvp]: dO rows
  std::size_t kb = 0;     // u16 [Bc][Dqp]: K rows of the key block
  std::size_t vb = 0;     // u16 [Bc][Dvp]: V rows
  std::size_t kt2 = 0;    // u32 [Dqp/2][Bc]: K^T, pairs along the head dim
  std::size_t vt2 = 0;    // u32 [Dvp/2][Bc]: V^T
  std::size_t k2 = 0;     // u32 [Bc/2][Dqp]: K, pairs of keys
  std::size_t q2 = 0;     // u32 [Br/2][Dqp]: Q, pairs of rows
  std::size_t do2 = 0;    // u32 [Br/2][Dvp]: dO, pairs of rows
  std::size_t w2 = 0;     // u32 [Br/2][Bc]: P z, pairs of rows
  std::size_t ds2 = 0;    // u32 [Br/2][Bc]: dS, pairs of rows
  std::size_t dsj = 0;    // u16 [Br][Bc]: dS rows (pairs of keys)
  std::size_t bytes = 0;  // total
};

// What a backward kernel takes: the lowered backward call and the driver's choices.
struct BackwardParams : sdpa_cts_params {
  float softcap_f32 = 0;        // softcap in the kernel's f32 arithmetic
  std::int64_t dqk_padded = 0;  // Dqp
  std::int64_t dv_padded = 0;   // Dvp
  bool bf16_dot = false;        // bf16 GEMMs by vdpbf16ps (avx512bf16 target only)
  BackwardScratch scratch;      // this problem's per-thread scratch
};

// dQ of the query heads of kv head `hkv`'s group and dK, dV of that kv head, batch element
// b (one task; every output element belongs to one task). Returns false, having written some
// of them, when a value left the f32 range or was not finite (non-finite inputs, dO . V
// beyond f32): the driver then computes the task again on its guarded path.
// Each per-target unit of flash_backward_impl.hpp exports backward_task_<target> of this type;
// flash_backward.cpp declares and dispatches them (kernels/cpu/isa_dispatch.hpp).
using BackwardTaskFnType = bool(const BackwardParams&, std::int64_t b, std::int64_t hkv,
                                unsigned char* scratch);
using BackwardTaskFn = BackwardTaskFnType*;

}  // namespace sdpa::cpu::flash
