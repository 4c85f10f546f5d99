// The scalar instance of the vector kernels (see vec_kernels_impl.hpp).
#define SDPA_VK_TARGET scalar
#define SDPA_VK_NS scalar_impl
#define SDPA_VK_NAME "scalar"
#include "kernels/cpu/vec_kernels_impl.hpp"

namespace sdpa::cpu::vk {
const Table& scalar_table() { return scalar_impl::get_table(); }
}  // namespace sdpa::cpu::vk
