#include "kernels/cpu/vec_kernels.hpp"

namespace sdpa::cpu::vk {

const Table& table(IsaTarget target) {
  switch (target) {
    case IsaTarget::scalar:
      return scalar_table();
    case IsaTarget::avx2:
      return avx2_table();
    case IsaTarget::avx512:
    case IsaTarget::avx512bf16:
      return avx512_table();
  }
  return scalar_table();
}

}  // namespace sdpa::cpu::vk
