// PyTorch's CPU scaled_dot_product_attention as an sdpa-cts plugin (docs/PLUGINS.md,
// "PyTorch's CPU SDPA as a plugin"). Built against the libtorch of a PyTorch wheel
// (bench/requirements.txt pins torch==2.15.0); only the C ABI of include/sdpa_cts/plugin.h
// crosses the boundary, every C++ exception stays inside run().
//
// Three backends, each with its backward (ABI 2.1):
//   torch.sdpa       at::scaled_dot_product_attention, the public op: ATen's CPU picker
//                    (_fused_sdp_choice_cpp) sends a problem to the flash kernel
//                    (FlashAttentionKernel.cpp, online softmax over key blocks of 512) when it
//                    can, else to the math path (_scaled_dot_product_attention_math:
//                    matmul, _safe_softmax, matmul, in f32 for f16 / bf16 inputs). This is
//                    the backend that is judged; it does not return the LSE.
//   torch.flash_cpu  at::_scaled_dot_product_flash_attention_for_cpu, the internal op the
//                    public one calls for its flash path; it returns the logsumexp, so it
//                    is the backend that takes the LSE cases.
//   torch.math       at::_scaled_dot_product_attention_math, the math path forced (what
//                    sdpa_kernel(SDPBackend.MATH) runs).
// The backward: torch.sdpa and torch.math differentiate their op with PyTorch's autograd
// (torch::autograd::grad with dO; the forward is run again with inputs that require grad,
// as a training step does); torch.flash_cpu calls the flash kernel's own backward,
// at::_scaled_dot_product_flash_attention_for_cpu_backward, with the O and LSE its forward
// wrote (it declares SDPA_CTS_CAP_BACKWARD_NEEDS_LSE).
//
// Tensors are wrapped in place with at::from_blob (the element-0 pointers and element strides
// of the lowered problem, sdpa_cts_params), so the op sees the problem's layout; O (and the
// LSE) are copied into the caller's views.
// What PyTorch cannot express is declined, never emulated: dropout (PyTorch's own RNG, not
// the suite's Philox keep-mask), softcap, windows, per-batch lengths, the weights output.
// Causal masks: top-left is PyTorch's is_causal; bottom-right with L != S, and any causal
// mask combined with a mask tensor, is passed as an explicit boolean mask (PyTorch forbids
// is_causal together with attn_mask; its own CausalBias(LOWER_RIGHT) materialises exactly
// this mask on CPU).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/headeronly/version.h>

#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <tuple>

#include "sdpa_cts/plugin.h"

