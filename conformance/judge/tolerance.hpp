// The per-element error bound of docs/CONFORMANCE.md, from a backend's precision contract and the
// reference's error magnitudes:
//
//   tol_id = u_out |O_id| + (u_p + k_S u_acc) A_id + k_E u_acc G_id + k_x u_acc C_id
//            + u_sub U_id + floor
//
// with k_S = safety * sqrt(S_b) (accumulation over keys), k_E = safety * sqrt(Dqk)
// (dot products), each at least tensor_core_growth(n) when the contract declares tensor-core
// accumulation, k_x = safety * (2 + rescales) (logit rounding, exp, and one rounding per
// online-softmax rescale), u_sub = half the subnormal spacing of P's types times U (the
// reference's mag_u: |V| summed over keys whose weight may underflow) and floor = the
// output type's subnormal spacing plus (S_b + 1) of the accumulator's (rounding of results
// in the subnormal range is absolute, not relative). The LSE bound:
//
//   tol_lse = u_held |LSE| + k_L u_acc + k_x u_acc lse_mag_c + k_E u_acc lse_mag_g
//
// with k_L = safety * sqrt(S_b) (the row sum's accumulation, never a tensor core's) and u_held
// the rounding of the type the LSE is held in: 2^-24 for the f32 output; for the LSE inside
// the weights and the backward's P, lse_held_rounding().
//
// The factors are data (ToleranceTable) with a version, so a report can say which table
// judged it.
#pragma once

#include <cstdint>
#include <string>

#include "core/problem.hpp"
#include "kernels/backend.hpp"
#include "reference/sdpa_reference.hpp"

namespace sdpa::conformance {

// Every constant of the judge's bounds. A change of any of them is a new version, recorded
// with its reason in docs/CONFORMANCE.md ("Versions of the table"); the version is in every
// report and bundle.
struct ToleranceTable {
  std::string version = "2026-12-9";  // bump when any constant below changes
  double safety = 4.0;                // multiplies the probabilistic growth factors

  // Attention weights P = exp(s - LSE): tol = u_out (weights_p_growth + P) P
  //   + weights_acc_roundings u_acc P + weights_lse_factor tol_LSE(row) P + floor.
  double weights_p_growth = 4.0;        // roundings of s - LSE and exp, relative to P
  double weights_acc_roundings = 64.0;  // accumulator roundings of the row's LSE, relative to P
  double weights_lse_factor = 2.0;      // the row's LSE bound stands for s_j's error, twice

  // Quality gate (QUALITY_WARNING): the kernel's max error against the exact result may be at
  // most quality_naive_factor times the naive same-precision algorithm's (the worse of its
  // summation orders, naive_baseline.hpp) plus quality_output_roundings output roundings of
  // the largest |O|.
  double quality_naive_factor = 2.0;
  double quality_output_roundings = 8.0;

  // The gradients' bound (gradient_tolerance.hpp): roundings of dS = P (dP - D) t' relative to
  // |dS| (the subtraction and the two products), and the absolute roundings of softcap's
  // derivative t' = 1 - tanh^2 (tanh's and the square's, doubled by the cancellation near 1).
  double grad_ds_roundings = 2.0;
  double grad_softcap_roundings = 4.0;
};

// The spacing of the subnormal numbers of a type (2^-149 for f32, 2^-24 for f16, ...): the
// absolute rounding step below its smallest normal.
double subnormal_spacing(DType t);

// The resolved factors for one problem and contract.
struct ToleranceFactors {
  double u_out = 0, u_p = 0, u_acc = 0;  // unit roundoffs
  double k_s = 0, k_e = 0, k_x = 0;      // growth factors
  double k_l = 0;                        // growth of the LSE's row sum
  double u_sub = 0;                      // absolute error of an underflowing P, per |V|
  double floor = 0;                      // absolute floor
  // The rounding of the LSE that the weights and the backward's P = exp(s - LSE) are computed
  // from (lse_held_rounding below).
  double u_lse_held = 0;
};

// The unit roundoff of the LSE output, which is f32 whatever the dtype (params.h).
inline constexpr double kLseOutputRounding = 0x1p-24;

// The rounding of the LSE that P is recomputed from, for the weights' and the gradients'
// bounds, derived from the contract and the case: when the case asks for the LSE output, the
// kernel may read back the f32 LSE it wrote (FlashAttention's backward does), so f32's 2^-24;
// otherwise the LSE never leaves the kernel and is held in its accumulator type (u_acc: 2^-53
// for an f64-accumulating contract, where a fixed 2^-24 made the gradients' bound about 1e-7
// relative and let a backward that rounds dS to f32 pass every f64 case; table 2026-12-9).
double lse_held_rounding(const Problem& p, const PrecisionContract& c);

// The worst-case error of a sum of n products through the contract's tensor-core block FMAs,
// in units of u_acc times the sum of the products' magnitudes: per block, each of its
// mma_block products and the accumulator truncated up to 2^-(23 + extra bits) of the largest
// term, and the result truncated up to 2^-23 of itself:
//   ceil(n / mma_block) * (2 + (mma_block + 1) * 2^(1 - mma_extra_bits)).
// 0 when the contract declares none.
double tensor_core_growth(const PrecisionContract& c, std::int64_t n);

ToleranceFactors tolerance_factors(const Problem& p, const PrecisionContract& c, std::int64_t s_b,
                                   const ToleranceTable& table = {});

// Bound for output element (row, d) of the reference's logical arrays; `row` indexes
// [B, Hq, L] flattened.
double output_tolerance(const ToleranceFactors& f, const reference::Result& r, std::int64_t row,
                        std::int64_t d, std::int64_t dv);
// Bound of the row's LSE held with unit roundoff `u_held`: the f32 output's (the default) for
// the LSE output itself, f.u_lse_held for the LSE inside the weights' and the gradients' P.
double lse_tolerance(const ToleranceFactors& f, const reference::Result& r, std::int64_t row,
                     double u_held = kLseOutputRounding);

// Bound of an attention weight P whose exact value is `p_exact`, in row `row` ([B, Hq, L]
// flattened), with `f` the factors of the row's problem at S keys:
//   tol = u_out (weights_p_growth + P) P + weights_acc_roundings u_acc P
//         + weights_lse_factor tol_LSE'(row) P + floor
// P_j = exp(s_j - LSE): besides the rounding of P itself, its relative error is the error of
// s_j - LSE. The LSE bound (dot-product and logit-magnitude terms, P-weighted over the row),
// with the LSE's own rounding u_lse_held, stands for both, twice (table 2026-12-2; before it
// the logit term was missing and correct weights failed at large logits, Dqk or scale).
double weights_tolerance(const ToleranceFactors& f, const reference::Result& r, std::int64_t row,
                         double p_exact, const ToleranceTable& table);

}  // namespace sdpa::conformance
