// The fragment probe on a GPU: the body of fragment_probe_body.hpp launched by the generic
// CUDA runtime on one warp, its inputs and words in device memory.
#include <stdexcept>
#include <string>

#include "core/dtype.hpp"
#include "kernels/cuda/cuda_runtime.cuh"
#include "kernels/cuda/probe/fragment_probe.hpp"
#include "kernels/cuda/probe/fragment_probe_body.hpp"

namespace sdpa::cuda::probe {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw std::runtime_error(std::string("fragment probe: ") + what + ": " + cudaGetErrorString(e));
  }
}

// Device memory for the probe's duration.
struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(std::size_t bytes) { check(cudaMalloc(&p, bytes), "cudaMalloc"); }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

template <class T>
ProbeWords on_gpu(const ProbeCase& c) {
  std::vector<std::uint16_t> a(256), b(256);
  for (std::size_t i = 0; i < 256; ++i) {
    a[i] = c.bf16 ? sdpa::float_to_bf16(c.a[i]) : sdpa::float_to_half(c.a[i]);
    b[i] = c.bf16 ? sdpa::float_to_bf16(c.b[i]) : sdpa::float_to_half(c.b[i]);
  }
  ProbeWords out(32 * detail::probe::kWordsPerLane, 0);
  DeviceBuffer da(a.size() * 2), db(b.size() * 2), dc(c.c.size() * 4), dout(out.size() * 4);
  check(cudaMemcpy(da.p, a.data(), a.size() * 2, cudaMemcpyHostToDevice), "cudaMemcpy A");
  check(cudaMemcpy(db.p, b.data(), b.size() * 2, cudaMemcpyHostToDevice), "cudaMemcpy B");
  check(cudaMemcpy(dc.p, c.c.data(), c.c.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy C");
  detail::CudaRuntime rt("fragment probe");
  rt.launch(detail::probe::FragmentProbeBody<T>{static_cast<const std::uint16_t*>(da.p),
                                                static_cast<const std::uint16_t*>(db.p),
                                                static_cast<const float*>(dc.p),
                                                static_cast<std::uint32_t*>(dout.p)},
            1);
  rt.finish();
  check(cudaMemcpy(out.data(), dout.p, out.size() * 4, cudaMemcpyDeviceToHost), "cudaMemcpy out");
  return out;
}

}  // namespace

ProbeWords run_on_gpu(const ProbeCase& c) {
  return c.bf16 ? on_gpu<detail::bf16_t>(c) : on_gpu<detail::f16_t>(c);
}

}  // namespace sdpa::cuda::probe
