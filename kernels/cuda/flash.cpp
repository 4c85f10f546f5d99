// cuda.flash: PyTorch's FLASH_ATTENTION rules (can_use_flash_attention in its
// cuda/sdp_utils.cpp), docs/DISPATCH.md; with CUDA in the build, run() is the
// FlashAttention-2 style tensor-core kernel of flash_kernel.cu.
#include "kernels/cuda/descriptor.hpp"
#include "kernels/cuda/emulator/emu_runtime.hpp"
#include "kernels/cuda/flash_body.hpp"
#include "kernels/cuda/launch_device.hpp"
#include "kernels/lowered_problem.hpp"

namespace sdpa::cuda {
namespace {

Capabilities flash_caps() {
  Capabilities c = Capabilities::every_forward_input();
  c.device = DeviceKind::cuda;
  c.dtypes = {DType::f16, DType::bf16};
  c.max_head_dim = 256;       // q, k, v last dims <= 256 (padded to a multiple of 8)
  c.different_v_dim = false;  // dv must equal dqk
  c.bool_mask = false;        // no attn_mask of any kind
  c.additive_mask = false;
  c.causal_top_left = true;      // only with L == S (refined in supports())
  c.causal_bottom_right = true;  // FlashAttention-2's native alignment
  // Windows, softcap and per-batch lengths on padded rows: the kernel computes them (as
  // FlashAttention-2 does); PyTorch's SDPA cannot express them, and the PyTorch policy's
  // front end rejects them before its picker (docs/DISPATCH.md, section 11).
  c.window = true;
  c.softcap = true;
  c.dropout = true;  // any p
  c.gqa = true;      // Hk == Hv always holds here
  c.padded_seqlens = true;
  c.packed_seqlens = true;  // jagged NestedTensor / cu_seqlens
  c.lse = true;
  c.weights = false;
  c.last_dim_contiguous = true;  // except a head dim of 1 (refined in supports())
  c.empty_problems = false;      // zero seq_len (and other zero sizes) go elsewhere
  c.deterministic = true;        // the forward pass (fixed split counts)
  c.batch_invariant = false;     // the split-KV count depends on B * H
  c.memory = MemorySpace::cuda_device;
  c.traits.split_kv = true;
  c.traits.fused_mha = true;
  c.traits.pytorch = PytorchKernel::flash;
  return c;
}

class Flash final : public detail::DescriptorBackend {
 public:
  Flash() : DescriptorBackend("cuda.flash", flash_caps()) {}

  PrecisionContract precision(DType dtype) const override {
    return detail::fused_precision(dtype, 64);
  }

  Support supports(const LoweredProblem& lowered, const Device& device) const override {
    const sdpa_cts_params& p = lowered.params();
    Support s;
    if (!detail::check_cuda_device(capabilities(), device, s)) return s;
    detail::check_sm_range(name(), device, s);
    Capabilities generic = capabilities();
    generic.last_dim_contiguous = false;  // checked below with the singleton exception
    check_capabilities(generic, lowered, device, s);
    check_causal_alignment(p, s);
    detail::check_last_dim_stride(lowered, /*singleton_ok=*/true, s);
    const DType dtype = lowered.dtype();
    if (dtype == DType::f16 || dtype == DType::bf16) {
      detail::check_launch_limits(
          detail::flash::launch_needs(dtype_size(dtype), std::max(p.head_dim_qk, p.head_dim_v),
                                      device.cuda.smem_per_block),
          device, s);
    }
    if (p.packed) {
      if (p.head_dim_qk % 8 != 0) {
        s.decline("packed rows need a head dim that is a multiple of 8 (dqk=" +
                  std::to_string(p.head_dim_qk) + "): packed inputs are not padded");
      }
      detail::check_packed_nonempty(lowered, s);
    }
    return s;
  }

  // On a GPU: the CUDA kernel; on an emulated GPU (device option emulate=1): the same kernel
  // body on the host emulator, with host buffers (conformance/judge/memory_space.hpp).
  void run(const LoweredProblem& lowered, const Device& device, const RunOptions&) const override {
    if (device.cuda.emulated) {
      emu::EmuRuntime rt(device.cuda.smem_per_block, device.cuda.mma);
      return detail::flash::run_lowered(lowered.params(), detail::launch_device(device), rt);
    }
#ifdef SDPA_CTS_HAVE_CUDA
    detail::run_flash(lowered.params(), detail::launch_device(device));
#else
    detail::no_kernels(name(), false);
#endif
  }

 private:
  // FlashAttention-2 aligns causal masks bottom-right; a top-left mask only means the same
  // when every query length equals its key length.
  static void check_causal_alignment(const sdpa_cts_params& p, Support& s) {
    if (p.causal != SDPA_CTS_CAUSAL_TOP_LEFT) return;
    if (p.len_q != p.len_kv) {
      s.decline("causal top-left with L=" + std::to_string(p.len_q) + " != S=" +
                std::to_string(p.len_kv) + ": FlashAttention-2 aligns causal masks bottom-right");
      return;
    }
    for (std::int64_t b = 0; b < p.batch; ++b) {
      if (p.seqlens_q[b] != p.seqlens_kv[b]) {
        s.decline("causal top-left with L_b=" + std::to_string(p.seqlens_q[b]) +
                  " != S_b=" + std::to_string(p.seqlens_kv[b]) + " (batch element " +
                  std::to_string(b) + "): FlashAttention-2 aligns causal masks bottom-right");
        return;
      }
    }
  }
};

}  // namespace

const Backend& flash_backend() {
  static const Flash b;
  return b;
}

}  // namespace sdpa::cuda
