// Multi-head attention with torch.nn.MultiheadAttention semantics (SEMANTICS.md, "Multi-head
// attention front end"), built on the SDPA reference: the input projections, add_bias_kv,
// add_zero_attn and the mask merge are done here in f64, the attention itself is one
// reference::run_sdpa call, then out_proj. docs/MHA.md describes every step and where this
// reference departs from PyTorch on purpose.
//
// Index conventions (PyTorch's): query [L, B, E], key [S, B, kdim], value [S, B, vdim] and
// the output [L, B, E]; with batch_first the first two dimensions swap ([B, L, E]). A
// weight [out, in] is applied as y = W x + b (torch.nn.Linear). Head h owns the projected
// features [h * D, (h + 1) * D), D = E / H. S' = S + add_bias_kv + add_zero_attn is the key
// length the attention sees.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/problem.hpp"
#include "reference/sdpa_reference.hpp"

namespace sdpa::reference {

// Type of an MHA mask input.
enum class MhaMaskKind : std::uint8_t {
  none,      // no mask
  boolean,   // 0/1 values; 1 = IGNORE the key / NOT allowed (MHA convention, inverse of SDPA's)
  floating,  // added to the logits; -inf masks
};

struct MhaProblem {
  std::int64_t embed_dim = 8;             // E: query features, projected features, output features
  std::int64_t num_heads = 2;             // H: E % H == 0, head dim D = E / H
  std::optional<std::int64_t> kdim;       // key features; unset = E (PyTorch kdim=None)
  std::optional<std::int64_t> vdim;       // value features; unset = E (PyTorch vdim=None)
  bool use_separate_proj_weight = false;  // q/k/v_proj_weight instead of the packed in_proj_weight
                                          // (required when kdim or vdim != E)
  std::int64_t batch = 1;                 // B (PyTorch N)
  std::int64_t len_q = 1;                 // L: target (query) length
  std::int64_t len_kv = 1;                // S: source (key/value) length as given, before padding
  bool batch_first = false;               // query/key/value/output are [B, len, features]
  bool bias = true;                       // in_proj_bias [3E] and out_proj bias [E] exist
  bool add_bias_kv = false;               // append bias_k / bias_v as one more key/value row
  bool add_zero_attn = false;             // then append a zero key/value row (after projection)
  MhaMaskKind key_padding_mask = MhaMaskKind::none;  // [B, S]: bool 1 = IGNORE key; float added
  MhaMaskKind attn_mask = MhaMaskKind::none;         // rank 2/3 below: bool 1 = NOT allowed
  int attn_mask_rank = 2;            // 2: [L, S] for all (b, h); 3: [B*H, L, S], slice b*H + h
  bool need_weights = true;          // also return attention weights (PyTorch's default: true)
  bool average_attn_weights = true;  // weights [B, L, S'] averaged over heads, else [B, H, L, S']
  bool is_causal = false;            // hint: attn_mask IS the top-left causal mask; needs attn_mask
  double dropout_p = 0;              // dropout on the weights, [0, 1); PyTorch: only in training
  std::uint64_t dropout_seed = 0;    // Philox key of the SDPA keep-mask (SEMANTICS.md)
  std::uint64_t dropout_offset = 0;  // Philox counter offset of the keep-mask
};

// Derived sizes.
std::int64_t key_dim(const MhaProblem& p);          // kdim, or E when unset
std::int64_t value_dim(const MhaProblem& p);        // vdim, or E when unset
std::int64_t head_dim(const MhaProblem& p);         // D = E / H (0 when H <= 0)
std::int64_t attended_len_kv(const MhaProblem& p);  // S' = S + add_bias_kv + add_zero_attn

// Returns "" for a valid problem, else the first violated rule as "field: reason".
std::string validate(const MhaProblem& p);

// The f64 arrays of one call, contiguous row-major, shapes as in the comments (each must
// have exactly that many elements; an array that the problem does not use must be empty).
// Boolean masks hold 0 or 1.
struct MhaInputs {
  std::vector<double> query;             // [L, B, E] ([B, L, E] with batch_first)
  std::vector<double> key;               // [S, B, kdim] ([B, S, kdim] with batch_first)
  std::vector<double> value;             // [S, B, vdim] ([B, S, vdim] with batch_first)
  std::vector<double> in_proj_weight;    // [3E, E], rows q | k | v (packed only)
  std::vector<double> q_proj_weight;     // [E, E]    (use_separate_proj_weight only)
  std::vector<double> k_proj_weight;     // [E, kdim] (use_separate_proj_weight only)
  std::vector<double> v_proj_weight;     // [E, vdim] (use_separate_proj_weight only)
  std::vector<double> in_proj_bias;      // [3E], q | k | v (bias only)
  std::vector<double> bias_k;            // [E] (add_bias_kv only)
  std::vector<double> bias_v;            // [E] (add_bias_kv only)
  std::vector<double> out_proj_weight;   // [E, E]
  std::vector<double> out_proj_bias;     // [E] (bias only)
  std::vector<double> key_padding_mask;  // [B, S] (key_padding_mask != none only)
  std::vector<double> attn_mask;         // [L, S] or [B*H, L, S] (attn_mask != none only)
};

struct MhaResult {
  std::vector<double> out;      // [L, B, E] ([B, L, E] with batch_first): after out_proj
  std::vector<double> weights;  // need_weights: [B, L, S'] (averaged) or [B, H, L, S']; else empty
  Problem sdpa_problem;         // the SDPA problem run_mha built and ran
  Result sdpa;                  // its reference result: o [B, H, L, D] before out_proj, LSE,
                                // per-head weights (need_weights), error magnitudes
};

// The SDPA problem of an MHA call: f64, B, Hq = Hkv = H, L, S', Dqk = Dv = D, contiguous
// [B, H, rows, D] layouts, one merged additive mask (broadcast where the MHA masks do not
// vary), the dropout parameters, want_weights = need_weights. The problem must be valid.
Problem mha_sdpa_problem(const MhaProblem& p);

// Runs the MHA reference. Throws std::invalid_argument naming the field for an invalid
// problem, an input array of the wrong size, a boolean mask value other than 0 / 1, or an
// is_causal hint whose attn_mask is not the top-left causal mask. `threads` as run_sdpa.
MhaResult run_mha(const MhaProblem& p, const MhaInputs& in, int threads = 0);

}  // namespace sdpa::reference
