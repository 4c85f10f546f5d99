// cpu.math: the textbook algorithm. For each (b, h) it materialises the logits
// S = scale * Q K^T for a block of query rows against every key the block may attend,
// runs the softmax over each complete row, then computes O = P V. f64 problems compute in
// f64; f32, f16 and bf16 problems compute in f32 (half inputs are widened exactly, as in
// PyTorch's math backend). docs/KERNELS.md describes the design.
//
// GEMMs: f32 uses this project's packed AVX-512/AVX2 micro-kernel (vec_kernels) or OpenBLAS
// sgemm, whichever measured faster (docs/KERNELS.md, kMathGemm below); f64 uses OpenBLAS
// dgemm. BLAS is always called single-threaded from inside our own OpenMP loop over (b, h),
// so every (b, h) slice is computed by one thread with one fixed sequence of calls: the
// result does not depend on the thread count (deterministic) nor on the rest of the batch
// (batch-invariant).
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_backends.hpp"
#include "kernels/cpu/isa_target.hpp"
#include "kernels/cpu/math_backward.hpp"
#include "kernels/cpu/sdpa_rows.hpp"
#include "kernels/cpu/vec_kernels.hpp"

namespace sdpa::cpu {
namespace {

// Which f32 GEMM cpu.math uses on the SIMD targets (the scalar target always uses the
// portable micro-kernel, so that forcing it tests the portable code). Measured on the
// development VM (docs/PERFORMANCE.md); SDPA_CTS_MATH_GEMM=own|openblas overrides it for
// benchmarking.
enum class GemmKind { own, openblas };
constexpr GemmKind kMathGemm = GemmKind::own;

GemmKind gemm_kind() {
  static const GemmKind k = [] {
    const char* e = std::getenv("SDPA_CTS_MATH_GEMM");
    if (e && std::string(e) == "openblas") return GemmKind::openblas;
    if (e && std::string(e) == "own") return GemmKind::own;
    return kMathGemm;
  }();
  return k;
}

// OpenBLAS must run single-threaded: the parallelism is ours (over (b, h)).
void blas_single_thread() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

std::int64_t round_up(std::int64_t x, std::int64_t m) { return (x + m - 1) / m * m; }

// Query rows per block: the logits tile (rows x S) stays near 2 MiB. Depends on S only.
std::int64_t row_block(std::int64_t s_pad) {
  return std::clamp<std::int64_t>((std::int64_t(2) << 20) / (4 * std::max<std::int64_t>(s_pad, 1)),
                                  8, 192);
}

// Writes padding rows and fully masked rows.
template <typename T>
struct Outputs {
  const sdpa_cts_params& p;
  const Geometry& g;
  std::size_t esz;

  void zero_o_row(std::int64_t b, std::int64_t h, std::int64_t i) const {
    const std::int64_t off = g.q_row(p.o_stride, b, h, i);
    for (std::int64_t d = 0; d < p.head_dim_v; ++d)
      store_from_double(g.dtype, p.o, off + d * p.o_stride[3], 0.0);
  }
  void lse(std::int64_t b, std::int64_t h, std::int64_t i, double v) const {
    if (p.want_lse) p.lse[(b * p.heads_q + h) * p.len_q + i] = static_cast<float>(v);
  }
  void* weights_row(std::int64_t b, std::int64_t h, std::int64_t i) const {
    return at(p.weights, ((b * p.heads_q + h) * p.len_q + i) * p.len_kv, esz);
  }
  void zero_weights(std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t j0,
                    std::int64_t j1) const {
    if (!p.want_weights || j1 <= j0) return;
    std::memset(at(weights_row(b, h, i), j0, esz), 0, static_cast<std::size_t>(j1 - j0) * esz);
  }
};

// Per-thread scratch, reused across slices.
template <typename T>
struct Scratch {
  std::vector<T> k, v, q, s, o, tmp;
  template <typename U>
  static U* grow(std::vector<U>& v, std::int64_t n) {
    if (static_cast<std::int64_t>(v.size()) < n) v.resize(static_cast<std::size_t>(n));
    return v.data();
  }
};

// The f32 engine: own micro-kernel (packed panels) or OpenBLAS, table row operations.
struct F32Engine {
  const vk::Table& t;
  bool blas;
  using T = float;
  F32RowOps ops() const { return {t}; }
  std::int64_t col_align() const { return blas ? 1 : t.nr; }

