// The SIMD layer's checks (kernels/cpu/simd/simd.hpp), compiled once per ISA target: each
// simd_test_<target>.cpp gets that target's flags from sdpa_cts_isa_sources, defines
// SIMD_TEST_ENTRY and includes this file. Every result is compared with a scalar reference
// (core/dtype conversions, libm, exact arithmetic in double); the driver (simd_test.cpp) runs
// the targets this CPU has.
//
// No standard containers or other library templates here: their inline code, compiled with
// this unit's flags, could be picked by the linker for code that runs on another target.
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

#include "kernels/cpu/simd/simd.hpp"
#include "tests/kernels/simd_test.hpp"

#ifndef SIMD_TEST_ENTRY
#error "define SIMD_TEST_ENTRY before including simd_test_body.hpp"
#endif

namespace sdpa::cpu::simd_test {
namespace {

using namespace sdpa::cpu::simd;

constexpr bool kFused = kTarget != IsaTarget::scalar;  // vfma rounds once
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::uint32_t bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
float from_bits(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
bool same(float a, float b) { return bits(a) == bits(b); }

struct Rng {
  std::uint64_t s = 0x9e3779b97f4a7c15ull;
  std::uint32_t next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>(s >> 32);
  }
  float uniform(float lo, float hi) {  // in [lo, hi)
    return lo + (hi - lo) * static_cast<float>(next() >> 8) * (1.0f / 16777216.0f);
  }
  float finite_bits() {  // any finite float, by bit pattern
    for (;;) {
      const float x = from_bits(next());
      if (std::isfinite(x)) return x;
    }
  }
};

class Checker {
 public:
  explicit Checker(Report& r) : r_(r) {}
  // Counts a comparison; on failure keeps the message (the first few).
  bool operator()(bool ok, const char* fmt, ...) __attribute__((format(printf, 3, 4))) {
    ++r_.checks;
    if (ok) return true;
    ++r_.failures;
    if (r_.nmessages < 10) {
      va_list ap;
      va_start(ap, fmt);
      std::vsnprintf(r_.messages[r_.nmessages], sizeof r_.messages[0], fmt, ap);
      va_end(ap);
      ++r_.nmessages;
    }
    return false;
  }
  Report& report() { return r_; }

