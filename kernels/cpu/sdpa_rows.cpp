#include "kernels/cpu/sdpa_rows.hpp"

#include <omp.h>

#include <algorithm>

namespace sdpa::cpu {

Geometry::Geometry(const Problem& problem) : p(problem) {
  group = p.heads_kv > 0 ? p.heads_q / p.heads_kv : 1;
  if (p.packed) {
    cuq = cu_seqlens_q(p);
    cuk = cu_seqlens_kv(p);
  }
  if (p.mask != MaskKind::none) mstride = mask_view(p).stride;
  drop_threshold = p.dropout_p > 0 ? dropout_threshold(p.dropout_p) : 0;
}

KeyRange key_range(const Problem& p, std::int64_t i, std::int64_t lb, std::int64_t sb) {
  KeyRange r{0, sb};
  const std::int64_t br = sb - lb;
  if (p.causal == Causal::top_left) r.hi = std::min(r.hi, i + 1);
  if (p.causal == Causal::bottom_right) r.hi = std::min(r.hi, i + br + 1);
  if (p.window.enabled) {
    const std::int64_t off = p.window.align == Align::bottom_right ? br : 0;
    // Bounds beyond every key are no restriction (and would overflow the sums below).
    const std::int64_t far = sb + lb + 1;
    if (p.window.left >= 0 && p.window.left < far) r.lo = std::max(r.lo, i + off - p.window.left);
    if (p.window.right >= 0 && p.window.right < far) {
      r.hi = std::min(r.hi, i + off + p.window.right + 1);
    }
  }
  r.lo = std::max<std::int64_t>(r.lo, 0);
  r.hi = std::min(r.hi, sb);
  if (r.hi < r.lo) r.hi = r.lo;
  return r;
}

int thread_count(const RunOptions& options) {
  return options.threads > 0 ? options.threads : omp_get_max_threads();
}

}  // namespace sdpa::cpu