  // K and V of slice (b, hk) in the engine's layout.
  void prepare(const sdpa_cts_params& p, const Geometry& g, std::int64_t b, std::int64_t hk,
               std::int64_t sb, Scratch<T>& sc) const {
    const std::size_t esz = dtype_size(g.dtype);
    const void* k0 = at(p.k, g.kv_row(p.k_stride, b, hk, 0), esz);
    const void* v0 = at(p.v, g.kv_row(p.v_stride, b, hk, 0), esz);
    const std::int64_t dq = p.head_dim_qk, dv = p.head_dim_v;
    float* tmp = Scratch<T>::grow(sc.tmp, std::max(dq, sb) + 16);
    if (blas) {
      float* k = Scratch<T>::grow(sc.k, sb * dq);
      float* v = Scratch<T>::grow(sc.v, sb * dv);
      for (std::int64_t j = 0; j < sb; ++j) {
        t.load_row(g.dtype, at(k0, j * p.k_stride[2], esz), p.k_stride[3], dq, k + j * dq);
        t.load_row(g.dtype, at(v0, j * p.v_stride[2], esz), p.v_stride[3], dv, v + j * dv);
      }
      return;
    }
    const std::int64_t nr = t.nr;
    // K^T: B[e][j] = K[j][e], panels of nr keys. V: B[j][d] = V[j][d], panels of nr columns.
    float* k = Scratch<T>::grow(sc.k, round_up(sb, nr) * dq);
    float* v = Scratch<T>::grow(sc.v, round_up(dv, nr) * sb);
    t.pack_b(g.dtype, k0, p.k_stride[3], p.k_stride[2], dq, sb, k, tmp);
    t.pack_b(g.dtype, v0, p.v_stride[2], p.v_stride[3], sb, dv, v, tmp);
  }
  // s[r][j] for j in [j0, j1) (own: whole panels around it) = q[r] . k_j.
  void logits(const sdpa_cts_params& p, std::int64_t rows, const float* q, std::int64_t sb,
              std::int64_t j0, std::int64_t j1, float* s, std::int64_t lds,
              const Scratch<T>& sc) const {
    const std::int64_t dq = p.head_dim_qk;
    if (blas) {
      if (dq == 0) {
        for (std::int64_t r = 0; r < rows; ++r) std::fill(s + r * lds + j0, s + r * lds + j1, 0.f);
        return;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows),
                  static_cast<int>(j1 - j0), static_cast<int>(dq), 1.0f, q, static_cast<int>(dq),
                  sc.k.data() + j0 * dq, static_cast<int>(dq), 0.0f, s + j0, static_cast<int>(lds));
      return;
    }
    const std::int64_t nr = t.nr, p0 = j0 / nr, p1 = (j1 + nr - 1) / nr;
    t.gemm(rows, (p1 - p0) * nr, dq, q, dq, sc.k.data() + p0 * dq * nr, dq * nr, s + p0 * nr, lds);
  }
  // o[r][d] = sum_{j in [j0, j1)} s[r][j] v_j[d].
  void values(const sdpa_cts_params& p, std::int64_t rows, const float* s, std::int64_t lds,
              std::int64_t sb, std::int64_t j0, std::int64_t j1, float* o, std::int64_t ldo,
              const Scratch<T>& sc) const {
    const std::int64_t dv = p.head_dim_v;
    if (dv == 0) return;
    if (blas) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(rows),
                  static_cast<int>(dv), static_cast<int>(j1 - j0), 1.0f, s + j0,
                  static_cast<int>(lds), sc.v.data() + j0 * dv, static_cast<int>(dv), 0.0f, o,
                  static_cast<int>(ldo));
      return;
    }
    t.gemm(rows, dv, j1 - j0, s + j0, lds, sc.v.data() + j0 * t.nr, sb * t.nr, o, ldo);
  }
  void load_q(DType type, const void* src, std::int64_t stride, std::int64_t n, float* dst) const {
    t.load_row(type, src, stride, n, dst);
  }
  void scale_row(float* x, std::int64_t n, double f) const {
    t.row_mul(x, n, static_cast<float>(f));
  }
  void store(DType type, const float* src, std::int64_t n, void* dst, std::int64_t stride) const {
    t.store_row(type, src, n, dst, stride);
  }
};

