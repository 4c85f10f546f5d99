// example.naive: the smallest complete backend, the template for adding one
// (docs/KERNELS.md "Adding a backend"). Plain loops, f64 arithmetic, host memory.
#pragma once

#include "kernels/backend.hpp"

namespace sdpa::example {

const Backend& naive_backend();

}  // namespace sdpa::example
