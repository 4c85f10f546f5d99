#include "reference/sdpa_backward.hpp"

#include <omp.h>

#include <stdexcept>
#include <string>

#include "reference/backward_engines.hpp"

namespace sdpa::reference {

Gradients run_sdpa_backward(const Problem& p, const Inputs& in, const std::vector<double>& d_out,
                            Precision precision, int threads) {
  if (auto r = validate(p); !r.empty()) throw std::invalid_argument("invalid problem: " + r);
  if (p.mask != MaskKind::none && !in.mask) {
    throw std::invalid_argument("reference: the problem has a mask tensor but no mask buffer");
  }
  const std::int64_t B = p.batch, H = p.heads_q, Hkv = p.heads_kv, L = p.len_q, S = p.len_kv;
  const std::int64_t Dq = p.head_dim_qk, Dv = p.head_dim_v;
  const auto n = [](std::int64_t x) { return static_cast<std::size_t>(x); };
  if (d_out.size() != n(B * H * L * Dv)) {
    throw std::invalid_argument("reference backward: dO has " + std::to_string(d_out.size()) +
                                " elements, the problem's O has " + std::to_string(B * H * L * Dv));
  }
  Gradients g;
  g.dq.assign(n(B * H * L * Dq), 0.0);
  g.dk.assign(n(B * Hkv * S * Dq), 0.0);
  g.dv.assign(n(B * Hkv * S * Dv), 0.0);
  if (p.mask == MaskKind::additive) g.ds.assign(n(B * H * L * S), 0.0);
  if (p.bias_grad) g.dbias.assign(n(mask_elements(p)), 0.0);
  if (B * Hkv == 0 || H == 0) return g;
  const std::int64_t group = H / Hkv;
  // One (b, key/value head) group per iteration, its query heads in order on one thread:
  // the bytes do not depend on the thread count or the schedule.
#pragma omp parallel for schedule(dynamic, 1) \
    num_threads(threads > 0 ? threads : omp_get_max_threads())
  for (std::int64_t bg = 0; bg < B * Hkv; ++bg) {
    const std::int64_t b = bg / Hkv, hk = bg % Hkv;
    std::vector<HeadInputs> gathered;
    gathered.reserve(n(group));
    for (std::int64_t h = hk * group; h < (hk + 1) * group; ++h)
      gathered.push_back(gather_head(p, in, b, h));
    std::vector<BackwardHead> heads;
    for (std::int64_t t = 0; t < group; ++t) {
      const std::int64_t row0 = (b * H + hk * group + t) * L;
      heads.push_back({&gathered[n(t)], d_out.data() + row0 * Dv, g.dq.data() + row0 * Dq,
                       g.ds.empty() ? nullptr : g.ds.data() + row0 * S, S});
    }
    const BackwardGroup out{g.dk.data() + bg * S * Dq, g.dv.data() + bg * S * Dv};
    if (precision == Precision::binary128) {
      backward_group_binary128(heads, p.dropout_p, out);
    } else {
      backward_group_f64(heads, p.dropout_p, out);
    }
  }
  if (p.bias_grad) {
    const StridedView mv = mask_view(p);
    std::vector<long double> sum(n(mask_elements(p)), 0.0L);
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t i = 0; i < L; ++i)
          for (std::int64_t j = 0; j < S; ++j) {
            const std::int64_t m =
                b * mv.stride[0] + h * mv.stride[1] + i * mv.stride[2] + j * mv.stride[3];
            sum[n(m)] += g.ds[n(((b * H + h) * L + i) * S + j)];
          }
    g.dbias.assign(sum.begin(), sum.end());
  }
  return g;
}

}  // namespace sdpa::reference
