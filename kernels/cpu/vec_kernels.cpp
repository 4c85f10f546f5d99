#include "kernels/cpu/vec_kernels.hpp"

#include "kernels/cpu/isa_dispatch.hpp"
#include "vec_kernels_impl_isas.hpp"

namespace sdpa::cpu::vk {

SDPA_CTS_ISA_DECLARE(vec_kernels_impl, TableFn, table)

const Table& table(IsaTarget target) {
  return SDPA_CTS_ISA_DISPATCH(vec_kernels_impl, TableFn, table, target)();
}

}  // namespace sdpa::cpu::vk