namespace {

// Keys per block of the flash kernel's online softmax: every instantiation of
// cpu_flash_attention in ATen uses kv_split_size 512 (q_split_size 32, 64 or 256 by L).
constexpr int64_t kFlashKeyBlock = 512;

enum class Op { sdpa, flash_cpu, math };

at::ScalarType scalar_type(int32_t dtype) {
  switch (dtype) {
    case SDPA_CTS_DTYPE_F64:
      return at::kDouble;
    case SDPA_CTS_DTYPE_F32:
      return at::kFloat;
    case SDPA_CTS_DTYPE_F16:
      return at::kHalf;
    default:
      return at::kBFloat16;
  }
}

// Precision contract, the same for both backends: the public op's flash path and the
// internal op accumulate in at::opmath_type (f64 for f64, f32 otherwise), keep P in the
// input type for f16 / bf16 (qk_reduced_data feeds the P.V gemm) and rescale per key block
// of 512. The math path (taken for Dv != Dqk, dropout, a head-dim stride != 1, L or S = 0)
// computes in the same accumulation type without rounding P and without blocks, so this
// contract bounds both paths of the public op.
int32_t torch_precision(void*, int32_t dtype, sdpa_cts_precision* out) {
  switch (dtype) {
    case SDPA_CTS_DTYPE_F64:
      out->accumulate = SDPA_CTS_DTYPE_F64;
      out->p_type = SDPA_CTS_DTYPE_F64;
      break;
    case SDPA_CTS_DTYPE_F32:
      out->accumulate = SDPA_CTS_DTYPE_F32;
      out->p_type = SDPA_CTS_DTYPE_F32;
      break;
    case SDPA_CTS_DTYPE_F16:
    case SDPA_CTS_DTYPE_BF16:
      out->accumulate = SDPA_CTS_DTYPE_F32;
      out->p_type = dtype;
      break;
    default:
      return 1;
  }
  out->online_softmax = 1;
  out->key_block = kFlashKeyBlock;
  // The backward of the flash kernel (cpu_flash_attention_backward) rounds P and dS to the
  // input type before its gemms for f16 / bf16; the public op's picker sends a backward to
  // it whenever it can, so its contract is the same.
  out->ds_type =
      dtype == SDPA_CTS_DTYPE_F16 || dtype == SDPA_CTS_DTYPE_BF16 ? dtype : out->accumulate;
  return 0;
}

// The math path forced: on the CPU it computes f16 / bf16 inputs in f32 (P not rounded),
// without key blocks; autograd differentiates those f32 operations.
int32_t torch_math_precision(void* state, int32_t dtype, sdpa_cts_precision* out) {
  if (torch_precision(state, dtype, out) != 0) return 1;
  out->p_type = out->accumulate;
  out->ds_type = out->accumulate;
  out->online_softmax = 0;
  out->key_block = 0;
  return 0;
}

const char* isa_name(int32_t isa) {
  switch (isa) {
    case SDPA_CTS_ISA_SCALAR:
      return "scalar";
    case SDPA_CTS_ISA_AVX2:
      return "avx2";
    case SDPA_CTS_ISA_AVX512:
      return "avx512";
    default:
      return "avx512bf16";
  }
}

// ATen picks its CPU kernels once per process, for the capability ATEN_CPU_CAPABILITY names
// (default: the best the CPU has); a job for another ISA target (`--simd`) would silently run
// that one instead, so it is declined. AVX-512 with bf16 instructions is ATen's AVX512 build
// (oneDNN uses the bf16 instructions where the CPU has them).
void torch_supports(void*, const sdpa_cts_params*, const sdpa_cts_device* d,
                    sdpa_cts_decline_fn decline, void* context) {
  // Everything either op cannot express is excluded by the capabilities below (the host
  // declines it with its own reason texts). For torch.flash_cpu they exclude Dv != Dqk
  // (TORCH_CHECK "Q/K/V should have the same head size") and empty problems: with L = 0 or
  // S = 0 the kernel divides by a zero block size and the process dies of SIGFPE (the public
  // op never calls it then: its picker sends zero-length problems to the math path).
  if (d->kind != SDPA_CTS_DEVICE_CPU) return;  // the host declines other devices itself
  const char* wanted = d->cpu_isa == SDPA_CTS_ISA_SCALAR ? "DEFAULT"
                       : d->cpu_isa == SDPA_CTS_ISA_AVX2 ? "AVX2"
                                                         : "AVX512";
  const std::string active = at::get_cpu_capability();  // "DEFAULT", "AVX2" or "AVX512"
  if (active != wanted) {
    const std::string why = "PyTorch runs its CPU kernels for " + active +
                            " in this process (ATEN_CPU_CAPABILITY), not for the ISA target " +
                            isa_name(d->cpu_isa);
    decline(context, why.c_str());
  }
}

int64_t numel4(const int64_t (&sizes)[4]) { return sizes[0] * sizes[1] * sizes[2] * sizes[3]; }

// A 4-D view of caller memory; an empty tensor when it has no element (the pointer may then
// be anything).
at::Tensor view4(const void* data, const int64_t (&sizes)[4], const int64_t (&strides)[4],
                 at::ScalarType t) {
  const auto options = at::TensorOptions().dtype(t).device(at::kCPU);
  if (numel4(sizes) == 0) return at::empty({sizes[0], sizes[1], sizes[2], sizes[3]}, options);
  return at::from_blob(const_cast<void*>(data), {sizes[0], sizes[1], sizes[2], sizes[3]},
                       {strides[0], strides[1], strides[2], strides[3]}, options);
}

// The mask tensor [B, Hq, L, S] with the strides the problem passes (mask_stride: 0 along
// broadcast dimensions, which are size 1 here: PyTorch broadcasts them). Boolean masks are
// uint8 with values 0 and 1 (the ABI), viewed as kBool in place.
at::Tensor mask_view(const sdpa_cts_params* p) {
  const int64_t shape[4] = {p->batch, p->heads_q, p->len_q, p->len_kv};
  const uint32_t bits[4] = {SDPA_CTS_BROADCAST_B, SDPA_CTS_BROADCAST_H, SDPA_CTS_BROADCAST_L,
                            SDPA_CTS_BROADCAST_S};
  int64_t sizes[4];
  for (int k = 0; k < 4; ++k) sizes[k] = (p->mask_broadcast & bits[k]) ? 1 : shape[k];
  const at::ScalarType t = p->mask_kind == SDPA_CTS_MASK_BOOL ? at::kBool : scalar_type(p->dtype);
  const auto options = at::TensorOptions().dtype(t).device(at::kCPU);
  if (numel4(sizes) == 0) return at::empty({sizes[0], sizes[1], sizes[2], sizes[3]}, options);
  return at::from_blob(const_cast<void*>(p->mask), {sizes[0], sizes[1], sizes[2], sizes[3]},
                       {p->mask_stride[0], p->mask_stride[1], p->mask_stride[2], p->mask_stride[3]},
                       options);
}

struct MaskArgs {
  std::optional<at::Tensor> attn_mask;
  bool is_causal = false;
};

// The causal rule and the mask tensor as PyTorch's arguments: is_causal alone where it is the
// same function (top-left, or bottom-right with L == S, and no mask tensor), else one explicit
// mask (boolean, or additive in the dtype when the problem's mask is additive).
MaskArgs mask_args(const sdpa_cts_params* p) {
  MaskArgs a;
  const bool causal = p->causal != SDPA_CTS_CAUSAL_NONE;
  const bool aligned = p->causal == SDPA_CTS_CAUSAL_TOP_LEFT || p->len_q == p->len_kv;
  std::optional<at::Tensor> user;
  if (p->mask_kind != SDPA_CTS_MASK_NONE) user = mask_view(p);
  if (causal && aligned && !user) {
    a.is_causal = true;
    return a;
  }
  if (causal) {
    // attend iff j <= i + offset: offset 0 (top-left) or S - L (bottom-right)
    const int64_t offset = p->causal == SDPA_CTS_CAUSAL_BOTTOM_RIGHT ? p->len_kv - p->len_q : 0;
    at::Tensor allowed = at::ones({p->len_q, p->len_kv}, at::kBool).tril(offset);
    if (!user) {
      user = allowed;
    } else if (user->scalar_type() == at::kBool) {
      user = at::logical_and(*user, allowed);
    } else {
      user = user->masked_fill(allowed.logical_not(), -std::numeric_limits<double>::infinity());
    }
  }
  a.attn_mask = user;
  return a;
}

// The internal op takes only masks of the query's type: a boolean mask becomes 0 / -inf, as
// the public op converts it (convert_boolean_attn_mask) before it calls this op.
std::optional<at::Tensor> additive(const std::optional<at::Tensor>& m, at::ScalarType t) {
  if (!m || m->scalar_type() != at::kBool) return m;
  return at::zeros(m->sizes(), at::TensorOptions().dtype(t))
      .masked_fill(m->logical_not(), -std::numeric_limits<double>::infinity());
}

void compute(Op op, const sdpa_cts_params* p, int32_t threads) {
  if (threads > 0) at::set_num_threads(threads);
  const at::ScalarType t = scalar_type(p->dtype);
  const int64_t B = p->batch, Hq = p->heads_q, Hkv = p->heads_kv, L = p->len_q, S = p->len_kv,
                Dqk = p->head_dim_qk, Dv = p->head_dim_v;
  const int64_t qs[4] = {B, Hq, L, Dqk}, ks[4] = {B, Hkv, S, Dqk}, vs[4] = {B, Hkv, S, Dv},
                os[4] = {B, Hq, L, Dv};
  const at::Tensor q = view4(p->q, qs, p->q_stride, t);
  const at::Tensor k = view4(p->k, ks, p->k_stride, t);
  const at::Tensor v = view4(p->v, vs, p->v_stride, t);
  MaskArgs m = mask_args(p);
  const std::optional<double> scale = p->scale;
  at::Tensor out;
  at::Tensor lse;
  if (op == Op::sdpa) {
    out = at::scaled_dot_product_attention(q, k, v, m.attn_mask, /*dropout_p=*/0.0, m.is_causal,
                                           scale, /*enable_gqa=*/Hkv != Hq);
  } else if (op == Op::math) {
    // The op takes the mask as the public op hands it over: boolean masks made additive
    // (convert_boolean_attn_mask); it reads a boolean mask as numbers.
    out = std::get<0>(at::_scaled_dot_product_attention_math(
        q, k, v, additive(m.attn_mask, t), /*dropout_p=*/0.0, m.is_causal,
        /*dropout_mask=*/std::nullopt, scale, /*enable_gqa=*/Hkv != Hq));
  } else {
    std::tie(out, lse) = at::_scaled_dot_product_flash_attention_for_cpu(
        q, k, v, /*dropout_p=*/0.0, m.is_causal, additive(m.attn_mask, t), scale);
  }
  if (numel4(os) > 0) view4(p->o, os, p->o_stride, t).copy_(out);
  if (p->want_lse && p->lse && B * Hq * L > 0) {
    at::from_blob(p->lse, {B, Hq, L}, at::TensorOptions().dtype(at::kFloat)).copy_(lse);
  }
}

// dQ, dK, dV into the problem's gradient views (docs/SEMANTICS.md, "Backward").
void compute_backward(Op op, const sdpa_cts_params* p, int32_t threads) {
  if (threads > 0) at::set_num_threads(threads);
  const at::ScalarType t = scalar_type(p->dtype);
  const int64_t B = p->batch, Hq = p->heads_q, Hkv = p->heads_kv, L = p->len_q, S = p->len_kv,
                Dqk = p->head_dim_qk, Dv = p->head_dim_v;
  const int64_t qs[4] = {B, Hq, L, Dqk}, ks[4] = {B, Hkv, S, Dqk}, vs[4] = {B, Hkv, S, Dv},
                os[4] = {B, Hq, L, Dv};
  at::Tensor q = view4(p->q, qs, p->q_stride, t);
  at::Tensor k = view4(p->k, ks, p->k_stride, t);
  at::Tensor v = view4(p->v, vs, p->v_stride, t);
  const at::Tensor d_o = view4(p->d_o, os, p->d_o_stride, t);
  MaskArgs m = mask_args(p);
  const std::optional<double> scale = p->scale;
  at::Tensor dq, dk, dv;
  if (op == Op::flash_cpu) {
    at::Tensor o = view4(p->o, os, p->o_stride, t);
    at::Tensor lse = B * Hq * L > 0
                         ? at::from_blob(p->lse, {B, Hq, L}, at::TensorOptions().dtype(at::kFloat))
                         : at::empty({B, Hq, L}, at::TensorOptions().dtype(at::kFloat));
    if (t == at::kDouble) {
      // The kernel keeps an f64 LSE for f64 inputs; the ABI's LSE is f32, which would perturb
      // P by its rounding. The forward op runs again for its own O and LSE, as a training
      // step keeps them.
      std::tie(o, lse) = at::_scaled_dot_product_flash_attention_for_cpu(
          q, k, v, /*dropout_p=*/0.0, m.is_causal, additive(m.attn_mask, t), scale);
    }
    std::tie(dq, dk, dv) = at::_scaled_dot_product_flash_attention_for_cpu_backward(
        d_o, q, k, v, o, lse, /*dropout_p=*/0.0, m.is_causal, additive(m.attn_mask, t), scale);
  } else {
    // Leaves that require grad: views of the caller's memory, never written by autograd.
    q = q.detach().requires_grad_(true);
    k = k.detach().requires_grad_(true);
    v = v.detach().requires_grad_(true);
    at::Tensor out;
    if (op == Op::sdpa) {
      out = at::scaled_dot_product_attention(q, k, v, m.attn_mask, /*dropout_p=*/0.0, m.is_causal,
                                             scale, /*enable_gqa=*/Hkv != Hq);
    } else {
      out = std::get<0>(at::_scaled_dot_product_attention_math(
          q, k, v, additive(m.attn_mask, t), /*dropout_p=*/0.0, m.is_causal,
          /*dropout_mask=*/std::nullopt, scale, /*enable_gqa=*/Hkv != Hq));
    }
    const auto grads = torch::autograd::grad({out}, {q, k, v}, {d_o}, /*retain_graph=*/false,
                                             /*create_graph=*/false, /*allow_unused=*/true);
    // An input the graph does not reach (an empty problem) has no gradient: zeros.
    auto or_zeros = [](const at::Tensor& g, const at::Tensor& like) {
      return g.defined() ? g : at::zeros_like(like);
    };
    dq = or_zeros(grads[0], q);
    dk = or_zeros(grads[1], k);
    dv = or_zeros(grads[2], v);
  }
  if (numel4(qs) > 0) view4(p->d_q, qs, p->d_q_stride, t).copy_(dq);
  if (numel4(ks) > 0) view4(p->d_k, ks, p->d_k_stride, t).copy_(dk);
  if (numel4(vs) > 0) view4(p->d_v, vs, p->d_v_stride, t).copy_(dv);
}

// Runs `body`, turning every exception into the ABI's error message.
template <typename Body>
int32_t guarded(Body body, char* error, size_t error_size) {
  try {
    body();
    return 0;
  } catch (const c10::Error& e) {
    std::snprintf(error, error_size, "PyTorch %s: %s", TORCH_VERSION, e.what_without_backtrace());
  } catch (const std::exception& e) {
    std::snprintf(error, error_size, "PyTorch %s: %s", TORCH_VERSION, e.what());
  } catch (...) {
    std::snprintf(error, error_size, "PyTorch %s: an exception of unknown type", TORCH_VERSION);
  }
  return 1;
}

template <Op op>
int32_t torch_run_backward(void*, const sdpa_cts_params* p, const sdpa_cts_device*, int32_t threads,
                           char* error, size_t error_size) {
  return guarded([&] { compute_backward(op, p, threads); }, error, error_size);
}

template <Op op>
int32_t torch_run(void*, const sdpa_cts_params* p, const sdpa_cts_device*, int32_t threads,
                  char* error, size_t error_size) {
  // Every pointer is in host memory: the capabilities below declare SDPA_CTS_MEMORY_HOST.
  return guarded([&] { compute(op, p, threads); }, error, error_size);
}

constexpr uint32_t kAllDtypes = (1u << SDPA_CTS_DTYPE_F64) | (1u << SDPA_CTS_DTYPE_F32) |
                                (1u << SDPA_CTS_DTYPE_F16) | (1u << SDPA_CTS_DTYPE_BF16);
constexpr uint32_t kCommonFlags = SDPA_CTS_CAP_BOOL_MASK | SDPA_CTS_CAP_ADDITIVE_MASK |
                                  SDPA_CTS_CAP_CAUSAL_TOP_LEFT | SDPA_CTS_CAP_CAUSAL_BOTTOM_RIGHT |
                                  SDPA_CTS_CAP_GQA;

// One backend of the plugin: every one is a CPU backend of every element type, with no
// head-dim limit (the math path takes what the flash kernel does not) and no dispatcher trait
// (it is judged, not picked).
template <Op op>
constexpr sdpa_cts_backend torch_backend(const char* name, uint32_t flags,
                                         int32_t (*precision)(void*, int32_t,
                                                              sdpa_cts_precision*)) {
  return {
      sizeof(sdpa_cts_backend),
      name,
      nullptr,
      {sizeof(sdpa_cts_capabilities), kAllDtypes, SDPA_CTS_DEVICE_CPU, 0, 1,
       kCommonFlags | SDPA_CTS_CAP_BACKWARD | flags, 0, SDPA_CTS_MEMORY_HOST,
       SDPA_CTS_PYTORCH_NONE},
      precision,
      torch_supports,
      torch_run<op>,
      torch_run_backward<op>,
  };
}

const sdpa_cts_backend kBackends[] = {
    torch_backend<Op::sdpa>(
        "torch.sdpa", SDPA_CTS_CAP_DIFFERENT_V_DIM | SDPA_CTS_CAP_EMPTY_PROBLEMS, torch_precision),
    torch_backend<Op::flash_cpu>(
        "torch.flash_cpu", SDPA_CTS_CAP_LSE | SDPA_CTS_CAP_BACKWARD_NEEDS_LSE, torch_precision),
    torch_backend<Op::math>("torch.math",
                            SDPA_CTS_CAP_DIFFERENT_V_DIM | SDPA_CTS_CAP_EMPTY_PROBLEMS,
                            torch_math_precision),
};

const sdpa_cts_plugin kPlugin = {
    SDPA_CTS_PLUGIN_ABI_FIELDS, "sdpa-cts-torch", TORCH_VERSION, 3, kBackends,
};

}  // namespace

extern "C" SDPA_CTS_PLUGIN_EXPORT const sdpa_cts_plugin* sdpa_cts_plugin_entry(
    uint32_t host_abi_major, uint32_t) {
  return host_abi_major == SDPA_CTS_PLUGIN_ABI_MAJOR ? &kPlugin : nullptr;
}