// The f64 engine: OpenBLAS dgemm, scalar row operations.
struct F64Engine {
  using T = double;
  F64RowOps ops() const { return {}; }
  std::int64_t col_align() const { return 1; }
  void prepare(const sdpa_cts_params& p, const Geometry& g, std::int64_t b, std::int64_t hk,
               std::int64_t sb, Scratch<T>& sc) const {
    const std::int64_t dq = p.head_dim_qk, dv = p.head_dim_v;
    double* k = Scratch<T>::grow(sc.k, sb * dq);
    double* v = Scratch<T>::grow(sc.v, sb * dv);
    Scratch<T>::grow(sc.tmp, sb + 16);
    const std::int64_t k0 = g.kv_row(p.k_stride, b, hk, 0), v0 = g.kv_row(p.v_stride, b, hk, 0);
    for (std::int64_t j = 0; j < sb; ++j) {
      for (std::int64_t e = 0; e < dq; ++e)
        k[j * dq + e] = load_as_double(g.dtype, p.k, k0 + j * p.k_stride[2] + e * p.k_stride[3]);
      for (std::int64_t d = 0; d < dv; ++d)
        v[j * dv + d] = load_as_double(g.dtype, p.v, v0 + j * p.v_stride[2] + d * p.v_stride[3]);
    }
  }
  void logits(const sdpa_cts_params& p, std::int64_t rows, const double* q, std::int64_t sb,
              std::int64_t j0, std::int64_t j1, double* s, std::int64_t lds,
              const Scratch<T>& sc) const {
    const std::int64_t dq = p.head_dim_qk;
    if (dq == 0) {
      for (std::int64_t r = 0; r < rows; ++r) std::fill(s + r * lds + j0, s + r * lds + j1, 0.0);
      return;
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows),
                static_cast<int>(j1 - j0), static_cast<int>(dq), 1.0, q, static_cast<int>(dq),
                sc.k.data() + j0 * dq, static_cast<int>(dq), 0.0, s + j0, static_cast<int>(lds));
  }
  void values(const sdpa_cts_params& p, std::int64_t rows, const double* s, std::int64_t lds,
              std::int64_t sb, std::int64_t j0, std::int64_t j1, double* o, std::int64_t ldo,
              const Scratch<T>& sc) const {
    const std::int64_t dv = p.head_dim_v;
    if (dv == 0) return;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(rows),
                static_cast<int>(dv), static_cast<int>(j1 - j0), 1.0, s + j0, static_cast<int>(lds),
                sc.v.data() + j0 * dv, static_cast<int>(dv), 0.0, o, static_cast<int>(ldo));
  }
  void load_q(DType type, const void* src, std::int64_t stride, std::int64_t n, double* dst) const {
    for (std::int64_t e = 0; e < n; ++e) dst[e] = load_as_double(type, src, e * stride);
  }
  void scale_row(double* x, std::int64_t n, double f) const {
    for (std::int64_t e = 0; e < n; ++e) x[e] *= f;
  }
  void store(DType type, const double* src, std::int64_t n, void* dst, std::int64_t stride) const {
    for (std::int64_t e = 0; e < n; ++e) store_from_double(type, dst, e * stride, src[e]);
  }
};

