#include "tests/conformance/mutants/mutant_backend.hpp"

#include "tests/conformance/mutants/mutant_kernel.hpp"

namespace sdpa::testing {
namespace {

std::string backend_name(Mutation m) {
  if (m == Mutation::none) return "mutant.control";
  for (const auto& info : mutation_catalog()) {
    if (info.mutation == m) return "mutant." + std::string(info.name);
  }
  return "mutant.unknown";
}

}  // namespace

MutantBackend::MutantBackend(Mutation m) : mutation_(m), name_(backend_name(m)) {
  caps_.dtypes = {DType::f64, DType::f32, DType::f16, DType::bf16};
  caps_.device = DeviceKind::cpu;
  caps_.weights_output = false;  // an online-softmax kernel never materialises P
}

PrecisionContract MutantBackend::precision(DType dtype) const {
  PrecisionContract c;
  c.accumulate = dtype == DType::f64 ? DType::f64 : DType::f32;
  c.p_type = c.accumulate;
  c.online_softmax = true;
  c.key_block = kKeyBlock;
  return c;
}

Support MutantBackend::supports(const Problem& p, const Device& device) const {
  Support s;
  check_capabilities(caps_, p, device, s);
  return s;
}

void MutantBackend::run(const Problem& p, const Buffers& buffers, const Device&,
                        const RunOptions&) const {
  mutant_attention(p, buffers, mutation_);
}

}  // namespace sdpa::testing
