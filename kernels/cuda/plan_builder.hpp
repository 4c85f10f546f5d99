// Builds the flat AttentionPlan (plan.hpp) of a Problem and its device Buffers; host side,
// shared by the CUDA backends' run().
#pragma once

#include "core/problem.hpp"
#include "kernels/backend.hpp"
#include "kernels/cuda/plan.hpp"

namespace sdpa::cuda::detail {

AttentionPlan make_plan(const Problem& p, const Buffers& buffers);

// The launch device of a resolved CUDA Device.
LaunchDevice launch_device(const Device& device);

}  // namespace sdpa::cuda::detail
