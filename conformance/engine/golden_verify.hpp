// Checking implementations against golden cases.
//
// compare_with_reference: the C++ reference (either precision) against the golden values.
// Both are meant to be the exact result rounded once to f64, so they must agree to a few
// f64 ulps of the error magnitudes: per element,
//
//   |ref - golden| <= c * (2^-53 + capture_unit(precision_digits)) * M + 2^-1074,
//   M(o)       = |o| + mag_a + mag_c + mag_g               (the reference's magnitudes)
//   M(lse)     = |lse| + lse_mag_c + lse_mag_g + 1
//   M(weight)  = |w| * (2 + |s_j| + a_j + lse_mag_c + lse_mag_g)
//
// (conformance/judge/magnitudes.hpp) and the worst c is reported: for a file of exact values the
// unit is the f64 rounding; for a capture of limited precision_digits its own rounding
// is added (conformance/judge/judge.hpp, golden/SCHEMA.md). NaN must meet NaN, and infinities
// must be equal.
//
// judge_backend: a backend against the golden values with the one judge
// (conformance/judge/judge.hpp), the golden file supplying the expected values.
#pragma once

#include <string>

#include "conformance/judge/judge.hpp"
#include "golden/golden_file.hpp"
#include "reference/sdpa_reference.hpp"

namespace sdpa::conformance {

using golden::GoldenCase;
using golden::MhaGoldenCase;

// For a backward case, the gradients too: M(g) of a gradient element is its bound for an f64
// computation (conformance/judge/gradient_tolerance.hpp with accumulation, P, dS and the
// outputs in f64) divided by 2^-53, the same scale as the forward's magnitudes.
struct Agreement {
  double o = 0, lse = 0, weights = 0;             // worst c over O, LSE and the weights
  std::string o_where, lse_where, weights_where;  // the element of each worst c
  double gradients = 0;                           // worst c over dQ, dK, dV (backward cases)
  std::string gradients_where;
  std::string mismatch;  // first NaN / inf mismatch ("" if none): a failure whatever c is
  double worst() const;  // max of the three c (infinity with a mismatch)
  std::string worst_where() const;
};

// Runs the reference on the golden inputs and measures the agreement.
Agreement compare_with_reference(const GoldenCase& g, reference::Precision precision,
                                 int threads = 0);

// Runs the MHA reference (reference::run_mha) on an MHA golden case. The reference rounds
// each stage to f64, so the magnitudes follow the stages: per output element r of a token,
//   M(out_r) = |out_r| + |b_o,r| + sum_e |W_o,re| (|o_e| + mag_a_e + mag_c_e + mag_g_e)
// (o and the magnitudes of the attention, e = h*D + d), and per head weight
//   M(w) = w (2 + |ln(w (1 - p))| + |lse| + a_j + lse_mag_c + lse_mag_g)
// with a_j from the projected Q and K (averaged weights: the mean over heads). Results are
// reported in `o` (the output) and `weights`.
Agreement compare_mha_with_reference(const MhaGoldenCase& g, int threads = 0);

// Runs `backend` on the golden inputs and judges its outputs against the golden values.
CaseOutcome judge_backend(const Backend& backend, GoldenCase& g, const Device& device,
                          const RunOptions& options = {}, const ToleranceTable& table = {});

}  // namespace sdpa::conformance
