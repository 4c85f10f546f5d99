// Helpers shared by the reference tests: logical input data over the padded shape,
// buffers laid out exactly as a problem's views describe (everything the views do not
// cover holds NaN, so a read outside them shows), and bitwise comparison of results.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/problem.hpp"
#include "core/tensor_view.hpp"
#include "reference/sdpa_reference.hpp"

namespace sdpa::test {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kU64 = 0x1p-53;  // unit roundoff of binary64

using reference::Precision;
using reference::Result;

// Logical inputs, row-major over the padded (unpacked) shapes:
// q [B][Hq][L][Dqk], k [B][Hkv][S][Dqk], v [B][Hkv][S][Dv], mask [B][Hq][L][S]
// (boolean: nonzero = attend; additive: the bias). Rows beyond L_b / S_b exist here
// even for a packed problem; the packed buffers simply do not hold them.
struct Data {
  std::vector<double> q, k, v, mask;
};

inline std::size_t qi(const Problem& p, std::int64_t b, std::int64_t h, std::int64_t i,
                      std::int64_t e) {
  return static_cast<std::size_t>(((b * p.heads_q + h) * p.len_q + i) * p.head_dim_qk + e);
}
inline std::size_t ki(const Problem& p, std::int64_t b, std::int64_t h, std::int64_t j,
                      std::int64_t e) {
  return static_cast<std::size_t>(((b * p.heads_kv + h) * p.len_kv + j) * p.head_dim_qk + e);
}
inline std::size_t vi(const Problem& p, std::int64_t b, std::int64_t h, std::int64_t j,
                      std::int64_t d) {
  return static_cast<std::size_t>(((b * p.heads_kv + h) * p.len_kv + j) * p.head_dim_v + d);
}
// Index into a mask or attention-weights array [B][Hq][L][S].
inline std::size_t mi(const Problem& p, std::int64_t b, std::int64_t h, std::int64_t i,
                      std::int64_t j) {
  return static_cast<std::size_t>(((b * p.heads_q + h) * p.len_q + i) * p.len_kv + j);
}
// Index into O and the per-element magnitudes [B][Hq][L][Dv].
inline std::size_t oi(const Problem& p, std::int64_t b, std::int64_t h, std::int64_t i,
                      std::int64_t d) {
  return static_cast<std::size_t>(((b * p.heads_q + h) * p.len_q + i) * p.head_dim_v + d);
}
// Index into LSE and the per-row magnitudes [B][Hq][L].
inline std::size_t ri(const Problem& p, std::int64_t b, std::int64_t h, std::int64_t i) {
  return static_cast<std::size_t>((b * p.heads_q + h) * p.len_q + i);
}

// A problem with the given shape, contiguous bhsd layout, f64 unless told.
inline Problem make_problem(std::int64_t B, std::int64_t Hq, std::int64_t Hkv, std::int64_t L,
                            std::int64_t S, std::int64_t Dqk, std::int64_t Dv,
                            DType t = DType::f64) {
  Problem p;
  p.batch = B;
  p.heads_q = Hq;
  p.heads_kv = Hkv;
  p.len_q = L;
  p.len_kv = S;
  p.head_dim_qk = Dqk;
  p.head_dim_v = Dv;
  p.dtype = t;
  apply_layout(p, LayoutKind::bhsd, 0, 0);
  return p;
}

// Zero-filled data of the problem's shapes; a boolean mask starts all-attend, an additive
// one all-zero.
inline Data zero_data(const Problem& p) {
  Data d;
  d.q.assign(static_cast<std::size_t>(p.batch * p.heads_q * p.len_q * p.head_dim_qk), 0.0);
  d.k.assign(static_cast<std::size_t>(p.batch * p.heads_kv * p.len_kv * p.head_dim_qk), 0.0);
  d.v.assign(static_cast<std::size_t>(p.batch * p.heads_kv * p.len_kv * p.head_dim_v), 0.0);
  if (p.mask != MaskKind::none) {
    d.mask.assign(static_cast<std::size_t>(p.batch * p.heads_q * p.len_q * p.len_kv),
                  p.mask == MaskKind::boolean ? 1.0 : 0.0);
  }
  return d;
}

// x rounded once to type t.
inline double round_to(DType t, double x) {
  unsigned char buf[8];
  store_from_double(t, buf, 0, x);
  return load_as_double(t, buf, 0);
}

// A small deterministic generator (std::mt19937_64 is specified bit for bit; the standard
// distributions are not, so the doubles are made by hand).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : g_(seed) {}
  double uniform() { return static_cast<double>(g_() >> 11) * 0x1p-53; }  // [0, 1)
  // Bell-shaped, unit variance, |x| < 3.5 (Irwin-Hall of four uniforms).
  double normal() { return (uniform() + uniform() + uniform() + uniform() - 2.0) * std::sqrt(3.0); }
  // k / 32 with |k| <= 64: exact in every dtype, also after scaling by 2^-4 ... 2^4.
  double dyadic() { return static_cast<double>(static_cast<std::int64_t>(g_() % 129) - 64) / 32.0; }
  std::int64_t below(std::int64_t n) {
    return static_cast<std::int64_t>(g_() % static_cast<std::uint64_t>(n));
  }
  std::uint64_t bits() { return g_(); }

