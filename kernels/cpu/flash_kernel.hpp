// cpu.flash internals shared by the driver (flash_backend.cpp) and the per-target kernel
// translation units (generated from flash_impl.hpp by sdpa_cts_isa_units in
// kernels/cpu/CMakeLists.txt).
//
// Only plain data and function declarations live here: no inline code, so nothing
// compiled with one target's instruction-set flags can be picked by the linker for code
// that runs on another target.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.hpp"
#include "sdpa_cts/params.h"

namespace sdpa::cpu::flash {

// Rows (head, query) pairs of one work item: its query tile. Also the most rows a tile
// holds, so the per-thread scratch does not grow with L or S.
constexpr std::int64_t kRowTile = 64;
// Keys per online-softmax step (the key block). Fixed: it decides where the running max
// and sum are rescaled, so it must not depend on the problem's size or the thread count.
constexpr std::int64_t kKeyBlock = 128;
// Tile rows are padded to a multiple of this (one zmm of f32 or of bf16 pairs).
constexpr std::int64_t kRowAlign = 16;
// Largest head dimension (Dqk or Dv) accepted: bounds the per-thread scratch.
constexpr std::int64_t kMaxHeadDim = 1024;

// Byte offsets of the arrays in one thread's scratch (every one 64-byte aligned).
struct ScratchLayout {
  std::size_t qt = 0;     // f32 [Dqk][Rp]: Q tile, transposed (rows along the vector)
  std::size_t kb = 0;     // f32 [Bc][Dqk]: K block, one key per row
  std::size_t vb = 0;     // f32 [Bc][Dv]: V block, one key per row
  std::size_t st = 0;     // f32 [Bc][Rp]: logits S^T, then probabilities P^T, in place
  std::size_t ot = 0;     // f32 [Dv][Rp]: output accumulators O^T
  std::size_t keep = 0;   // f32 [Bc][Rp]: dropout keep factors (1 or 0)
  std::size_t rowf = 0;   // f32 [5][Rp]: running max (base 2), sum, rescale, key range
  std::size_t rowi = 0;   // int64 [2][Rp]: each row's attended key interval [lo, hi]
  std::size_t tmp = 0;    // f32 [max(Dqk, Dv) + 16]: one converted row
  std::size_t qt2 = 0;    // u32 [Dqk/2][Rp]: Q tile as bf16 pairs (bf16 dot path)
  std::size_t kb2 = 0;    // u32 [Bc][Dqk/2]: K block as bf16 pairs (bf16 dot path)
  std::size_t vp2 = 0;    // u32 [Bc/2][Dv]: V block, key pairs interleaved (bf16 dot path)
  std::size_t p2 = 0;     // u32 [Bc/2][Rp]: P^T as bf16 key pairs (bf16 dot path)
  std::size_t bytes = 0;  // total
};

// What a kernel of the chosen target takes: the lowered problem (include/sdpa_cts/params.h,
// made by kernels/lowered_problem.hpp) and the driver's choices for it.
struct Params : sdpa_cts_params {
  float softcap_f32 = 0;  // softcap in the kernel's f32 arithmetic
  bool bf16_dot = false;  // bf16 inputs through vdpbf16ps (avx512bf16 target only)
  ScratchLayout scratch;  // this problem's per-thread scratch
};

// One work item: rows [i0, i0 + ni) of query heads g0 .. g0 + ng - 1 of kv head hkv's group
// in batch element b. Tile row r is head g0 + r / ni, query i0 + r % ni.
struct Item {
  std::int64_t b = 0, hkv = 0, g0 = 0, ng = 1, i0 = 0, ni = 0;
};

// Computes one item: writes its rows of O and LSE. `scratch` has scratch.bytes bytes,
// 64-byte aligned, owned by the calling thread.
// Each per-target unit of flash_impl.hpp exports run_item_<target> of this type;
// flash_backend.cpp declares and dispatches them (kernels/cpu/isa_dispatch.hpp).
using RunItemFn = void(const Params&, const Item&, unsigned char* scratch);
using ItemFn = RunItemFn*;

}  // namespace sdpa::cpu::flash
