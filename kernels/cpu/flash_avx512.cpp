// cpu.flash compiled for the avx512 SIMD target (see flash_impl.hpp; the build gives this
// file its instruction-set flags, and the driver calls it only when the CPU has them).
#define FLASH_TARGET avx512
#define FLASH_ENTRY run_item_avx512
#include "kernels/cpu/flash_impl.hpp"