// One (b, h) slice: every output it owns (O rows, LSE and weights rows, padding included).
template <typename Engine>
void run_slice(const Engine& eng, const sdpa_cts_params& p, const Geometry& g, std::int64_t b,
               std::int64_t h, Scratch<typename Engine::T>& sc) {
  using T = typename Engine::T;
  const Outputs<T> out{p, g, dtype_size(g.dtype)};
  const std::size_t esz = out.esz;
  const std::int64_t lb = g.lq(b), sb = g.skv(b), hk = h / g.group;
  const std::int64_t dq = p.head_dim_qk, dv = p.head_dim_v;
  // Padding rows (only in the padded layout; packed rows beyond L_b do not exist) and the
  // LSE / weights entries of rows beyond L_b, which exist in both layouts.
  for (std::int64_t i = lb; i < p.len_q; ++i) {
    if (!p.packed) out.zero_o_row(b, h, i);
    out.lse(b, h, i, -INFINITY);
    out.zero_weights(b, h, i, 0, p.len_kv);
  }
  if (lb == 0) return;
  if (sb == 0) {
    for (std::int64_t i = 0; i < lb; ++i) {
      out.zero_o_row(b, h, i);
      out.lse(b, h, i, -INFINITY);
      out.zero_weights(b, h, i, 0, p.len_kv);
    }
    return;
  }
  eng.prepare(p, g, b, hk, sb, sc);
  const std::int64_t lds = round_up(sb, eng.col_align());
  const std::int64_t rb = row_block(lds);
  const std::int64_t ldo = round_up(std::max<std::int64_t>(dv, 1), 32);  // >= any target's nr
  T* q = Scratch<T>::grow(sc.q, rb * std::max<std::int64_t>(dq, 1));
  T* s = Scratch<T>::grow(sc.s, rb * lds);
  T* o = Scratch<T>::grow(sc.o, rb * ldo);
  T* tmp = Scratch<T>::grow(sc.tmp, std::max<std::int64_t>(sb, dq) + 16);
  const auto ops = eng.ops();
  std::vector<KeyRange> ranges(static_cast<std::size_t>(rb));
  std::vector<RowStats> stats(static_cast<std::size_t>(rb));

  for (std::int64_t i0 = 0; i0 < lb; i0 += rb) {
    const std::int64_t rows = std::min(rb, lb - i0);
    // Keys any row of the block may attend: the logits are computed for these only.
    std::int64_t j0 = sb, j1 = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      ranges[r] = key_range(p, i0 + r, lb, sb);
      if (!ranges[r].empty()) {
        j0 = std::min(j0, ranges[r].lo);
        j1 = std::max(j1, ranges[r].hi);
      }
    }
    if (j1 > j0) {
      for (std::int64_t r = 0; r < rows; ++r) {
        eng.load_q(g.dtype, at(p.q, g.q_row(p.q_stride, b, h, i0 + r), esz), p.q_stride[3], dq,
                   q + r * dq);
      }
      eng.logits(p, rows, q, sb, j0, j1, s, lds, sc);
      for (std::int64_t r = 0; r < rows; ++r) {
        stats[r] = row_softmax_block<T>(ops, g, b, h, i0 + r, ranges[r].lo, ranges[r].hi,
                                        s + r * lds + j0, j0, j1 - j0, tmp);
      }
      eng.values(p, rows, s, lds, sb, j0, j1, o, ldo, sc);
    } else {
      for (std::int64_t r = 0; r < rows; ++r) stats[r] = RowStats{};
    }
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t i = i0 + r;
      const RowStats& st = stats[r];
      if (!st.any()) {  // fully masked: O = 0, LSE = -inf, P = 0
        out.zero_o_row(b, h, i);
        out.lse(b, h, i, -INFINITY);
        out.zero_weights(b, h, i, 0, p.len_kv);
        continue;
      }
      const bool nan = std::isnan(st.m);
      double inv = nan ? st.m : 1.0 / (st.l * (1.0 - p.dropout_p));
      T* orow = o + r * ldo;
      if (!nan && std::isfinite(st.l) && any_nonfinite(orow, dv)) {
        // P V overflowed: again with P scaled by 2^-k (overflow guard, sdpa_rows.hpp).
        const int k = overflow_shift(j1 - j0);
        T* srow = s + r * lds;
        eng.scale_row(srow + j0, j1 - j0, std::ldexp(1.0, -k));
        eng.values(p, 1, srow, lds, sb, j0, j1, orow, ldo, sc);
        inv = std::ldexp(inv, k);
      }
      eng.scale_row(orow, dv, inv);
      eng.store(g.dtype, orow, dv, at(p.o, g.q_row(p.o_stride, b, h, i), esz), p.o_stride[3]);
      out.lse(b, h, i, nan ? st.m : st.m + std::log(st.l));
      if (p.want_weights) {
        T* srow = s + r * lds;
        if (!nan) eng.scale_row(srow + j0, j1 - j0, inv);
        out.zero_weights(b, h, i, 0, j0);
        eng.store(g.dtype, srow + j0, j1 - j0, at(out.weights_row(b, h, i), j0, esz), 1);
        out.zero_weights(b, h, i, j1, p.len_kv);
      }
    }
  }
}

