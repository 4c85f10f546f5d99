#include "kernels/example/example_backend.hpp"

#include <cmath>
#include <vector>

#include "kernels/attended_keys.hpp"
#include "kernels/lowered_problem.hpp"

namespace sdpa::example {
namespace {

class NaiveBackend final : public Backend {
 public:
  NaiveBackend() {
    // What it does, as data (the features: kernels/features.def, each false until declared).
    // Every forward input, then what it lacks; check_capabilities() turns these into
    // NOT_SUPPORTED reasons.
    caps_ = Capabilities::every_forward_input();
    caps_.dtypes = {DType::f64, DType::f32};
    caps_.device = DeviceKind::cpu;
    caps_.dropout = false;         // no keep-mask: declines p > 0
    caps_.window = false;          // no sliding windows
    caps_.softcap = false;         // no logit softcapping
    caps_.padded_seqlens = false;  // dense problems only
    caps_.packed_seqlens = false;
    caps_.weights = false;
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
  Support supports(const LoweredProblem& p, const Device& device) const override {
    Support s;
    check_capabilities(caps_, p, device, s);
    return s;
  }

  // Reads only the lowered problem (include/sdpa_cts/params.h): strides in elements, every
  // pointer at element 0 of its view.
  void run(const LoweredProblem& lowered, const Device&, const RunOptions&) const override {
    const sdpa_cts_params& p = lowered.params();
    const DType t = lowered.dtype();
    const std::int64_t L = p.len_q, S = p.len_kv, Dqk = p.head_dim_qk, Dv = p.head_dim_v;
    const std::int64_t* ms = p.mask_stride;
    std::vector<double> s(static_cast<std::size_t>(S));
    std::vector<bool> attends(static_cast<std::size_t>(S));
    for (std::int64_t b = 0; b < p.batch; ++b)
      for (std::int64_t h = 0; h < p.heads_q; ++h)
        for (std::int64_t i = 0; i < L; ++i) {
          // The keys the causal rule leaves row i (docs/SEMANTICS.md, step 5).
          const KeyInterval keys = attended_keys(key_structure(p), i, L, S);
          // Logits of the keys row i may attend; -inf elsewhere.
          double m = -INFINITY;
          bool nan = false;
          for (std::int64_t j = 0; j < S; ++j) {
            // Attended: inside the interval and allowed by the mask (a -inf additive entry
            // masks).
            const std::int64_t mo = b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3];
            const double bias =
                p.mask_kind == SDPA_CTS_MASK_ADDITIVE ? load_as_double(t, p.mask, mo) : 0.0;
            const bool attended =
                j >= keys.lo && j < keys.hi && bias != -INFINITY &&
                (p.mask_kind != SDPA_CTS_MASK_BOOL || static_cast<const std::uint8_t*>(p.mask)[mo]);
            double x = -INFINITY;
            if (attended) {
              double dot = 0;
              for (std::int64_t e = 0; e < Dqk; ++e) {
                dot += load_as_double(t, p.q, offset(p.q_stride, b, h, i, e)) *
                       load_as_double(t, p.k, offset(p.k_stride, b, h / p.group, j, e));
              }
              x = dot * p.scale + bias;
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
                     load_as_double(t, p.v, offset(p.v_stride, b, h / p.group, j, d));
              }
            }
            store_from_double(t, p.o, offset(p.o_stride, b, h, i, d), o);
          }
          if (p.lse) {
            p.lse[row] = static_cast<float>(nan ? NAN : z != 0 ? m + std::log(z) : -INFINITY);
          }
        }
  }

 private:
  // Element offset of (b, h, row, d) in a dense-batch tensor with these strides (this
  // backend declines packed rows).
  static std::int64_t offset(const std::int64_t* stride, std::int64_t b, std::int64_t h,
                             std::int64_t row, std::int64_t d) {
    return b * stride[0] + h * stride[1] + row * stride[2] + d * stride[3];
  }

  Capabilities caps_;
};

}  // namespace

const Backend& naive_backend() {
  static const NaiveBackend b;
  return b;
}

}  // namespace sdpa::example
