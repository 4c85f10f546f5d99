// Test-only CPU backends with fixed, simple capabilities, so the dispatcher tests do not
// depend on the real CPU kernels (kernels/cpu/), plus the registry the tests use:
// the fakes first, then the real CUDA descriptors, as kernels/registry.cpp orders them.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "core/case_id.hpp"
#include "core/device.hpp"
#include "kernels/backend.hpp"
#include "kernels/cuda/cuda_backends.hpp"
#include "kernels/lowered_problem.hpp"

namespace sdpa::testing {

class FakeCpuBackend final : public Backend {
 public:
  FakeCpuBackend(std::string name, Capabilities caps) : name_(std::move(name)), caps_(caps) {}
  std::string_view name() const override { return name_; }
  const Capabilities& capabilities() const override { return caps_; }
  PrecisionContract precision(DType) const override { return {}; }
  Support supports(const LoweredProblem& lowered, const Device& d) const override {
    const Problem& p = lowered.source();
    Support s;
    check_capabilities(caps_, p, d, s);
    return s;
  }
  void run(const LoweredProblem& lowered, const Device&, const RunOptions&) const override {
    throw std::logic_error(name_ + ": a test double does not run");
  }

 private:
  std::string name_;
  Capabilities caps_;
};

// cpu.flash: no dropout, dv == dqk, no windows / softcap / varlen / weights, stride-1 rows.
inline const Backend& fake_cpu_flash() {
  static const FakeCpuBackend b("cpu.flash", [] {
    Capabilities c = Capabilities::every_forward_input();
    c.dtypes = {DType::f64, DType::f32, DType::f16, DType::bf16};
    c.different_v_dim = false;
    c.weights = false;
    c.dropout = false;
    c.window = false;
    c.softcap = false;
    c.padded_seqlens = false;
    c.packed_seqlens = false;
    c.last_dim_contiguous = true;
    c.empty_problems = false;
    c.deterministic = true;
    return c;
  }());
  return b;
}

// cpu.mem_efficient (split-KV): everything but dropout and the weights output.
inline const Backend& fake_cpu_mem_efficient() {
  static const FakeCpuBackend b("cpu.mem_efficient", [] {
    Capabilities c = Capabilities::every_forward_input();
    c.dtypes = {DType::f64, DType::f32, DType::f16, DType::bf16};
    c.dropout = false;
    c.weights = false;
    c.deterministic = true;
    c.traits.split_kv = true;
    return c;
  }());
  return b;
}

// cpu.math: everything, weights included.
inline const Backend& fake_cpu_math() {
  static const FakeCpuBackend b("cpu.math", [] {
    Capabilities c = Capabilities::every_forward_input();
    c.dtypes = {DType::f64, DType::f32, DType::f16, DType::bf16};
    c.weights = true;
    c.deterministic = true;
    c.traits.pytorch = PytorchKernel::math;
    return c;
  }());
  return b;
}

inline const std::vector<const Backend*>& test_registry() {
  static const std::vector<const Backend*> r = {
      &fake_cpu_flash(),      &fake_cpu_mem_efficient(),      &fake_cpu_math(),
      &cuda::flash_backend(), &cuda::mem_efficient_backend(), &cuda::math_backend(),
      &cuda::cudnn_backend()};
  return r;
}

inline Problem problem(const std::string& case_id) {
  return parse_case_id_or_throw(case_id).problem;
}
inline Device device(const std::string& name) { return parse_device_or_throw(name); }

// A list of reasons for a failure message, one per line ("(none)" when empty).
inline std::string show(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += "\n  - " + x;
  return s.empty() ? " (none)" : s;
}

}  // namespace sdpa::testing
