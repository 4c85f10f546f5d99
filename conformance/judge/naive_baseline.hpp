// The second gate of docs/TESTING.md (after FlashAttention's tests): the naive algorithm run in
// the same low precision as the backend, whose error a backend may not exceed by more than
// 2x. Naive = materialise the logits row in the accumulation type, softmax with max
// subtraction, P (rounded to the contract's P type) times V, one rounding to the output.
#pragma once

#include <vector>

#include "kernels/backend.hpp"
#include "reference/sdpa_reference.hpp"

namespace sdpa::conformance {

// O of the naive algorithm as logical [B, Hq, L, Dv] doubles (values of the output type).
// "The same low precision" is the problem's, not the backend's declared contract (a backend
// may not excuse itself by declaring a loose one): accumulation in f32 (f64 for f64
// problems) and P rounded to the input type before P.V, as FlashAttention's tests do.
// Same masking and dropout as the reference. `order` is the order of every sum (the dot
// products over the head dim, the softmax sum and P.V over keys): both are the naive
// algorithm, and where rounding of large logits dominates, the worst element's error differs
// between them by a factor of several, so the gate takes the larger of the two.
enum class SumOrder { forward, reverse };
std::vector<double> naive_low_precision(const Problem& p, const reference::Inputs& in,
                                        SumOrder order = SumOrder::forward);

}  // namespace sdpa::conformance
