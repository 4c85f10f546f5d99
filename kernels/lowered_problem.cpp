#include "kernels/lowered_problem.hpp"

#include <stdexcept>
#include <string>

#include "core/philox.hpp"

namespace sdpa {

// One dtype encoding: the C ABI's codes are the DType values, and the other C enums mirror
// the Problem's.
static_assert(static_cast<int>(DType::f64) == SDPA_CTS_DTYPE_F64 &&
              static_cast<int>(DType::f32) == SDPA_CTS_DTYPE_F32 &&
              static_cast<int>(DType::f16) == SDPA_CTS_DTYPE_F16 &&
              static_cast<int>(DType::bf16) == SDPA_CTS_DTYPE_BF16);
static_assert(static_cast<int>(Causal::none) == SDPA_CTS_CAUSAL_NONE &&
              static_cast<int>(Causal::top_left) == SDPA_CTS_CAUSAL_TOP_LEFT &&
              static_cast<int>(Causal::bottom_right) == SDPA_CTS_CAUSAL_BOTTOM_RIGHT);
static_assert(static_cast<int>(Align::top_left) == SDPA_CTS_ALIGN_TOP_LEFT &&
              static_cast<int>(Align::bottom_right) == SDPA_CTS_ALIGN_BOTTOM_RIGHT);
static_assert(static_cast<int>(MaskKind::none) == SDPA_CTS_MASK_NONE &&
              static_cast<int>(MaskKind::boolean) == SDPA_CTS_MASK_BOOL &&
              static_cast<int>(MaskKind::additive) == SDPA_CTS_MASK_ADDITIVE);
static_assert(int(kBroadcastB) == int(SDPA_CTS_BROADCAST_B) &&
              int(kBroadcastH) == int(SDPA_CTS_BROADCAST_H) &&
              int(kBroadcastL) == int(SDPA_CTS_BROADCAST_L) &&
              int(kBroadcastS) == int(SDPA_CTS_BROADCAST_S));

DType dtype_from_code(std::int32_t code, const char* where) {
  switch (code) {
    case SDPA_CTS_DTYPE_F64:
    case SDPA_CTS_DTYPE_F32:
    case SDPA_CTS_DTYPE_F16:
    case SDPA_CTS_DTYPE_BF16:
      return static_cast<DType>(code);
  }
  throw std::invalid_argument(std::string(where) + ": unknown element type code " +
                              std::to_string(code) + " (SDPA_CTS_DTYPE_F64..BF16 are 0..3)");
}

namespace {

void copy_strides(const TensorLayout& l, std::int64_t out[4]) {
  for (int d = 0; d < 4; ++d) out[d] = l.stride[static_cast<std::size_t>(d)];
}

}  // namespace

KeyStructure key_structure(const Problem& p) {
  return {static_cast<int>(p.causal), p.window.enabled, p.window.align == Align::bottom_right,
          p.window.left, p.window.right};
}

LoweredProblem::LoweredProblem(const Problem& p, const Buffers& buf)
    : source_(p), memory_(buf.memory) {
  sdpa_cts_params& c = params_;
  c.struct_size = sizeof c;
  c.dtype = dtype_code(p.dtype);
  c.batch = p.batch;
  c.heads_q = p.heads_q;
  c.heads_kv = p.heads_kv;
  c.group = p.heads_kv > 0 ? p.heads_q / p.heads_kv : 1;
  c.len_q = p.len_q;
  c.len_kv = p.len_kv;
  c.head_dim_qk = p.head_dim_qk;
  c.head_dim_v = p.head_dim_v;

  c.q = buf.q;
  c.k = buf.k;
  c.v = buf.v;
  c.o = buf.o;
  copy_strides(p.q, c.q_stride);
  copy_strides(p.k, c.k_stride);
  copy_strides(p.v, c.v_stride);
  copy_strides(p.o, c.o_stride);

  // Lengths per batch element and their prefix sums. A length list of the wrong size (an
  // invalid problem, which validate() reports before any kernel runs; supports() may still
  // be asked) reads as the full length where it has no entry, never past its end.
  cu_seqlens_q_.push_back(0);
  cu_seqlens_kv_.push_back(0);
  for (std::int64_t b = 0; b < p.batch; ++b) {
    const auto at = static_cast<std::size_t>(b);
    seqlens_q_.push_back(at < p.seqlens_q.size() ? p.seqlens_q[at] : p.len_q);
    seqlens_kv_.push_back(at < p.seqlens_kv.size() ? p.seqlens_kv[at] : p.len_kv);
    cu_seqlens_q_.push_back(cu_seqlens_q_.back() + seqlens_q_.back());
    cu_seqlens_kv_.push_back(cu_seqlens_kv_.back() + seqlens_kv_.back());
  }
  c.seqlens_q = seqlens_q_.data();
  c.seqlens_kv = seqlens_kv_.data();
  c.cu_seqlens_q = cu_seqlens_q_.data();
  c.cu_seqlens_kv = cu_seqlens_kv_.data();
  c.varlen = !p.seqlens_q.empty() || !p.seqlens_kv.empty();
  c.packed = p.packed;

  c.causal = static_cast<std::int32_t>(p.causal);
  c.window = p.window.enabled;
  c.window_align = static_cast<std::int32_t>(p.window.align);
  c.window_left = p.window.left;
  c.window_right = p.window.right;

  c.mask_kind = static_cast<std::int32_t>(p.mask);
  c.mask_broadcast = p.mask_broadcast;
  if (p.mask != MaskKind::none) {
    c.mask = buf.mask;
    const StridedView mv = mask_view(p);
    for (int d = 0; d < 4; ++d) c.mask_stride[d] = mv.stride[static_cast<std::size_t>(d)];
  }

  c.scale = effective_scale(p);
  c.scale_is_default = !p.scale.has_value();
  c.softcap = p.softcap;

  c.dropout_p = p.dropout_p;
  c.keep_scale = p.dropout_p > 0 ? 1.0 / (1.0 - p.dropout_p) : 1.0;
  c.dropout_seed = p.dropout_seed;
  c.dropout_offset = p.dropout_offset;
  c.dropout_threshold = p.dropout_p > 0 ? dropout_threshold(p.dropout_p) : 0;
  c.want_lse = p.want_lse;
  c.want_weights = p.want_weights;
  c.lse = p.want_lse ? buf.lse : nullptr;
  c.weights = p.want_weights ? buf.weights : nullptr;

  c.q_scale = c.k_scale = c.v_scale = c.o_scale = 1.0f;
  c.backward = p.backward;
  c.bias_grad = p.bias_grad;
  mask_elements_ = p.mask != MaskKind::none ? sdpa::mask_elements(p) : 0;
  views_[0] = sdpa::q_view(p);
  views_[1] = sdpa::k_view(p);
  views_[2] = sdpa::v_view(p);
  views_[3] = sdpa::o_view(p);
  base_offsets_ = {p.q.base_offset, p.k.base_offset, p.v.base_offset, p.o.base_offset};
}

Buffers LoweredProblem::buffers() const {
  const sdpa_cts_params& c = params_;
  return {c.q, c.k, c.v, c.mask, c.o, c.lse, c.weights, memory_};
}

GradientPointers LoweredProblem::gradients() const {
  const sdpa_cts_params& c = params_;
  return {c.d_o, c.d_q, c.d_k, c.d_v, c.d_bias};
}

LoweredProblem::LoweredProblem(const Problem& p, const Buffers& forward,
                               const GradientPointers& grads)
    : LoweredProblem(p, forward) {
  sdpa_cts_params& c = params_;
  c.d_o = grads.d_out;
  c.d_q = grads.dq;
  c.d_k = grads.dk;
  c.d_v = grads.dv;
  c.d_bias = p.bias_grad ? grads.dbias : nullptr;
  copy_strides(p.o, c.d_o_stride);
  copy_strides(p.q, c.d_q_stride);
  copy_strides(p.k, c.d_k_stride);
  copy_strides(p.v, c.d_v_stride);
}

}  // namespace sdpa
