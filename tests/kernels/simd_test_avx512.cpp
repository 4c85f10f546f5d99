// The SIMD layer's checks compiled for the avx512 target (flags from sdpa_cts_isa_sources in
// tests/kernels/CMakeLists.txt; see simd_test_body.hpp).
#define SIMD_TEST_ENTRY run_avx512
#include "tests/kernels/simd_test_body.hpp"
