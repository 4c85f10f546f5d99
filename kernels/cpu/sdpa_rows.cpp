#include "kernels/cpu/sdpa_rows.hpp"

#include <omp.h>

#include <algorithm>

#include "kernels/attended_keys.hpp"
#include "kernels/lowered_problem.hpp"

namespace sdpa::cpu {

KeyRange key_range(const sdpa_cts_params& p, std::int64_t i, std::int64_t lb, std::int64_t sb) {
  const KeyInterval keys = attended_keys(key_structure(p), i, lb, sb);
  return {keys.lo, std::max(keys.hi, keys.lo)};
}

int thread_count(const RunOptions& options) {
  return options.threads > 0 ? options.threads : omp_get_max_threads();
}

}  // namespace sdpa::cpu
