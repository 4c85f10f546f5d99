#include "kernels/cpu/vec_kernels.hpp"

namespace sdpa::cpu::vk {

const Table& table(SimdTarget target) {
  switch (target) {
    case SimdTarget::scalar:
      return scalar_table();
    case SimdTarget::avx2:
      return avx2_table();
    case SimdTarget::avx512:
    case SimdTarget::avx512bf16:
      return avx512_table();
  }
  return scalar_table();
}

}  // namespace sdpa::cpu::vk
