// The backward's two arithmetic engines, over one (b, key/value head) group: the query heads
// of the group in order, their dK/dV contributions summed into the group's arrays. Shared
// gathering (head_inputs.hpp) keeps the two engines different in arithmetic only.
#pragma once

#include <cstdint>
#include <vector>

#include "reference/head_inputs.hpp"

namespace sdpa::reference {

// One query head of the group and where its own gradients go.
struct BackwardHead {
  const HeadInputs* in;  // the gathered slice (b, hq)
  const double* d_out;   // [L_b][Dv] rows of dO (row stride Dv)
  double* dq;            // [L_b][Dqk] (row stride Dqk)
  double* ds;            // [L_b][ds_stride] or nullptr (no additive mask)
  std::int64_t ds_stride;
};

// The group's key/value gradients, [S_b][Dqk] and [S_b][Dv] (row strides Dqk, Dv).
struct BackwardGroup {
  double* dk;
  double* dv;
};

void backward_group_f64(const std::vector<BackwardHead>& heads, double dropout_p,
                        const BackwardGroup& out);
void backward_group_binary128(const std::vector<BackwardHead>& heads, double dropout_p,
                              const BackwardGroup& out);

}  // namespace sdpa::reference
