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
}

GuardViolation InputBuffers::check_unchanged() const {
  for (const GuardedBuffer* g : {&q, &k, &v}) {
    if (auto v = g->check_unchanged()) return v;
  }
  if (mask) return mask->check_unchanged();
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

}  // namespace sdpa
