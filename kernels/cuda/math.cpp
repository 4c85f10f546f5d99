// cuda.math: PyTorch's MATH path on a GPU, which its select_sdp_backend (cuda/sdp_utils.cpp)
// takes whenever the math flag is on, with no checks: it accepts every valid problem on a
// CUDA device. docs/DISPATCH.md. With CUDA in the build, run() is the kernel of
// math_kernel.cu (cuBLAS and a softmax kernel); the problem reaches it flattened as the
// lowered problem (include/sdpa_cts/params.h, kernels/lowered_problem.hpp).
#include <stdexcept>

#include "core/problem.hpp"
#include "kernels/cuda/descriptor.hpp"
#include "kernels/cuda/launch_device.hpp"
#include "kernels/lowered_problem.hpp"

namespace sdpa::cuda {

namespace {

Capabilities math_caps() {
  Capabilities c = Capabilities::every_forward_input();
  c.device = DeviceKind::cuda;
  c.dtypes = {DType::f64, DType::f32, DType::f16, DType::bf16};
  c.weights = true;  // it materialises P
  c.deterministic = true;
  c.batch_invariant = false;  // GEMM algorithms may change with the batch size
  c.memory = MemorySpace::cuda_device;
  c.traits.pytorch = PytorchKernel::math;
  return c;
}

class Math final : public detail::DescriptorBackend {
 public:
  Math() : DescriptorBackend("cuda.math", math_caps()) {}

  PrecisionContract precision(DType dtype) const override {
    // f16 / bf16 are upcast to f32 (PyTorch's default math precision on CUDA).
    PrecisionContract c;
    c.accumulate = dtype == DType::f64 ? DType::f64 : DType::f32;
    c.p_type = c.accumulate;
    return c;
  }

  Support supports(const LoweredProblem& p, const Device& device) const override {
    Support s;
    if (!detail::check_cuda_device(capabilities(), device, s)) return s;
    if (device.cuda.emulated) {
      s.decline("the host emulator runs the fused kernels only; cuda.math is cuBLAS");
      return s;
    }
    check_capabilities(capabilities(), p, device, s);
    return s;
  }

#ifdef SDPA_CTS_HAVE_CUDA
  void run(const LoweredProblem& p, const Device&, const RunOptions&) const override {
    detail::run_math(p.params());
  }
#endif
};

}  // namespace

const Backend& math_backend() {
  static const Math b;
  return b;
}

}  // namespace sdpa::cuda
