// cuda.mem_efficient: PyTorch's EFFICIENT_ATTENTION rules (can_use_mem_efficient_attention
// in its cuda/sdp_utils.cpp), docs/DISPATCH.md; with CUDA in the build, run() is the SIMT
// kernel of mem_efficient_kernel.cu.
#include "kernels/cuda/descriptor.hpp"
#include "kernels/cuda/emulator/emu_runtime.hpp"
#include "kernels/cuda/launch_device.hpp"
#include "kernels/cuda/mem_efficient_body.hpp"
#include "kernels/lowered_problem.hpp"

namespace sdpa::cuda {
namespace {

Capabilities mem_efficient_caps() {
  Capabilities c = Capabilities::every_forward_input();
  c.device = DeviceKind::cuda;
  c.dtypes = {DType::f16, DType::bf16, DType::f32};  // bf16 from sm80 (refined in supports())
  c.max_head_dim = 0;                                // no limit in the picker
  c.head_dim_multiple = 1;       // 1, 4 or 8 by arch and dtype (refined in supports())
  c.different_v_dim = true;      // dv may differ from dqk
  c.bool_mask = true;            // made additive (-inf) before the kernel
  c.additive_mask = true;        // any additive bias
  c.causal_top_left = true;      // CausalFromTopLeft, any L and S
  c.causal_bottom_right = true;  // CausalFromBottomRight (PyTorch's CausalBias path)
  c.window = false;              // not reachable through PyTorch's SDPA
  c.softcap = false;             // not reachable through PyTorch's SDPA
  c.dropout = true;              // with a batch limit (refined in supports())
  c.gqa = true;                  // newest PyTorch allows GQA here on CUDA (older: declined)
  c.padded_seqlens = false;      // PyTorch's SDPA has no per-batch lengths on dense inputs
  c.packed_seqlens = true;       // NestedTensor inputs
  c.lse = true;
  c.weights = false;
  c.last_dim_contiguous = true;  // no singleton exception (issue #127523)
  c.empty_problems = false;
  c.deterministic = true;  // the forward pass
  c.batch_invariant = false;
  c.memory = MemorySpace::cuda_device;
  c.traits.fused_mha = true;
  c.traits.pytorch = PytorchKernel::efficient;
  return c;
}

}  // namespace

// PyTorch's minimum_gemm_alignment: tensor cores (sm80+, or sm70+ for f16 / bf16) need
// 128-bit rows of the head dim; from sm80 f32 needs 4 elements too.
const std::vector<AlignmentCut>& mem_efficient_alignment_cuts() {
  static const std::vector<AlignmentCut> cuts = {{80, true, 8}, {80, false, 4}, {70, true, 8}};
  return cuts;
}

// PyTorch's check_bf16_supported (via check_dtypes_low_precision): bf16 needs sm80.
const std::vector<DtypeArchCut>& cuda_dtype_arch_cuts() {
  static const std::vector<DtypeArchCut> cuts = {{"cuda.mem_efficient", DType::bf16, 80}};
  return cuts;
}

namespace {

int gemm_alignment(int sm, DType dtype) {
  const bool half = dtype == DType::f16 || dtype == DType::bf16;
  for (const AlignmentCut& c : mem_efficient_alignment_cuts())  // the latest cut first
    if (sm >= c.from_sm && half == c.half_precision) return c.elements;
  return 1;
}

class MemEfficient final : public detail::DescriptorBackend {
 public:
  MemEfficient() : DescriptorBackend("cuda.mem_efficient", mem_efficient_caps()) {}

  // The kernel (mem_efficient_kernel.cu) keeps P in f32 (it is SIMT, not tensor-core) and
  // rescales once per chunk of 32 keys.
  PrecisionContract precision(DType) const override {
    PrecisionContract c;
    c.accumulate = DType::f32;
    c.p_type = DType::f32;
    c.online_softmax = true;
    c.key_block = 32;
    return c;
  }

