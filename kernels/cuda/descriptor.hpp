// Common base of the CUDA descriptor backends (internal to kernels/cuda/).
#pragma once

#include <string>
#include <string_view>

#include "kernels/cuda/cuda_memory.hpp"
#include "kernels/cuda/cuda_rules.hpp"

namespace sdpa::cuda::detail {

class DescriptorBackend : public Backend {
 public:
  DescriptorBackend(std::string name, Capabilities caps)
      : name_(std::move(name)), caps_(std::move(caps)) {}
  std::string_view name() const override { return name_; }
  const Capabilities& capabilities() const override { return caps_; }
  void run(const LoweredProblem&, const Device&, const RunOptions&) const override {
    no_kernels(name_, caps_.traits.model_only);
  }
  MemorySpace run_memory_space(const Device& device) const override {
    return cuda::run_memory_space(caps_, device);
  }

 private:
  std::string name_;
  Capabilities caps_;
};

}  // namespace sdpa::cuda::detail
