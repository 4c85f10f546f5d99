// The Problem descriptor: one SDPA call, everything SEMANTICS.md defines.
//
// Index conventions (SEMANTICS.md): Q [B, Hq, L, Dqk], K [B, Hkv, S, Dqk],
// V [B, Hkv, S, Dv], O [B, Hq, L, Dv], optional mask [B, Hq, L, S] (broadcast by stride 0),
// LSE [B, Hq, L] (f32, contiguous), attention weights [B, Hq, L, S] (dtype, contiguous).
// Strides are in elements. With packed variable lengths the batch dimension disappears:
// Q/K/V/O hold the rows of all batch elements one after another (cu_seqlens offsets), so
// stride[0] is unused and row r of batch element b is row cu_seqlens[b] + r.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/tensor_view.hpp"

namespace sdpa {

// Which diagonal a causal mask or a window is aligned to.
enum class Align : std::uint8_t {
  top_left,      // offset 0: query i sees key j <= i
  bottom_right,  // offset S_b - L_b: the last query sees the last key
};

// The structural causal mask.
enum class Causal : std::uint8_t { none, top_left, bottom_right };

// A sliding window: attend iff i + off - left <= j <= i + off + right; a negative bound
// means unbounded on that side.
struct Window {
  bool enabled = false;           // false: no window restriction
  std::int64_t left = -1;         // keys allowed before the diagonal, < 0 = unbounded
  std::int64_t right = -1;        // keys allowed after the diagonal, < 0 = unbounded
  Align align = Align::top_left;  // which diagonal `off` refers to
};

// An explicit mask tensor of logical shape [B, Hq, L, S].
enum class MaskKind : std::uint8_t {
  none,      // no mask tensor
  boolean,   // uint8, 1 = attend, 0 = masked (PyTorch SDPA convention)
  additive,  // in the problem's dtype, added to the logits; -inf masks
};

// Bit flags for dimensions of the mask tensor that are broadcast (stride 0).
enum MaskBroadcast : std::uint8_t {
  kBroadcastB = 1,
  kBroadcastH = 2,
  kBroadcastL = 4,
  kBroadcastS = 8,
};

// Strides and allocation offset of one tensor.
struct TensorLayout {
  std::array<std::int64_t, 4> stride{};  // element strides of (b, h, row, d); b unused when packed
  std::int64_t base_offset = 0;          // elements between the allocation start and element 0
};

struct Problem {
  std::int64_t batch = 1;        // B
  std::int64_t heads_q = 1;      // Hq, query heads
  std::int64_t heads_kv = 1;     // Hkv, key/value heads; Hq % Hkv == 0 (GQA groups contiguous)
  std::int64_t len_q = 1;        // L, query length (the maximum over batch elements)
  std::int64_t len_kv = 1;       // S, key length (the maximum over batch elements)
  std::int64_t head_dim_qk = 1;  // Dqk, head dimension of Q and K
  std::int64_t head_dim_v = 1;   // Dv, head dimension of V and O
  DType dtype = DType::f32;      // element type of Q, K, V, O and an additive mask

  TensorLayout q;  // layout of Q
  TensorLayout k;  // layout of K
  TensorLayout v;  // layout of V
  TensorLayout o;  // layout of O (must not overlap itself)

  Causal causal = Causal::none;     // structural causal mask
  Window window;                    // sliding window, ANDed with the other masks
  MaskKind mask = MaskKind::none;   // explicit mask tensor
  std::uint8_t mask_broadcast = 0;  // MaskBroadcast flags; the mask is contiguous otherwise

  std::vector<std::int64_t> seqlens_q;   // L_b per batch element; empty = all L
  std::vector<std::int64_t> seqlens_kv;  // S_b per batch element; empty = all S
  bool packed = false;                   // rows packed back to back (cu_seqlens layout)

  double softcap = 0;                // c > 0: s = c * tanh(s / c) before masks; 0 = off
  std::optional<double> scale;       // logit scale; default 1 / sqrt(Dqk)
  double dropout_p = 0;              // dropout probability in [0, 1)
  std::uint64_t dropout_seed = 0;    // Philox key of the keep-mask
  std::uint64_t dropout_offset = 0;  // Philox counter offset of the keep-mask

  bool want_lse = false;      // also produce LSE [B, Hq, L] (f32)
  bool want_weights = false;  // also produce attention weights [B, Hq, L, S] (after dropout)
  bool backward = false;      // also compute dQ, dK, dV for an upstream gradient dO (case ID
                              // flag `bwd`)
  bool bias_grad = false;     // also d bias, the additive mask's gradient, in the mask's own
                              // storage (summed over its broadcast dimensions; flag `dbias`;
                              // needs backward and an additive mask)
};

// The scale actually used (the default when none is set).
double effective_scale(const Problem& p);

// Valid query / key lengths of batch element b.
std::int64_t seqlen_q(const Problem& p, std::int64_t b);
std::int64_t seqlen_kv(const Problem& p, std::int64_t b);

// Exclusive prefix sums of the lengths (B + 1 entries), the packed row offsets.
std::vector<std::int64_t> cu_seqlens_q(const Problem& p);
std::vector<std::int64_t> cu_seqlens_kv(const Problem& p);

// Rows a tensor of the Q side / KV side holds: L or S, or the packed totals.
std::int64_t rows_q(const Problem& p);
std::int64_t rows_kv(const Problem& p);

// Views (shape + strides) of each tensor as allocated; with packing, shape[0] is 1.
StridedView q_view(const Problem& p);
StridedView k_view(const Problem& p);
StridedView v_view(const Problem& p);
StridedView o_view(const Problem& p);
// Mask view [B, Hq, L, S] with broadcast dimensions at stride 0.
StridedView mask_view(const Problem& p);
// Stored elements of the mask tensor (and of d bias): the product of its sizes along the
// dimensions it does not broadcast; mask_view's strides give each (b, h, i, j) its element.
std::int64_t mask_elements(const Problem& p);
// The LSE output: [B, Hq, L] f32, contiguous (as [B, Hq, L, 1]).
StridedView lse_view(const Problem& p);
// The attention-weights output: [B, Hq, L, S] in dtype, contiguous.
StridedView weights_view(const Problem& p);

// The one packed-row offset formula: element offset (from element 0) of row `row`, element
// `d` of head `h` of batch element `b` in tensor `t`. `row` is the stored row: in the
// padded layout the row index i itself, with packing cu_seqlens[b] + i (and b then adds
// nothing: packed tensors have one batch of rows).
inline std::int64_t element_offset(const TensorLayout& t, bool packed, std::int64_t b,
                                   std::int64_t h, std::int64_t row, std::int64_t d) {
  return (packed ? 0 : b * t.stride[0]) + h * t.stride[1] + row * t.stride[2] + d * t.stride[3];
}

// Named stride patterns.
enum class LayoutKind : std::uint8_t {
  bhsd,  // [B, H, rows, D] contiguous (PyTorch default)
  bshd,  // [B, rows, H, D] contiguous: the 3-D [B, L, H*D] packing of ONNX / packed QKV
};
// Sets the layouts of Q, K, V and O to a named pattern with `gap` extra elements after
// every row of D elements (bhsd) or of H*D elements (bshd) and the given base offset.
void apply_layout(Problem& p, LayoutKind kind, std::int64_t gap, std::int64_t base_offset);

// The one validation function. Returns "" for a valid problem, else the reason it is
// INVALID (the first violated rule, naming the field).
std::string validate(const Problem& p);

}  // namespace sdpa