  Support supports(const LoweredProblem& lowered, const Device& device) const override {
    const sdpa_cts_params& p = lowered.params();
    const DType dtype = lowered.dtype();
    Support s;
    if (!detail::check_cuda_device(capabilities(), device, s)) return s;
    const int sm = device.cuda.sm;
    detail::check_sm_range(name(), device, s);
    check_capabilities(capabilities(), lowered, device, s);
    for (const DtypeArchCut& c : cuda_dtype_arch_cuts()) {
      if (name() == c.backend && dtype == c.dtype && sm < c.from_sm) {
        s.decline("dtype " + std::string(dtype_name(dtype)) + " needs " + sm_name(c.from_sm) +
                  " or newer, device is " + sm_name(sm) + " (supported there: " + supported_on(sm) +
                  ")");
      }
    }
    detail::check_launch_limits(detail::mem_efficient::launch_needs(), device, s);
    const std::size_t esize = dtype_size(dtype);
    const int align = gemm_alignment(sm, dtype);
    if (align > 1 && (p.head_dim_qk % align != 0 || p.head_dim_v % align != 0)) {
      s.decline("head dims must be multiples of " + std::to_string(align) + " for " +
                std::string(dtype_name(dtype)) + " on " + sm_name(sm) + " (dqk=" +
                std::to_string(p.head_dim_qk) + ", dv=" + std::to_string(p.head_dim_v) + ")");
    }
    if (sm >= kMemEfficientPointerAlignmentFromSm) {
      // Base pointers must be 16-byte aligned (alignment * element size).
      const std::int64_t bytes = static_cast<std::int64_t>(align * esize);
      const char* names[4] = {"q", "k", "v", "o"};
      for (int t = 0; t < 4; ++t) {
        const std::int64_t offset = lowered.base_offsets()[static_cast<std::size_t>(t)];
        if (offset % align != 0) {
          s.decline(std::string(names[t]) + " starts " + std::to_string(offset) + " elements (" +
                    std::to_string(offset * static_cast<std::int64_t>(esize)) +
                    " bytes) into its allocation, not a multiple of " + std::to_string(bytes) +
                    " bytes");
        }
      }
    }
    // PyTorch's picker has no such check: it selects the kernel, which then raises.
    if (p.dropout_p > 0 && p.batch > 65535) {
      s.raise_later("dropout with batch " + std::to_string(p.batch) +
                    " > 65535: the kernel cannot produce valid seed and offset outputs");
    }
    detail::check_mask_last_dim_stride(lowered, s);
    detail::check_packed_nonempty(lowered, s);
    return s;
  }

  // On a GPU: the CUDA kernel; on an emulated GPU (device option emulate=1): the same kernel
  // body on the host emulator, with host buffers (conformance/judge/memory_space.hpp).
  void run(const LoweredProblem& lowered, const Device& device, const RunOptions&) const override {
    if (device.cuda.emulated) {
      emu::EmuRuntime rt(device.cuda.smem_per_block, device.cuda.mma);
      return detail::mem_efficient::run_lowered(lowered.params(), rt);
    }
#ifdef SDPA_CTS_HAVE_CUDA
    detail::run_mem_efficient(lowered.params(), detail::launch_device(device));
#else
    detail::no_kernels(name(), false);
#endif
  }

 private:
  // The dtypes this backend takes on `sm`: its capabilities' less those cut below it.
  std::string supported_on(int sm) const {
    std::string list;
    for (DType t : capabilities().dtypes) {
      bool cut = false;
      for (const DtypeArchCut& c : cuda_dtype_arch_cuts())
        cut = cut || (name() == c.backend && t == c.dtype && sm < c.from_sm);
      if (!cut) list += (list.empty() ? "" : ", ") + std::string(dtype_name(t));
    }
    return list;
  }
};

}  // namespace

const Backend& mem_efficient_backend() {
  static const MemEfficient b;
  return b;
}

}  // namespace sdpa::cuda
