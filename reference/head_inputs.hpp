// One (b, h) slice of a problem, gathered into contiguous f64 arrays, and the masking
// rules of SEMANTICS.md for it. Shared by both reference engines, so the two differ only
// in arithmetic.
#pragma once

#include <cstdint>
#include <vector>

#include "core/problem.hpp"
#include "reference/sdpa_reference.hpp"

namespace sdpa::reference {

struct HeadInputs {
  std::int64_t b = 0, h = 0, hk = 0;  // batch element, query head, its key/value head
  std::int64_t rows_q = 0;            // L_b, valid query rows
  std::int64_t rows_kv = 0;           // S_b, keys that exist
  std::int64_t dqk = 0, dv = 0;       // head dims
  double scale = 1;                   // effective logit scale
  double softcap = 0;                 // softcap c (0 = off)
  std::vector<double> q;              // [L_b][Dqk]
  std::vector<double> k;              // [S_b][Dqk]
  std::vector<double> v;              // [S_b][Dv]
  // Per (i, j) of the valid block: 1 if the structural masks and a bool mask allow the
  // key, and the additive bias (0 without one; -inf masks). [L_b][S_b].
  std::vector<std::uint8_t> allowed;
  std::vector<double> bias;  // empty without an additive mask
  // Dropout multiplier per (i, j): 0 when dropped, 1 when kept; empty without dropout.
  std::vector<std::uint8_t> kept;
};

// Gathers slice (b, h). Keys j >= S_b and rows i >= L_b are never read.
HeadInputs gather_head(const Problem& p, const Inputs& in, std::int64_t b, std::int64_t h);

// Where slice (b, h) writes in the logical result arrays.
struct HeadOutputs {
  double* o;            // [L][Dv] (row stride Dv)
  double* lse;          // [L]
  double* weights;      // [L][S] or nullptr
  double* mag_a;        // [L][Dv]
  double* mag_c;        // [L][Dv]
  double* mag_g;        // [L][Dv]
  double* mag_u;        // [L][Dv]
  double* mag_exp;      // [L]: the O magnitudes are stored times 2^-mag_exp
  double* lse_mag_c;    // [L]
  double* lse_mag_g;    // [L]
  std::int64_t len_kv;  // S, the row stride of weights
};

// Unnormalised softmax weights e_j = exp(s_j - max_k s_k) below this may underflow in the
// type a kernel holds P in: 2^-14 is the smallest normal f16 (f32 and bf16 underflow only
// below 2^-126). Result::mag_u sums over these keys.
constexpr double kUnderflowWeight = 0x1p-14;

// V near the f64 maximum: sum_j e_j d_j V_j (e_j <= 1) and the deviations d_j V_j - O (and
// the magnitudes built on them) can leave the f64 range although O cannot: it is a convex
// combination, over 1 - p. Such a head is computed with V scaled by 2^-kMagnitudeShift
// (exact for every value above 2^-894) and reports its O magnitudes in those units.
constexpr int kMagnitudeShift = 128;
// kMagnitudeShift when the head's V needs it, else 0 (the same rule in both engines).
int magnitude_shift(const HeadInputs& in, double dropout_p);

// The two arithmetic engines. Rows i >= L_b are left as the caller initialised them.
void compute_head_f64(const HeadInputs& in, double dropout_p, const HeadOutputs& out);
void compute_head_binary128(const HeadInputs& in, double dropout_p, const HeadOutputs& out);

}  // namespace sdpa::reference
