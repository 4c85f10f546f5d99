#include "reference/sdpa_reference.hpp"

#include <omp.h>

#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>

#include "reference/head_inputs.hpp"

namespace sdpa::reference {

Result run_sdpa(const Problem& p, const Inputs& in, Precision precision, int threads) {
  if (auto r = validate(p); !r.empty()) throw std::invalid_argument("invalid problem: " + r);
  if (p.mask != MaskKind::none && !in.mask) {
    throw std::invalid_argument("reference: the problem has a mask tensor but no mask buffer");
  }
  // Any input buffer may be absent only if its tensor is empty.
  for (const auto& [ptr, view, name] :
       {std::tuple{in.q, q_view(p), "q"}, std::tuple{in.k, k_view(p), "k"},
        std::tuple{in.v, v_view(p), "v"}}) {
    if (!ptr && view_numel(view) != 0) {
      throw std::invalid_argument(std::string("reference: tensor ") + name +
                                  " is not empty but has no buffer");
    }
  }
  const std::int64_t B = p.batch, H = p.heads_q, L = p.len_q, S = p.len_kv, Dv = p.head_dim_v;
  const auto n_out = static_cast<std::size_t>(B * H * L * Dv);
  const auto n_row = static_cast<std::size_t>(B * H * L);
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  Result r;
  r.o.assign(n_out, 0.0);
  r.mag_a.assign(n_out, 0.0);
  r.mag_c.assign(n_out, 0.0);
  r.mag_g.assign(n_out, 0.0);
  r.mag_u.assign(n_out, 0.0);
  r.mag_exp.assign(n_row, 0.0);
  r.lse.assign(n_row, kNegInf);
  r.lse_mag_c.assign(n_row, 0.0);
  r.lse_mag_g.assign(n_row, 0.0);
  if (p.want_weights) r.weights.assign(static_cast<std::size_t>(B * H * L * S), 0.0);
  if (n_row == 0) return r;
  const std::int64_t slices = B * H;
  // One (b, h) slice per iteration, each computed by one thread in a fixed order: the
  // bytes do not depend on the thread count or the schedule.
#pragma omp parallel for schedule(dynamic, 1) \
    num_threads(threads > 0 ? threads : omp_get_max_threads())
  for (std::int64_t bh = 0; bh < slices; ++bh) {
    const std::int64_t b = bh / H, h = bh % H;
    const HeadInputs hd = gather_head(p, in, b, h);
    const std::size_t row0 = static_cast<std::size_t>(bh * L);
    HeadOutputs out{r.o.data() + row0 * Dv,
                    r.lse.data() + row0,
                    p.want_weights ? r.weights.data() + row0 * S : nullptr,
                    r.mag_a.data() + row0 * Dv,
                    r.mag_c.data() + row0 * Dv,
                    r.mag_g.data() + row0 * Dv,
                    r.mag_u.data() + row0 * Dv,
                    r.mag_exp.data() + row0,
                    r.lse_mag_c.data() + row0,
                    r.lse_mag_g.data() + row0,
                    S};
    if (precision == Precision::binary128) {
      compute_head_binary128(hd, p.dropout_p, out);
    } else {
      compute_head_f64(hd, p.dropout_p, out);
    }
  }
  return r;
}

}  // namespace sdpa::reference