 private:
  std::mt19937_64 g_;
};

// Fills q, k and v with random values rounded to the problem's type.
inline void fill_random(const Problem& p, Data& d, std::uint64_t seed, bool dyadic = false) {
  Rng rng(seed);
  for (auto* vec : {&d.q, &d.k, &d.v}) {
    for (double& x : *vec) x = round_to(p.dtype, dyadic ? rng.dyadic() : rng.normal());
  }
}

// Input buffers laid out as the problem's views describe. Every element the views do not
// cover (base offset, gaps between rows, a trailing margin) holds `filler`, NaN by default.
class Buffers {
 public:
  Buffers(const Problem& p, const Data& d, double filler = kNaN) {
    const auto cuq = cu_seqlens_q(p), cuk = cu_seqlens_kv(p);
    q0_ = place(p, q_, q_view(p), p.q, d.q, p.heads_q, p.len_q, p.head_dim_qk, cuq, true, filler);
    k0_ =
        place(p, k_, k_view(p), p.k, d.k, p.heads_kv, p.len_kv, p.head_dim_qk, cuk, false, filler);
    v0_ = place(p, v_, v_view(p), p.v, d.v, p.heads_kv, p.len_kv, p.head_dim_v, cuk, false, filler);
    if (p.mask != MaskKind::none) {
      const StridedView mv = mask_view(p);
      const bool boolean = p.mask == MaskKind::boolean;
      const std::size_t es = boolean ? 1 : dtype_size(p.dtype);
      const std::int64_t n = view_extent(mv) + kMargin;
      mask_.assign(static_cast<std::size_t>(n) * es / 8 + 1, 0);
      auto* base = reinterpret_cast<unsigned char*>(mask_.data());
      for (std::int64_t x = 0; x < n; ++x) {
        if (boolean) {
          base[x] = 0xA5;
        } else {
          store_from_double(p.dtype, base, x, filler);
        }
      }
      for (std::int64_t b = 0; b < p.batch; ++b)
        for (std::int64_t h = 0; h < p.heads_q; ++h)
          for (std::int64_t i = 0; i < p.len_q; ++i)
            for (std::int64_t j = 0; j < p.len_kv; ++j) {
              const std::int64_t off =
                  b * mv.stride[0] + h * mv.stride[1] + i * mv.stride[2] + j * mv.stride[3];
              const double x = d.mask[mi(p, b, h, i, j)];
              if (boolean) {
                base[off] = x != 0 ? 1 : 0;
              } else {
                store_from_double(p.dtype, base, off, x);
              }
            }
    }
  }

  reference::Inputs inputs() const {
    return {q_.empty() ? nullptr : bytes(q_) + q0_, k_.empty() ? nullptr : bytes(k_) + k0_,
            v_.empty() ? nullptr : bytes(v_) + v0_, mask_.empty() ? nullptr : bytes(mask_)};
  }

