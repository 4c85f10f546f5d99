#include "kernels/cuda/cuda_rules.hpp"

#include <stdexcept>

namespace sdpa::cuda {

// PyTorch's check_sm_version: flash and cuDNN from sm80 (Ampere), mem-efficient from sm50
// (Maxwell); every one up to sm121, the newest architecture PyTorch's wheels are built for.
const std::vector<ArchRange>& cuda_arch_ranges() {
  static const std::vector<ArchRange> ranges = {
      {"cuda.flash", 80, 121}, {"cuda.mem_efficient", 50, 121}, {"cuda.cudnn", 80, 121}};
  return ranges;
}

const ArchRange& cuda_arch_range(std::string_view backend) {
  for (const ArchRange& r : cuda_arch_ranges())
    if (backend == r.backend) return r;
  throw std::logic_error("no architecture range for " + std::string(backend));
}

namespace detail {

bool check_cuda_device(const Capabilities& caps, const Device& device, Support& s) {
  if (device.kind == DeviceKind::cuda && caps.device == DeviceKind::cuda) return true;
  s.decline("runs on CUDA devices, not on " + device.name);
  return false;
}

void check_sm_range(std::string_view backend, const Device& device, Support& s) {
  const ArchRange& r = cuda_arch_range(backend);
  const int sm = device.cuda.sm, lo = r.from_sm, hi = r.to_sm;
  if (sm < lo || sm > hi) {
    s.decline("compute capability " + sm_name(sm) + " is outside the supported range [" +
              sm_name(lo) + ", " + sm_name(hi) + "]");
  }
}

void check_launch_limits(const LaunchNeeds& needs, const Device& device, Support& s) {
  const CudaProperties& c = device.cuda;
  const auto kib = [](std::size_t bytes) {
    const std::size_t whole = bytes / 1024, frac = bytes % 1024 * 10 / 1024;
    return std::to_string(whole) + (frac ? "." + std::to_string(frac) : "") + " KiB";
  };
  // A simulated compute capability that the limits table does not list says whose limits it
  // took; a detected GPU's are its own (the CUDA runtime's).
  const std::string basis = device.simulated ? cuda_arch_limits(c.sm).basis : "";
  const std::string unlisted = basis.empty() ? "" : " (not in the limits table: " + basis + ")";
  if (c.smem_per_block > 0 && needs.smem_bytes > c.smem_per_block) {
    s.decline("needs " + kib(needs.smem_bytes) + " of shared memory per block (" + needs.config +
              "), " + sm_name(c.sm) + " allows " + kib(c.smem_per_block) + unlisted);
  }
  const long long regs = static_cast<long long>(needs.threads) * needs.max_regs_per_thread;
  if (c.regs_per_sm > 0 && regs > c.regs_per_sm) {
    s.decline("needs up to " + std::to_string(regs) + " registers per block (" +
              std::to_string(needs.threads) + " threads x " +
              std::to_string(needs.max_regs_per_thread) + "), " + sm_name(c.sm) + " has " +
              std::to_string(c.regs_per_sm) + " per multiprocessor");
  }
}

void check_last_dim_stride(const LoweredProblem& lowered, bool singleton_ok, Support& s) {
  const sdpa_cts_params& p = lowered.params();
  const std::int64_t dims[4] = {p.head_dim_qk, p.head_dim_qk, p.head_dim_v, p.head_dim_v};
  const char* names[4] = {"q", "k", "v", "o"};
  const std::int64_t* strides[4] = {p.q_stride, p.k_stride, p.v_stride, p.o_stride};
  for (int t = 0; t < 4; ++t) {
    if (strides[t][3] == 1) continue;
    if (singleton_ok && dims[t] == 1) continue;
    s.decline(std::string(names[t]) + " has head-dim stride " + std::to_string(strides[t][3]) +
              ", not 1");
  }
}

void check_mask_last_dim_stride(const LoweredProblem& lowered, Support& s) {
  const sdpa_cts_params& p = lowered.params();
  if (p.mask_kind != SDPA_CTS_MASK_NONE && (p.mask_broadcast & SDPA_CTS_BROADCAST_S)) {
    s.decline(
        "the mask is broadcast over keys (stride 0 in its last dimension); fused CUDA kernels "
        "need stride 1 there");
  }
}

void check_packed_nonempty(const LoweredProblem& lowered, Support& s) {
  const sdpa_cts_params& p = lowered.params();
  if (!p.packed) return;
  for (std::int64_t b = 0; b < p.batch; ++b) {
    const std::int64_t lq = p.seqlens_q[b], lk = p.seqlens_kv[b];
    if (lq == 0 || lk == 0) {
      s.decline("packed rows: batch element " + std::to_string(b) + " has an empty sequence (L_b=" +
                std::to_string(lq) + ", S_b=" + std::to_string(lk) + ")");
      return;  // one reason is enough: the rule is about the packing, not each element
    }
  }
}

void no_kernels(std::string_view backend, bool model_only) {
  if (model_only) {
    throw std::runtime_error(std::string(backend) +
                             ": no kernel: it models PyTorch's choice of a kernel this suite "
                             "does not have");
  }
  throw std::runtime_error(std::string(backend) +
                           ": this build has no CUDA kernels (configure with SDPA_CTS_CUDA=ON "
                           "where nvcc is installed)");
}

PrecisionContract fused_precision(DType dtype, std::int64_t key_block) {
  PrecisionContract c;
  c.accumulate = dtype == DType::f64 ? DType::f64 : DType::f32;
  c.p_type = (dtype == DType::f16 || dtype == DType::bf16) ? dtype : c.accumulate;
  c.online_softmax = true;
  c.key_block = key_block;
  if (dtype == DType::f16 || dtype == DType::bf16) {
    // mma.sync on tensor cores: the worst published model of the architectures these kernels
    // run on, A100's and Ada's (blocks of 8 products, 1 extra alignment bit, truncation;
    // H100's is 16 and 2). docs/CONFORMANCE.md, "Tensor-core accumulation".
    c.mma_block = 8;
    c.mma_extra_bits = 1;
  }
  return c;
}

}  // namespace detail
}  // namespace sdpa::cuda