 private:
  Report& r_;
};

V lanes(const float* x) { return vload(x); }
void out(V a, float* x) { vstore(x, a); }

// ------------------------------------------------------------------ loads and stores

void check_f32_tails(Checker& c) {
  float src[16], dst[20];
  for (int i = 0; i < 16; ++i) src[i] = static_cast<float>(i) + 0.25f;
  for (int n = 0; n <= 16; ++n) {
    float got[16];
    out(vload_n(src, n, -7.5f), got);
    for (int i = 0; i < 16; ++i)
      c(same(got[i], i < n ? src[i] : -7.5f), "vload_n(n=%d) lane %d: %g", n, i, got[i]);
    for (float& d : dst) d = 99.0f;
    vstore_n(dst, lanes(src), n);
    for (int i = 0; i < 20; ++i)
      c(same(dst[i], i < n ? src[i] : 99.0f), "vstore_n(n=%d) element %d: %g", n, i, dst[i]);
  }
  float full[16];
  out(vload(src), full);
  for (int i = 0; i < 16; ++i) c(same(full[i], src[i]), "vload lane %d", i);
}

// Every f16 and bf16 bit pattern, widened (NaN: any NaN for f16, whose quiet bit the
// hardware sets; the exact bits for bf16, a shift).
void check_widening(Checker& c) {
  alignas(64) std::uint16_t h[48];
  for (std::uint32_t base = 0; base < 65536; base += 32) {
    for (int i = 0; i < 32; ++i) h[i] = static_cast<std::uint16_t>(base + i);
    float a[16], b[16], e[16], o[16];
    for (int half = 0; half < 2; ++half) {
      out(vload_f16(h + 16 * half), a);
      for (int i = 0; i < 16; ++i) {
        const float want = half_to_float(h[16 * half + i]);
        c(std::isnan(want) ? std::isnan(a[i]) : same(a[i], want), "vload_f16(0x%04x) = %08x",
          h[16 * half + i], bits(a[i]));
      }
      out(vload_bf16(h + 16 * half), a);
      for (int i = 0; i < 16; ++i)
        c(same(a[i], bf16_to_float(h[16 * half + i])), "vload_bf16(0x%04x) = %08x",
          h[16 * half + i], bits(a[i]));
    }
    V va, vb, ve, vo;
    vload_bf16x2(h, va, vb);
    vload_bf16_eo(h, ve, vo);
    out(va, a), out(vb, b), out(ve, e), out(vo, o);
    for (int i = 0; i < 16; ++i) {
      c(same(a[i], bf16_to_float(h[i])) && same(b[i], bf16_to_float(h[16 + i])),
        "vload_bf16x2 lane %d at 0x%04x", i, static_cast<unsigned>(base));
      c(same(e[i], bf16_to_float(h[2 * i])) && same(o[i], bf16_to_float(h[2 * i + 1])),
        "vload_bf16_eo lane %d at 0x%04x", i, static_cast<unsigned>(base));
    }
  }
  // Tails: lanes past n are 0, and nothing past n is read that matters.
  for (int i = 0; i < 16; ++i) h[i] = static_cast<std::uint16_t>(0x3c00 + i);  // f16 1.0...
  for (int n = 0; n <= 16; ++n) {
    float a[16], b[16];
    out(vload_f16_n(h, n), a);
    out(vload_bf16_n(h, n), b);
    for (int i = 0; i < 16; ++i) {
      c(same(a[i], i < n ? half_to_float(h[i]) : 0.0f), "vload_f16_n(n=%d) lane %d", n, i);
      c(same(b[i], i < n ? bf16_to_float(h[i]) : 0.0f), "vload_bf16_n(n=%d) lane %d", n, i);
    }
  }
}

// Narrowing to f16 and bf16 against core/dtype (round to nearest even, overflow to inf,
// subnormals, NaN quiet with its sign; f16 NaN: any NaN).
void check_narrowing(Checker& c) {
  Rng rng;
  float x[16 * 64];
  const float special[] = {
      0.0f,          -0.0f,          1.0f,     -1.0f,          kInf,         -kInf,
      kNaN,          -kNaN,          65504.0f, 65519.99f,      65520.0f,     1e-8f,
      -6e-8f,        5.96e-8f,       2.98e-8f, 1.00048828125f, 1.001953125f, 3.3895314e38f,
      3.4028235e38f, 1.1754944e-38f, 1e-45f,   1.00390625f,    1.01171875f,  -2.5e-39f};
  for (int i = 0; i < 16 * 64; ++i) {
    if (i < static_cast<int>(sizeof special / sizeof special[0])) {
      x[i] = special[i];
    } else if (i % 3 == 0) {
      x[i] = rng.finite_bits();
    } else if (i % 3 == 1) {
      x[i] = std::ldexp(rng.uniform(-1.0f, 1.0f), static_cast<int>(rng.next() % 60) - 40);
    } else {  // ties of bf16 and f16 rounding
      x[i] = from_bits((rng.next() & 0xffff0000u) | 0x8000u | ((rng.next() & 1u) << 13));
    }
  }
  for (int v = 0; v < 64; ++v) {
    const float* xv = x + 16 * v;
    std::uint16_t h[20], b[20];
    vstore_f16(h, lanes(xv));
    vstore_bf16(b, lanes(xv));
    for (int i = 0; i < 16; ++i) {
      const std::uint16_t wh = float_to_half(xv[i]), wb = float_to_bf16(xv[i]);
      const bool hnan = (wh & 0x7c00) == 0x7c00 && (wh & 0x3ff) != 0;
      c(hnan ? ((h[i] & 0x7c00) == 0x7c00 && (h[i] & 0x3ff) != 0) : h[i] == wh,
        "vstore_f16(%a) = 0x%04x, want 0x%04x", static_cast<double>(xv[i]), h[i], wh);
      c(b[i] == wb, "vstore_bf16(%a) = 0x%04x, want 0x%04x", static_cast<double>(xv[i]), b[i], wb);
    }
  }
  for (int n = 0; n <= 16; ++n) {
    std::uint16_t h[20], b[20];
    for (int i = 0; i < 20; ++i) h[i] = b[i] = 0xabcd;
    vstore_f16_n(h, lanes(x + 16), n);
    vstore_bf16_n(b, lanes(x + 16), n);
    for (int i = 0; i < 20; ++i) {
      c(h[i] == (i < n ? float_to_half(x[16 + i]) : 0xabcd), "vstore_f16_n(n=%d) element %d", n, i);
      c(b[i] == (i < n ? float_to_bf16(x[16 + i]) : 0xabcd), "vstore_bf16_n(n=%d) element %d", n,
        i);
    }
  }
}

// load_row / store_row: every dtype, lengths around 16, unit and other strides.
void check_rows(Checker& c) {
  Rng rng;
  float src[64 * 3], got[80];
  for (float& v : src) v = rng.uniform(-4.0f, 4.0f);
  std::uint16_t raw[64 * 3 + 16];
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    for (int n : {0, 1, 15, 16, 17, 33, 64}) {
      for (int stride : {1, 3}) {
        // store_row then load_row: the rounded values, exactly.
        float f32buf[64 * 3 + 16];
        void* dst = t == DType::f32 ? static_cast<void*>(f32buf) : static_cast<void*>(raw);
        for (int i = 0; i < 64 * 3 + 16; ++i) f32buf[i] = -1.0f, raw[i] = 0x7777;
        store_row(t, src, n, dst, stride);
        for (int i = 0; i < 64 * 3 + 16; ++i) {
          const bool written = i % stride == 0 && i / stride < n;
          if (t == DType::f32) {
            c(same(f32buf[i], written ? src[i / stride] : -1.0f), "store_row f32 n=%d s=%d at %d",
              n, stride, i);
          } else {
            const std::uint16_t want = written ? (t == DType::f16 ? float_to_half(src[i / stride])
                                                                  : float_to_bf16(src[i / stride]))
                                               : std::uint16_t{0x7777};
            c(raw[i] == want, "store_row %s n=%d s=%d at %d", t == DType::f16 ? "f16" : "bf16", n,
              stride, i);
          }
        }
        for (float& g : got) g = 12345.0f;
        load_row(t, dst, stride, n, got);
        for (int i = 0; i < 80; ++i) {
          float want = 12345.0f;
          if (i < n) {
            want = t == DType::f32   ? src[i]
                   : t == DType::f16 ? half_to_float(float_to_half(src[i]))
                                     : bf16_to_float(float_to_bf16(src[i]));
          }
          c(same(got[i], want), "load_row n=%d s=%d element %d", n, stride, i);
        }
      }
    }
  }
}

// ------------------------------------------------------------------ arithmetic

void check_arith(Checker& c) {
  Rng rng;
  for (int rep = 0; rep < 2000; ++rep) {
    float a[16], b[16], d[16], r1[16], r2[16], r3[16], r4[16], r5[16];
    for (int i = 0; i < 16; ++i) {
      const int ea = static_cast<int>(rng.next() % 40) - 20;
      a[i] = std::ldexp(rng.uniform(-1.0f, 1.0f), ea);
      b[i] = std::ldexp(rng.uniform(-1.0f, 1.0f), static_cast<int>(rng.next() % 40) - 20);
      d[i] = std::ldexp(rng.uniform(-1.0f, 1.0f), static_cast<int>(rng.next() % 40) - 20);
    }
    out(vfma(lanes(a), lanes(b), lanes(d)), r1);
    out(vfnma(lanes(a), lanes(b), lanes(d)), r2);
    out(vadd(lanes(a), lanes(b)), r3);
    out(vsub(lanes(a), lanes(b)), r4);
    out(vmul(lanes(a), lanes(b)), r5);
    for (int i = 0; i < 16; ++i) {
      const float want_fma = kFused ? std::fma(a[i], b[i], d[i]) : a[i] * b[i] + d[i];
      const float want_fnma = kFused ? std::fma(-a[i], b[i], d[i]) : d[i] - a[i] * b[i];
      c(same(r1[i], want_fma), "vfma(%a, %a, %a) = %a, want %a", double(a[i]), double(b[i]),
        double(d[i]), double(r1[i]), double(want_fma));
      c(same(r2[i], want_fnma), "vfnma(%a, %a, %a) = %a, want %a", double(a[i]), double(b[i]),
        double(d[i]), double(r2[i]), double(want_fnma));
      c(same(r3[i], a[i] + b[i]) && same(r4[i], a[i] - b[i]) && same(r5[i], a[i] * b[i]),
        "vadd/vsub/vmul lane %d", i);
    }
  }
  // max and min: the second operand when either is NaN.
  const float x[16] = {1, kNaN, kNaN, -2, 0.0f, -0.0f, kInf, -kInf, 3, 3, -1, 5, 7, 8, 9, 10};
  const float y[16] = {kNaN, 1, kNaN, 4, -0.0f, 0.0f, 1, 1, 3, -3, -1, 6, 7, 8, 9, 11};
  float mx[16], mn[16];
  out(vmax(lanes(x), lanes(y)), mx);
  out(vmin(lanes(x), lanes(y)), mn);
  for (int i = 0; i < 16; ++i) {
    const bool nan = std::isnan(x[i]) || std::isnan(y[i]);
    const float wmax = nan ? y[i] : (x[i] > y[i] ? x[i] : y[i]);
    const float wmin = nan ? y[i] : (x[i] < y[i] ? x[i] : y[i]);
    c(std::isnan(wmax) ? std::isnan(mx[i]) : same(mx[i], wmax), "vmax(%g, %g) = %g", double(x[i]),
      double(y[i]), double(mx[i]));
    c(std::isnan(wmin) ? std::isnan(mn[i]) : same(mn[i], wmin), "vmin(%g, %g) = %g", double(x[i]),
      double(y[i]), double(mn[i]));
  }
  // Comparisons (ordered: false with NaN), masks, select.
  float sel[16];
  const V vx = lanes(x), vy = lanes(y);
  out(vselect(vle(vx, vy), vset(1.0f), vset(0.0f)), sel);
  for (int i = 0; i < 16; ++i) c(sel[i] == (x[i] <= y[i] ? 1.0f : 0.0f), "vle lane %d", i);
  out(vselect(vlt(vx, vy), vset(1.0f), vset(0.0f)), sel);
  for (int i = 0; i < 16; ++i) c(sel[i] == (x[i] < y[i] ? 1.0f : 0.0f), "vlt lane %d", i);
  out(vselect(veq(vx, vy), vset(1.0f), vset(0.0f)), sel);
  for (int i = 0; i < 16; ++i) c(sel[i] == (x[i] == y[i] ? 1.0f : 0.0f), "veq lane %d", i);
  out(vselect(vand(vle(vx, vy), visnan(vx)), vset(1.0f), vset(0.0f)), sel);
  for (int i = 0; i < 16; ++i) c(sel[i] == 0.0f, "vand(vle, visnan) lane %d", i);
  out(vselect(visnan(vx), vx, vy), sel);
  for (int i = 0; i < 16; ++i)
    c(std::isnan(x[i]) ? std::isnan(sel[i]) : same(sel[i], y[i]), "visnan/vselect lane %d", i);
  c(vany(visnan(vx)) && !vany(visnan(vset(1.0f))), "vany");
  for (int k = 0; k < 16; ++k) {
    float one[16];
    for (int i = 0; i < 16; ++i) one[i] = i == k ? kNaN : 1.0f;
    c(vany(visnan(lanes(one))), "vany with a NaN in lane %d only", k);
  }
}

// Horizontal sum: the layer's tree, bit for bit; vhsum8 is eight vhsum; vhmax the largest.
void check_horizontal(Checker& c) {
  Rng rng;
  for (int rep = 0; rep < 500; ++rep) {
    alignas(64) float a[8][16];
    V v[8];
    for (int k = 0; k < 8; ++k) {
      for (int i = 0; i < 16; ++i)
        a[k][i] = std::ldexp(rng.uniform(-1.0f, 1.0f), static_cast<int>(rng.next() % 30) - 10);
      v[k] = lanes(a[k]);
    }
    float s8[8];
    vhsum8(v, s8);
    for (int k = 0; k < 8; ++k) {
      float t[16];
      std::memcpy(t, a[k], sizeof t);
      for (int w = 8; w >= 1; w /= 2)
        for (int i = 0; i < w; ++i) t[i] = t[i] + t[i + w];
      const float h = vhsum(v[k]);
      c(same(h, t[0]), "vhsum = %a, tree %a", double(h), double(t[0]));
      c(same(s8[k], h), "vhsum8[%d] = %a, vhsum %a", k, double(s8[k]), double(h));
      float m = a[k][0];
      for (float e : a[k]) m = e > m ? e : m;
      c(same(vhmax(v[k]), m), "vhmax");
    }
  }
}

// vround: nearest, ties to even (a zero result may have either sign); vldexp exact.
void check_round_ldexp(Checker& c) {
  const float x[16] = {0.5f,  1.5f,       2.5f,       -0.5f, -1.5f,   -2.5f,   -0.3f,   7.49f,
                       -7.5f, 4194303.5f, 8388608.0f, 1e30f, -160.0f, -149.5f, -150.5f, 0.0f};
  float r[16];
  out(vround(lanes(x)), r);
  for (int i = 0; i < 16; ++i) {
    const float want = std::nearbyint(x[i]);
    c(r[i] == want, "vround(%g) = %g, want %g", double(x[i]), double(r[i]), double(want));
  }
  float nan_r[16];
  out(vround(vset(kNaN)), nan_r);
  c(std::isnan(nan_r[3]), "vround(NaN)");
  Rng rng;
  for (int n = -160; n <= 127; ++n) {
    float a[16], got[16];
    for (int i = 0; i < 16; ++i) a[i] = rng.uniform(0.5f, 2.0f);
    a[0] = 1.0f, a[1] = 1.9999999f, a[2] = 0.5f;
    out(vldexp(lanes(a), vset(static_cast<float>(n))), got);
    for (int i = 0; i < 16; ++i) {
      const float want = std::ldexp(a[i], n);
      c(same(got[i], want), "vldexp(%a, %d) = %a, want %a", double(a[i]), n, double(got[i]),
        double(want));
    }
  }
}

// ------------------------------------------------------------------ exponentials

double ulp_of(double x) {  // one unit in the last place of the f32 binade of |x| (normal)
  int e;
  std::frexp(x, &e);
  return std::ldexp(1.0, e - 24);
}

// vexp over [-110, 100] and vexp2 over [-160, 0]: normal results within the bound in ulps,
// subnormal results within one subnormal spacing (rounded once), exact zeros below the
// range and for -inf, NaN kept, exact at the points where the algorithm is exact.
void check_exp(Checker& c) {
  Report& rep = c.report();
  // Measured on the dense grids below: 0.92 / 0.91 ulp with fused multiply-adds, 1.19 / 1.11
  // without (scalar).
  const double exp_bound = kFused ? 1.0 : 1.5, exp2_bound = kFused ? 1.0 : 1.5;
  const double tiny = std::ldexp(1.0, -149);
  float x[16], y[16];
  for (double x0 = -110.0; x0 < 100.0; x0 += 16.0 / 8192) {
    for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(x0 + i / 8192.0);
    out(vexp(lanes(x)), y);
    for (int i = 0; i < 16; ++i) {
      const double want = std::exp(static_cast<double>(x[i]));
      if (want >= 0x1p-126 && want <= 3.4028234663852886e38) {
        const double err = std::fabs(y[i] - want) / ulp_of(want);
        if (err > rep.exp_ulp) rep.exp_ulp = err;
        c(err <= exp_bound, "vexp(%a) = %a, want %a: %.2f ulp", double(x[i]), double(y[i]), want,
          err);
      } else if (want < 0x1p-126) {
        c(std::fabs(y[i] - want) <= tiny, "vexp(%a) = %a (subnormal), want %a", double(x[i]),
          double(y[i]), want);
      }
    }
  }
  for (double x0 = -160.0; x0 < 0.0; x0 += 16.0 / 16384) {
    for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(x0 + i / 16384.0);
    out(vexp2(lanes(x)), y);
    for (int i = 0; i < 16; ++i) {
      const double want = std::exp2(static_cast<double>(x[i]));
      if (want >= 0x1p-126) {
        const double err = std::fabs(y[i] - want) / ulp_of(want);
        if (err > rep.exp2_ulp) rep.exp2_ulp = err;
        c(err <= exp2_bound, "vexp2(%a) = %a, want %a: %.2f ulp", double(x[i]), double(y[i]), want,
          err);
      } else if (x[i] > -150.0f) {
        c(std::fabs(y[i] - want) <= tiny && y[i] > 0, "vexp2(%a) = %a (subnormal), want %a",
          double(x[i]), double(y[i]), want);
      } else {
        c(same(y[i], 0.0f), "vexp2(%a) = %a, want +0", double(x[i]), double(y[i]));
      }
    }
  }
  // Exact points, the ends of the ranges, -inf and NaN.
  const float e_in[16] = {0.0f,  -kInf,  -110.0f, -120.0f, -1e30f, kNaN, 100.0f, kInf,
                          -0.0f, -87.0f, -103.0f, -104.0f, 88.8f,  1.0f, -1.0f,  -50.0f};
  out(vexp(lanes(e_in)), y);
  c(same(y[0], 1.0f) && same(y[8], 1.0f), "vexp(+-0) = %a, %a", double(y[0]), double(y[8]));
  c(same(y[1], 0.0f) && same(y[2], 0.0f) && same(y[3], 0.0f) && same(y[4], 0.0f),
    "vexp(-inf, -110, -120, -1e30) = %a %a %a %a", double(y[1]), double(y[2]), double(y[3]),
    double(y[4]));
  c(std::isnan(y[5]), "vexp(NaN) = %a", double(y[5]));
  c(y[6] == kInf && y[7] == kInf && y[12] == kInf, "vexp(100, inf, 88.8) = %a %a %a", double(y[6]),
    double(y[7]), double(y[12]));
  // e^-103 = 1.3e-45 is the smallest subnormal; e^-104 = 6.8e-46 is below half of it.
  c(same(y[10], 0x1p-149f) && same(y[11], 0.0f), "vexp(-103) = %a, vexp(-104) = %a", double(y[10]),
    double(y[11]));
  const float t_in[16] = {0.0f,    -1.0f,  -126.0f, -149.0f,  -150.0f, -kInf, kNaN,  -0.0f,
                          -149.5f, -1e30f, -160.0f, -159.99f, -24.0f,  -0.5f, -2.0f, -127.0f};
  out(vexp2(lanes(t_in)), y);
  c(same(y[0], 1.0f) && same(y[7], 1.0f) && same(y[1], 0.5f) && same(y[14], 0.25f) &&
        same(y[2], 0x1p-126f) && same(y[3], 0x1p-149f) && same(y[12], 0x1p-24f) &&
        same(y[15], 0x1p-127f),
    "vexp2 at integers: %a %a %a %a %a %a %a %a", double(y[0]), double(y[1]), double(y[2]),
    double(y[3]), double(y[7]), double(y[12]), double(y[14]), double(y[15]));
  c(same(y[4], 0.0f) && same(y[5], 0.0f) && same(y[9], 0.0f) && same(y[10], 0.0f) &&
        same(y[11], 0.0f),
    "vexp2(-150, -inf, -1e30, -160, -159.99) = %a %a %a %a %a", double(y[4]), double(y[5]),
    double(y[9]), double(y[10]), double(y[11]));
  c(std::isnan(y[6]), "vexp2(NaN) = %a", double(y[6]));
  c(same(y[13], static_cast<float>(std::sqrt(0.5))) ||
        std::fabs(y[13] - std::sqrt(0.5)) <= ulp_of(std::sqrt(0.5)),
    "vexp2(-0.5) = %a", double(y[13]));
  // The boost: 2^(x + 32), exactly 2^32 times the unboosted result where that is normal, and
  // nonzero down to x + 32 > -150.
  for (double x0 = -120.0; x0 < 0.0; x0 += 16.0 / 256) {
    for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(x0 + i / 256.0);
    float yb[16];
    out(vexp2(lanes(x)), y);
    out(vexp2<32>(lanes(x)), yb);
    for (int i = 0; i < 16; ++i)
      c(same(yb[i], std::ldexp(y[i], 32)), "vexp2<32>(%a) = %a, 2^32 vexp2 = %a", double(x[i]),
        double(yb[i]), double(std::ldexp(y[i], 32)));
  }
  for (int i = 0; i < 16; ++i) x[i] = -181.5f + static_cast<float>(i);
  out(vexp2<32>(lanes(x)), y);
  for (int i = 0; i < 16; ++i)
    c(y[i] > 0 && std::fabs(y[i] - std::exp2(x[i] + 32.0)) <= tiny, "vexp2<32>(%g) = %a",
      double(x[i]), double(y[i]));
}

#if defined(SDPA_SIMD_HAS_BF16_PAIRS)
// bf16 pairs: rounding, packing, dot products of exact small integers.
void check_bf16_pairs(Checker& c) {
  Rng rng;
  for (int rep = 0; rep < 200; ++rep) {
    float e[16], o[16];
    for (int i = 0; i < 16; ++i) {
      e[i] = std::ldexp(rng.uniform(-1.0f, 1.0f), static_cast<int>(rng.next() % 60) - 30);
      o[i] = std::ldexp(rng.uniform(-1.0f, 1.0f), static_cast<int>(rng.next() % 60) - 30);
    }
    alignas(64) std::uint32_t p[16];
    vp_store(p, vp_round(lanes(e), lanes(o)));
    for (int i = 0; i < 16; ++i) {
      const std::uint32_t want = float_to_bf16(e[i]) | std::uint32_t{float_to_bf16(o[i])} << 16;
      c(p[i] == want, "vp_round lane %d: %08x, want %08x", i, p[i], want);
    }
  }
  alignas(64) std::uint16_t ra[16], rb[16];
  alignas(64) std::uint32_t z[16], pa[16], pb[16];
  float acc0[16], got[16];
  for (int i = 0; i < 16; ++i) {
    ra[i] = float_to_bf16(static_cast<float>(i - 7));
    rb[i] = float_to_bf16(static_cast<float>(3 - i));
    acc0[i] = static_cast<float>(100 * i);
  }
  vp_zip(ra, rb, z);
  for (int i = 0; i < 16; ++i) c(z[i] == (ra[i] | std::uint32_t{rb[i]} << 16), "vp_zip lane %d", i);
  for (int i = 0; i < 16; ++i) pa[i] = z[i], pb[i] = z[15 - i];
  out(vdot_pairs(lanes(acc0), vp_load(pa), vp_load(pb)), got);
  for (int i = 0; i < 16; ++i) {
    const float want = acc0[i] + static_cast<float>(i - 7) * static_cast<float>(15 - i - 7) +
                       static_cast<float>(3 - i) * static_cast<float>(3 - (15 - i));
    c(got[i] == want, "vdot_pairs lane %d: %g, want %g", i, double(got[i]), double(want));
  }
  out(vdot_pairs(vzero(), vp_set(z[2]), vp_load(pa)), got);
  for (int i = 0; i < 16; ++i) {
    const float want = static_cast<float>(-5) * static_cast<float>(i - 7) +
                       static_cast<float>(1) * static_cast<float>(3 - i);
    c(got[i] == want, "vdot_pairs(vp_set) lane %d: %g, want %g", i, double(got[i]), double(want));
  }
}
#endif

}  // namespace

void SIMD_TEST_ENTRY(Report& r) {
  r.compiled_as = kTarget;
  Checker c(r);
  check_f32_tails(c);
  check_widening(c);
  check_narrowing(c);
  check_rows(c);
  check_arith(c);
  check_horizontal(c);
  check_round_ldexp(c);
  check_exp(c);
#if defined(SDPA_SIMD_HAS_BF16_PAIRS)
  check_bf16_pairs(c);
#endif
  alignas(64) float line[64] = {};
  prefetch_l1(line, 64 * 4);  // no effect to check, but must compile and not fault
  prefetch_l2(line, 64 * 4);
}

}  // namespace sdpa::cpu::simd_test