 private:
  static constexpr std::int64_t kMargin = 16;
  static const unsigned char* bytes(const std::vector<std::uint64_t>& v) {
    return reinterpret_cast<const unsigned char*>(v.data());
  }

  // Allocates and fills one tensor; returns the byte offset of element 0.
  static std::size_t place(const Problem& p, std::vector<std::uint64_t>& store,
                           const StridedView& view, const TensorLayout& t,
                           const std::vector<double>& logical, std::int64_t heads,
                           std::int64_t rows, std::int64_t dim, const std::vector<std::int64_t>& cu,
                           bool q_side, double filler) {
    const std::size_t es = dtype_size(p.dtype);
    const std::int64_t n = t.base_offset + view_extent(view) + kMargin;
    store.assign(static_cast<std::size_t>(n) * es / 8 + 1, 0);
    auto* base = reinterpret_cast<unsigned char*>(store.data());
    for (std::int64_t x = 0; x < n; ++x) store_from_double(p.dtype, base, x, filler);
    unsigned char* e0 = base + t.base_offset * es;
    for (std::int64_t b = 0; b < p.batch; ++b) {
      const std::int64_t valid = q_side ? seqlen_q(p, b) : seqlen_kv(p, b);
      for (std::int64_t h = 0; h < heads; ++h)
        for (std::int64_t r = 0; r < rows; ++r) {
          if (p.packed && r >= valid) continue;  // the packed layout has no such row
          const std::int64_t row = p.packed ? cu[static_cast<std::size_t>(b)] + r : r;
          for (std::int64_t e = 0; e < dim; ++e) {
            const std::int64_t off = element_offset(t, p.packed, b, h, row, e);
            const auto li = static_cast<std::size_t>(((b * heads + h) * rows + r) * dim + e);
            store_from_double(p.dtype, e0, off, logical[li]);
          }
        }
    }
    return static_cast<std::size_t>(t.base_offset) * es;
  }

  std::vector<std::uint64_t> q_, k_, v_, mask_;
  std::size_t q0_ = 0, k0_ = 0, v0_ = 0;
};

// Runs the reference on the data laid out as the problem says. One thread unless told:
// thread counts are tested on their own, and tiny problems run faster without a team.
inline Result run(const Problem& p, const Data& d, Precision prec = Precision::f64,
                  int threads = 1) {
  Buffers buf(p, d);
  return reference::run_sdpa(p, buf.inputs(), prec, threads);
}

inline bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// "" when the arrays are equal bit for bit, else where they first differ.
inline std::string diff_bits(const std::vector<double>& a, const std::vector<double>& b,
                             const char* name) {
  std::ostringstream s;
  s.precision(17);
  if (a.size() != b.size()) {
    s << name << ": sizes " << a.size() << " vs " << b.size();
    return s.str();
  }
  for (std::size_t x = 0; x < a.size(); ++x) {
    if (!same_bits(a[x], b[x])) {
      s << name << "[" << x << "]: " << a[x] << " vs " << b[x];
      return s.str();
    }
  }
  return "";
}

// "" when every array of the two results is equal bit for bit.
inline std::string diff_results(const Result& a, const Result& b) {
  const struct {
    const char* name;
    const std::vector<double> Result::*field;
  } fields[] = {{"o", &Result::o},
                {"lse", &Result::lse},
                {"weights", &Result::weights},
                {"mag_a", &Result::mag_a},
                {"mag_c", &Result::mag_c},
                {"mag_g", &Result::mag_g},
                {"mag_u", &Result::mag_u},
                {"mag_exp", &Result::mag_exp},
                {"lse_mag_c", &Result::lse_mag_c},
                {"lse_mag_g", &Result::lse_mag_g}};
  for (const auto& f : fields) {
    if (auto r = diff_bits(a.*(f.field), b.*(f.field), f.name); !r.empty()) return r;
  }
  return "";
}

}  // namespace sdpa::test
