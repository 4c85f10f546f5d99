#include "core/dtype.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace sdpa {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f64:
      return 8;
    case DType::f32:
      return 4;
    case DType::f16:
    case DType::bf16:
      return 2;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f64:
      return "f64";
    case DType::f32:
      return "f32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType t : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    if (dtype_name(t) == name) return t;
  }
  return std::nullopt;
}

double dtype_unit_roundoff(DType t) {
  switch (t) {
    case DType::f64:
      return std::ldexp(1.0, -53);
    case DType::f32:
      return std::ldexp(1.0, -24);
    case DType::f16:
      return std::ldexp(1.0, -11);
    case DType::bf16:
      return std::ldexp(1.0, -8);
  }
  return 0;
}

double dtype_max(DType t) {
  switch (t) {
    case DType::f64:
      return std::numeric_limits<double>::max();
    case DType::f32:
      return std::numeric_limits<float>::max();
    case DType::f16:
      return 65504.0;
    case DType::bf16:
      return std::ldexp(255.0 / 128.0, 127);  // 0x7f7f
  }
  return 0;
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf or NaN (payload kept)
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {
    // Subnormal half: value = mant * 2^-24, normalise into a binary32.
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    bits = sign | (static_cast<std::uint32_t>(112 - e) << 23) | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

float bf16_to_float(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

// Rounds a finite or non-finite double to binary16 once. Working from the double
// (rather than via float) avoids double rounding.
std::uint16_t double_to_half(double x) {
  const std::uint64_t bits = std::bit_cast<std::uint64_t>(x);
  const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 48) & 0x8000u);
  if (std::isnan(x)) return static_cast<std::uint16_t>(sign | 0x7e00u);
  const double a = std::fabs(x);
  if (a >= 65520.0) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (a < std::ldexp(1.0, -14)) {
    // Subnormal range: quantum 2^-24. nearbyint uses the current rounding mode,
    // which is round-to-nearest-even by default; multiplication is exact.
    const double q = std::nearbyint(a * 16777216.0);
    return static_cast<std::uint16_t>(sign |
                                      static_cast<std::uint16_t>(q));  // q==1024 -> min normal
  }
  int e;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
  // Quantum for exponent e: 2^(e-11). Scale so the quantum is 1, round, scale back.
  const double q = std::nearbyint(std::ldexp(a, 11 - e));  // in [1024, 2048]
  const double r = std::ldexp(q, e - 11);
  if (r >= 65520.0) return static_cast<std::uint16_t>(sign | 0x7c00u);
  int re;
  const double rf = std::frexp(r, &re);
  const std::uint32_t m = static_cast<std::uint32_t>(std::ldexp(rf, 11)) & 0x3ffu;
  const std::uint32_t he = static_cast<std::uint32_t>(re - 1 + 15);
  return static_cast<std::uint16_t>(sign | (he << 10) | m);
}

std::uint16_t float_to_half(float x) { return double_to_half(static_cast<double>(x)); }

std::uint16_t double_to_bf16(double x) {
  if (std::isnan(x)) {
    const std::uint64_t bits = std::bit_cast<std::uint64_t>(x);
    return static_cast<std::uint16_t>(((bits >> 48) & 0x8000u) | 0x7fc0u);
  }
  // Round the double to 8 significant bits directly (single rounding).
  const double a = std::fabs(x);
  const std::uint16_t sign = std::signbit(x) ? 0x8000u : 0u;
  if (a == 0.0) return sign;
  const double min_normal = std::ldexp(1.0, -126);
  double r;
  if (a < min_normal) {
    r = std::ldexp(std::nearbyint(std::ldexp(a, 133)), -133);  // quantum 2^-133
  } else {
    int e;
    std::frexp(a, &e);
    r = std::ldexp(std::nearbyint(std::ldexp(a, 8 - e)), e - 8);
  }
  if (r > static_cast<double>(std::numeric_limits<float>::max()) || std::isinf(r)) {
    return static_cast<std::uint16_t>(sign | 0x7f80u);
  }
  const float f = static_cast<float>(r);  // exact: r has <= 8 significant bits
  return static_cast<std::uint16_t>(sign | ((std::bit_cast<std::uint32_t>(f) >> 16) & 0x7fffu));
}

std::uint16_t float_to_bf16(float x) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  if (std::isnan(x)) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);  // quiet, sign kept
  const std::uint32_t lsb = (u >> 16) & 1u;
  return static_cast<std::uint16_t>((u + 0x7fffu + lsb) >> 16);  // overflow carries into inf
}

float double_to_float(double x) { return static_cast<float>(x); }

double load_as_double(DType t, const void* base, std::int64_t index) {
  switch (t) {
    case DType::f64:
      return static_cast<const double*>(base)[index];
    case DType::f32:
      return static_cast<const float*>(base)[index];
    case DType::f16:
      return half_to_float(static_cast<const std::uint16_t*>(base)[index]);
    case DType::bf16:
      return bf16_to_float(static_cast<const std::uint16_t*>(base)[index]);
  }
  return 0;
}

void store_from_double(DType t, void* base, std::int64_t index, double x) {
  switch (t) {
    case DType::f64:
      static_cast<double*>(base)[index] = x;
      return;
    case DType::f32:
      static_cast<float*>(base)[index] = static_cast<float>(x);
      return;
    case DType::f16:
      static_cast<std::uint16_t*>(base)[index] = double_to_half(x);
      return;
    case DType::bf16:
      static_cast<std::uint16_t*>(base)[index] = double_to_bf16(x);
      return;
  }
}

}  // namespace sdpa
