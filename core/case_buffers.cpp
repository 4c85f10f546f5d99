#include "core/case_buffers.hpp"

namespace sdpa {

InputPointers InputBuffers::pointers() const {
  return {q.data(), k.data(), v.data(), mask ? mask->data() : nullptr};
}

void InputBuffers::snapshot() {
  q.snapshot();
  k.snapshot();
  v.snapshot();
  if (mask) mask->snapshot();
  if (d_out) d_out->snapshot();
}

GuardViolation InputBuffers::check_unchanged() const {
  for (const GuardedBuffer* g : {&q, &k, &v}) {
    if (auto v = g->check_unchanged()) return v;
  }
  if (mask) {
    if (auto v = mask->check_unchanged()) return v;
  }
  if (d_out) return d_out->check_unchanged();
  return {};
}

GuardViolation OutputBuffers::check(const Problem& p) const {
  if (auto v = o.check()) return v;
  if (p.want_lse) {
    if (auto v = lse.check()) return v;
  }
  if (p.want_weights) {
    if (auto v = weights.check()) return v;
  }
  return {};
}

OutputBuffers make_outputs(const Problem& p) {
  return {GuardedBuffer("o", dtype_size(p.dtype), o_view(p), p.o.base_offset),
          GuardedBuffer("lse", 4, p.want_lse ? lse_view(p) : StridedView{}),
          GuardedBuffer("weights", dtype_size(p.dtype),
                        p.want_weights ? weights_view(p) : StridedView{})};
}

GuardViolation GradientBuffers::check() const {
  for (const GuardedBuffer* g : {&dq, &dk, &dv}) {
    if (auto v = g->check()) return v;
  }
  if (dbias) return dbias->check();
  return {};
}

GradientBuffers make_gradient_outputs(const Problem& p) {
  const std::size_t es = dtype_size(p.dtype);
  GradientBuffers g(GuardedBuffer("dq", es, q_view(p), p.q.base_offset),
                    GuardedBuffer("dk", es, k_view(p), p.k.base_offset),
                    GuardedBuffer("dv", es, v_view(p), p.v.base_offset));
  if (p.bias_grad) g.dbias.emplace("dbias", es, mask_view(p));
  return g;
}

std::vector<double> logical_d_out(const Problem& p, const GuardedBuffer& d_out) {
  const std::int64_t B = p.batch, H = p.heads_q, L = p.len_q, Dv = p.head_dim_v;
  std::vector<double> out(static_cast<std::size_t>(B * H * L * Dv), 0.0);
  const auto cuq = cu_seqlens_q(p);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < seqlen_q(p, b); ++i) {
        const std::int64_t r = p.packed ? cuq[static_cast<std::size_t>(b)] + i : i;
        for (std::int64_t d = 0; d < Dv; ++d) {
          out[static_cast<std::size_t>(((b * H + h) * L + i) * Dv + d)] =
              load_as_double(p.dtype, d_out.data(), element_offset(p.o, p.packed, b, h, r, d));
        }
      }
  return out;
}

}  // namespace sdpa
