// The per-element bound of the gradients (docs/CONFORMANCE.md, "The gradients' bound"), from
// a backend's precision contract, the forward's bound and the reference's exact values.
//
// First-order error propagation through the backward's formulas, every term with absolute
// values, so that no cancellation in the exact gradient makes the bound smaller than the
// errors of its terms. With u_a the accumulator's unit roundoff, u_p the rounding of P and
// dS (0 when the contract keeps them in the accumulator), k_E = safety sqrt(Dqk),
// k_V = safety sqrt(Dv), k_x the forward's exp/rescale factor, and for one attended (i, j):
//
//   delta_ij = u_a (k_x (1 + |s_ij|) + k_E a_ij) + lse_factor tol_LSE'(i)  relative error of P
//   e_D(i)   = k_V u_a sum_d |dO_id O_id| + sum_d |dO_id| tol_O(i, d)      error of D = dO . O
//   e_dS(ij) = t'_ij P_ij (delta_ij |dP_ij - D_i| + z_ij k_V u_a sum_d |dO_id V_jd| + e_D(i))
//              + |dS_ij| ((u_p + r_dS u_a) t'_ij + e_t'(ij))                error of dS
//
// (tol_LSE' is the LSE's bound with its own rounding u_held, lse_held_rounding(): f32's when
// the case asks for the LSE, which the backward may read back, else the accumulator's;
// t' is softcap's derivative 1 - tanh^2, 1 without softcap, and e_t' its error: the logit's
// error through 2 |tanh| t' plus r_t' u_a of its own roundings; r_dS and r_t' are the table's
// grad_ds_roundings and grad_softcap_roundings; z_ij the
// dropout multiplier 0 or 1 / (1 - p)), then for each gradient the sum of its terms' errors
// plus the rounding of its accumulation (k_N = safety sqrt(N), N = S_b for dQ and L_b times
// the group size for dK, dV), its output rounding u_out |g| and the floor:
//
//   tol_dQ(i, e) = |scale| sum_j (|K_je| e_dS(ij) + k_S u_a |dS_ij t'_ij K_je|) + u_out |dQ_ie| +
//   floor tol_dK(j, e) = |scale| sum_i (|Q_ie| e_dS(ij) + k_N u_a |dS_ij t'_ij Q_ie|) + u_out
//   |dK_je| + floor tol_dV(j, d) = sum_i P_ij z_ij |dO_id| (delta_ij + u_p + k_N u_a) + u_out
//   |dV_jd| + floor
//
// d bias (an additive mask's gradient, dS itself: no t', summed over the mask's broadcast
// dimensions, M terms per stored element): tol_dbias(m) = sum over the (b, h, i, j) of m of
// (e_dS without t' + k_M u_a |dS_ij|) + u_out |dbias_m| + floor, k_M = safety sqrt(M).
//
// Rounding below a type's smallest normal is absolute: P, computed in the accumulation type,
// carries up to half its subnormal spacing (s_a / 2: adds t' |dP - D| s_a / 2 to e_dS and
// z s_a / 2 to each dV term's weight, as the forward's u_sub term does for O), and with P and
// dS rounded to a narrower type (u_p > 0) each rounded operand half that type's spacing too
// (added to e_dS, and to each dV term's weight). A contract with per-head
// rounding of dK and dV before the group sum adds u_out times each head's terms. The constants are
// the forward's table (ToleranceTable), with its version.
#pragma once

#include <optional>
#include <vector>

#include "conformance/judge/tolerance.hpp"
#include "core/case_buffers.hpp"
#include "reference/sdpa_backward.hpp"

namespace sdpa::conformance {

// Bounds of every gradient element, logical arrays shaped like reference::Gradients'
// (0 where the exact gradient is 0 by structure: padding rows, absent keys).
struct GradientTolerances {
  std::vector<double> dq;  // [B, Hq, L, Dqk]
  std::vector<double> dk;  // [B, Hkv, S, Dqk]
  std::vector<double> dv;  // [B, Hkv, S, Dv]
  std::vector<double> dbias;  // [mask_elements(p)] when the problem asks for d bias
};

// `forward` is the reference's forward of `p` on `in` (its O, LSE and magnitudes give the
// forward's bound); `exact` the reference's gradients for `d_out` (logical [B, Hq, L, Dv]).
// `output_type` is the type the outputs (O, and the gradients) are rounded to: the problem's
// dtype for a kernel; f64 for the magnitudes of an f64 computation (golden verification).
GradientTolerances gradient_tolerances(const Problem& p, const InputPointers& in,
                                       const std::vector<double>& d_out,
                                       const reference::Result& forward,
                                       const reference::Gradients& exact,
                                       const PrecisionContract& contract,
                                       const ToleranceTable& table = {},
                                       std::optional<DType> output_type = std::nullopt);

}  // namespace sdpa::conformance
