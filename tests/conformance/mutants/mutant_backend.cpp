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
  caps_ = Capabilities::every_forward_input();
  caps_.dtypes = {DType::f64, DType::f32, DType::f16, DType::bf16};
  caps_.device = DeviceKind::cpu;
  caps_.weights = false;  // an online-softmax kernel never materialises P
}

PrecisionContract MutantBackend::precision(DType dtype) const {
  PrecisionContract c;
  c.accumulate = dtype == DType::f64 ? DType::f64 : DType::f32;
  c.p_type = c.accumulate;
  c.online_softmax = true;
  c.key_block = kKeyBlock;
  return c;
}

Support MutantBackend::supports(const LoweredProblem& lowered, const Device& device) const {
  const Problem& p = lowered.source();
  Support s;
  check_capabilities(caps_, p, device, s);
  return s;
}

void MutantBackend::run(const LoweredProblem& lowered, const Device&, const RunOptions&) const {
  const Problem& p = lowered.source();
  const Buffers buffers = lowered.buffers();
  mutant_attention(p, buffers, mutation_);
}

}  // namespace sdpa::testing
