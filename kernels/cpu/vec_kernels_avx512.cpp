// The avx512 instance of the vector kernels (see vec_kernels_impl.hpp).
#define SDPA_VK_TARGET avx512
#define SDPA_VK_NS avx512_impl
#define SDPA_VK_NAME "avx512"
#include "kernels/cpu/vec_kernels_impl.hpp"

namespace sdpa::cpu::vk {
const Table& avx512_table() { return avx512_impl::get_table(); }
}  // namespace sdpa::cpu::vk
