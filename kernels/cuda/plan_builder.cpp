// make_plan(): a Problem and its device Buffers flattened into the AttentionPlan every CUDA
// kernel takes (plan.hpp).
#include "kernels/cuda/plan_builder.hpp"

#include <stdexcept>

#include "core/philox.hpp"

namespace sdpa::cuda {
namespace detail {

AttentionPlan make_plan(const Problem& p, const Buffers& buf) {
  AttentionPlan m;
  switch (p.dtype) {
    case DType::f32:
      m.dtype = 0;
      break;
    case DType::f16:
      m.dtype = 1;
      break;
    case DType::bf16:
      m.dtype = 2;
      break;
    case DType::f64:
      m.dtype = 3;
      break;
    default:
      throw std::invalid_argument("CUDA kernels: an element type they do not run");
  }
  m.batch = p.batch;
  m.heads_q = p.heads_q;
  m.heads_kv = p.heads_kv;
  m.len_q = p.len_q;
  m.len_kv = p.len_kv;
  m.dqk = p.head_dim_qk;
  m.dv = p.head_dim_v;
  const std::vector<std::int64_t> cu_q = p.packed ? cu_seqlens_q(p) : std::vector<std::int64_t>();
  const std::vector<std::int64_t> cu_kv = p.packed ? cu_seqlens_kv(p) : std::vector<std::int64_t>();
  auto tensor = [&](PlanTensor& t, const void* data, const TensorLayout& l,
                    const std::vector<std::int64_t>& cu) {
    t.data = data;
    t.stride_h = l.stride[1];
    t.stride_row = l.stride[2];
    t.stride_d = l.stride[3];
    for (std::int64_t b = 0; b < p.batch; ++b) {
      const std::int64_t row = p.packed ? cu[static_cast<std::size_t>(b)] : 0;
      t.row0.push_back(element_offset(l, p.packed, b, 0, row, 0));
    }
  };
  tensor(m.q, buf.q, p.q, cu_q);
  tensor(m.k, buf.k, p.k, cu_kv);
  tensor(m.v, buf.v, p.v, cu_kv);
  tensor(m.o, buf.o, p.o, cu_q);
  for (std::int64_t b = 0; b < p.batch; ++b) {
    m.valid_q.push_back(seqlen_q(p, b));
    m.valid_kv.push_back(seqlen_kv(p, b));
    m.o_rows.push_back(p.packed ? m.valid_q.back() : p.len_q);
  }
  m.scale = effective_scale(p);
  m.softcap = p.softcap;
  m.causal = p.causal == Causal::top_left ? 1 : p.causal == Causal::bottom_right ? 2 : 0;
  m.window = p.window.enabled;
  m.window_left = p.window.left;
  m.window_right = p.window.right;
  m.window_bottom_right = p.window.align == Align::bottom_right;
  m.mask = p.mask == MaskKind::boolean ? 1 : p.mask == MaskKind::additive ? 2 : 0;
  if (m.mask != 0) {
    m.mask_data = buf.mask;
    const StridedView mv = mask_view(p);
    for (int d = 0; d < 4; ++d) m.mask_stride[d] = mv.stride[static_cast<std::size_t>(d)];
  }
  m.dropout_p = p.dropout_p;
  m.dropout_threshold = dropout_threshold(p.dropout_p);
  m.dropout_seed = p.dropout_seed;
  m.dropout_offset = p.dropout_offset;
  m.lse = p.want_lse ? buf.lse : nullptr;
  m.weights = p.want_weights ? buf.weights : nullptr;
  return m;
}

LaunchDevice launch_device(const Device& device) {
  LaunchDevice d;
  d.sm = device.cuda.sm;
  d.sm_count = device.cuda.sm_count;  // a simulated (emulated) GPU has its table's count
  return d;
}

}  // namespace detail

}  // namespace sdpa::cuda
