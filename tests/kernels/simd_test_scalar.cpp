// The SIMD layer's checks compiled for the scalar target (flags from sdpa_cts_isa_sources in
// tests/kernels/CMakeLists.txt; see simd_test_body.hpp).
#define SIMD_TEST_ENTRY run_scalar
#include "tests/kernels/simd_test_body.hpp"
