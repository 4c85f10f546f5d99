#include "kernels/cpu/sdpa_rows.hpp"

#include <omp.h>

#include <algorithm>

#include "kernels/attended_keys.hpp"
#include "kernels/lowered_problem.hpp"

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
  const KeyInterval keys = attended_keys(key_structure(p), i, lb, sb);
  return {keys.lo, std::max(keys.hi, keys.lo)};
}

int thread_count(const RunOptions& options) {
  return options.threads > 0 ? options.threads : omp_get_max_threads();
}

}  // namespace sdpa::cpu