template <typename Engine>
void run_all(const Engine& eng, const LoweredProblem& lowered, const RunOptions& options) {
  const Geometry g(lowered);
  const sdpa_cts_params& p = g.p;
  const std::int64_t slices = p.batch * p.heads_q;
  if (slices == 0 || p.len_q == 0) return;
#pragma omp parallel num_threads(thread_count(options))
  {
    Scratch<typename Engine::T> sc;
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t bh = 0; bh < slices; ++bh) {
      run_slice(eng, p, g, bh / p.heads_q, bh % p.heads_q, sc);
    }
  }
}

class MathBackend final : public Backend {
 public:
  MathBackend() {
    caps_ = Capabilities::every_forward_input();
    caps_.dtypes = {DType::f64, DType::f32, DType::f16, DType::bf16};
    caps_.deterministic = true;
    caps_.batch_invariant = true;
    caps_.backward = true;
    caps_.bias_gradient = true;  // math_backward.cpp
    caps_.traits.pytorch = PytorchKernel::math;
    caps_.traits.isa_targets = true;
  }
  std::string_view name() const override { return "cpu.math"; }
  const Capabilities& capabilities() const override { return caps_; }
  PrecisionContract precision(DType dtype) const override {
    PrecisionContract c;
    c.accumulate = c.p_type = c.ds_type = dtype == DType::f64 ? DType::f64 : DType::f32;
    return c;
  }
  Support supports(const LoweredProblem& lowered, const Device& device) const override {
    Support s;
    check_capabilities(caps_, lowered, device, s);
    const sdpa_cts_params& p = lowered.params();
    // BLAS takes int dimensions; the logits tile of one row must fit in memory.
    constexpr std::int64_t kIntMax = 2147483647;
    if (p.len_kv > kIntMax / 64 || p.head_dim_qk > kIntMax / 64 || p.head_dim_v > kIntMax / 64) {
      s.decline("lengths or head dims beyond 2^25 are not supported (BLAS int dimensions)");
    }
    // d bias keeps every dS (f64) until the sums over the mask's broadcast dimensions.
    if (p.bias_grad && static_cast<double>(p.batch) * static_cast<double>(p.heads_q) *
                               static_cast<double>(p.len_q) * static_cast<double>(p.len_kv) >
                           kMaxBiasGradientScratch) {
      s.decline("d bias needs B * Hq * L * S = " +
                std::to_string(p.batch * p.heads_q * p.len_q * p.len_kv) +
                " logits of scratch, more than 2^27");
    }
    return s;
  }
  void run(const LoweredProblem& p, const Device& device,
           const RunOptions& options) const override {
    if (p.dtype() == DType::f64) {
      blas_single_thread();
      run_all(F64Engine{}, p, options);
      return;
    }
    const IsaTarget target = isa_to_run(device);
    const bool blas = target != IsaTarget::scalar && gemm_kind() == GemmKind::openblas;
    if (blas) blas_single_thread();
    run_all(F32Engine{vk::table(target), blas}, p, options);
  }
  void run_backward(const LoweredProblem& p, const Device&,
                    const RunOptions& options) const override {
    math_backward(p, options);
  }

 private:
  Capabilities caps_;
};

}  // namespace

const Backend& math_backend() {
  static const MathBackend b;
  return b;
}

}  // namespace sdpa::cpu
