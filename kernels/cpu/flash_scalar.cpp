// cpu.flash compiled for the scalar SIMD target (see flash_impl.hpp; the build gives this
// file its instruction-set flags, and the driver calls it only when the CPU has them).
#define FLASH_TARGET scalar
#define FLASH_ENTRY run_item_scalar
#include "kernels/cpu/flash_impl.hpp"
