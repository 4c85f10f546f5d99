#include "kernels/example/example_backend.hpp"

#include <cmath>
#include <vector>

namespace sdpa::example {
namespace {

class NaiveBackend final : public Backend {
 public:
  NaiveBackend() {
    // What it does, as data. Every field left at its default imposes no restriction
    // (kernels/backend.hpp); check_capabilities() turns these into NOT_SUPPORTED reasons.
    caps_.dtypes = {DType::f64, DType::f32};
    caps_.device = DeviceKind::cpu;
    caps_.dropout = false;         // no keep-mask: declines p > 0
    caps_.window = false;          // no sliding windows
    caps_.softcap = false;         // no logit softcapping
    caps_.padded_seqlens = false;  // dense problems only
    caps_.packed_seqlens = false;
    caps_.weights_output = false;
    caps_.deterministic = true;    // one thread, one fixed order
    caps_.batch_invariant = true;  // each row depends on its own inputs only
  }

  std::string_view name() const override { return "example.naive"; }
  const Capabilities& capabilities() const override { return caps_; }

  // Sums in f64 and rounds once to the output type.
  PrecisionContract precision(DType) const override {
    PrecisionContract c;
    c.accumulate = DType::f64;
    c.p_type = DType::f64;
    return c;
  }

  // Every reason it declines; the dispatcher and the judge call exactly this.
  Support supports(const Problem& p, const Device& device) const override {
    Support s;
    check_capabilities(caps_, p, device, s);
    return s;
  }

  void run(const Problem& p, const Buffers& buf, const Device&, const RunOptions&) const override {
    const std::int64_t L = p.len_q, S = p.len_kv, Dqk = p.head_dim_qk, Dv = p.head_dim_v;
    const std::int64_t group = p.heads_kv > 0 ? p.heads_q / p.heads_kv : 1;
    const double scale = effective_scale(p);
    const StridedView mv = p.mask != MaskKind::none ? mask_view(p) : StridedView{};
    std::vector<double> s(static_cast<std::size_t>(S));
    std::vector<bool> attends(static_cast<std::size_t>(S));
    for (std::int64_t b = 0; b < p.batch; ++b)
      for (std::int64_t h = 0; h < p.heads_q; ++h)
        for (std::int64_t i = 0; i < L; ++i) {
          // Logits of the keys row i may attend; -inf elsewhere (docs/SEMANTICS.md).
          double m = -INFINITY;
          bool nan = false;
          for (std::int64_t j = 0; j < S; ++j) {
            // Attended: allowed by the causal rule and the mask (a -inf additive entry masks).
            const std::int64_t mo =
                b * mv.stride[0] + h * mv.stride[1] + i * mv.stride[2] + j * mv.stride[3];
            const double bias =
                p.mask == MaskKind::additive ? load_as_double(p.dtype, buf.mask, mo) : 0.0;
            const bool attended =
                causal_allows(p, i, j) && bias != -INFINITY &&
                (p.mask != MaskKind::boolean || static_cast<const std::uint8_t*>(buf.mask)[mo]);
            double x = -INFINITY;
            if (attended) {
              double dot = 0;
              for (std::int64_t e = 0; e < Dqk; ++e) {
                dot +=
                    load_as_double(p.dtype, buf.q, element_offset(p.q, false, b, h, i, e)) *
                    load_as_double(p.dtype, buf.k, element_offset(p.k, false, b, h / group, j, e));
              }
              x = dot * scale + bias;
            }
            nan = nan || std::isnan(x);
            attends[static_cast<std::size_t>(j)] = attended;
            s[static_cast<std::size_t>(j)] = x;
            if (x > m) m = x;
          }
          const std::int64_t row = (b * p.heads_q + h) * L + i;
          // Softmax and P V; a row without an attended key has O = 0 and LSE = -inf.
          double z = 0;
          if (m > -INFINITY && !nan) {
            for (double& x : s) z += (x = std::exp(x - m));
          }
          for (std::int64_t d = 0; d < Dv; ++d) {
            double o = 0;
            if (nan) {
              o = NAN;
            } else if (z != 0) {  // (a NaN sum from +inf logits propagates: inf - inf)
              for (std::int64_t j = 0; j < S; ++j) {
                if (!attends[static_cast<std::size_t>(j)]) continue;  // never read masked V
                // P = e / z first: sum_j P_j V_j stays within the range of V (V near the
                // largest finite value would overflow as (sum_j e_j V_j) / z).
                o += s[static_cast<std::size_t>(j)] / z *
                     load_as_double(p.dtype, buf.v, element_offset(p.v, false, b, h / group, j, d));
              }
            }
            store_from_double(p.dtype, buf.o, element_offset(p.o, false, b, h, i, d), o);
          }
          if (buf.lse) {
            buf.lse[row] = static_cast<float>(nan ? NAN : z != 0 ? m + std::log(z) : -INFINITY);
          }
        }
  }

 private:
  // Causal rule of docs/SEMANTICS.md: top-left j <= i, bottom-right j <= i + S - L.
  static bool causal_allows(const Problem& p, std::int64_t i, std::int64_t j) {
    if (p.causal == Causal::top_left) return j <= i;
    if (p.causal == Causal::bottom_right) return j <= i + (p.len_kv - p.len_q);
    return true;
  }

  Capabilities caps_;
};

}  // namespace

const Backend& naive_backend() {
  static const NaiveBackend b;
  return b;
}

}  // namespace sdpa::example
