// The avx2 instance of the vector kernels (see vec_kernels_impl.hpp).
#define SDPA_VK_TARGET avx2
#define SDPA_VK_NS avx2_impl
#define SDPA_VK_NAME "avx2"
#include "kernels/cpu/vec_kernels_impl.hpp"

namespace sdpa::cpu::vk {
const Table& avx2_table() { return avx2_impl::get_table(); }
}  // namespace sdpa::cpu::vk
