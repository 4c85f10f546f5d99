// Error magnitudes M of expected values: the scale against which a value that is the exact
// result rounded in some precision (the reference's f64, or a captured file's limited
// digits) may differ from the truth. A value correctly computed with unit roundoff u is
// within a small multiple of u * M of the exact result (docs/CONFORMANCE.md, golden/SCHEMA.md):
//
//   M(o)      = |o| + mag_a + mag_c + mag_g                 (the reference's magnitudes)
//   M(lse)    = |lse| + lse_mag_c + lse_mag_g + 1
//   M(weight) = |w| * (2 + |s_j| + a_j + lse_mag_c + lse_mag_g)
//
// with s_j the logit and a_j = |scale| sum_e |Q_ie K_je|, recomputed from the inputs.
#pragma once

#include <cstddef>
#include <vector>

#include "core/case_buffers.hpp"
#include "core/problem.hpp"
#include "reference/sdpa_reference.hpp"

namespace sdpa::conformance {

// M of output element x (logical [B, Hq, L, Dv] index) of row `row`, given its expected value.
double output_magnitude(const reference::Result& r, std::size_t x, std::size_t row,
                        double expected);

// M of the LSE of `row`, given its expected value.
double lse_magnitude(const reference::Result& r, std::size_t row, double expected);

// M of every attention weight ([B, Hq, L, S]), given the expected weights; 0 where the
// expected weight is 0 or not finite, or the key or query row does not exist.
std::vector<double> weight_magnitudes(const Problem& p, const InputPointers& in,
                                      const reference::Result& r,
                                      const std::vector<double>& expected);

}  // namespace sdpa::conformance
