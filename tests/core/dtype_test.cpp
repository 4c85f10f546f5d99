// Unit and property tests of the element types and their conversions (core/dtype.hpp).
//
// Every 16-bit pattern of binary16 and bfloat16 is checked exhaustively; rounding is checked
// at every midpoint between adjacent finite values, and against an independent
// nearest-value search for random inputs.
#include "core/dtype.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace sdpa {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::uint32_t float_bits(float x) { return std::bit_cast<std::uint32_t>(x); }
std::uint64_t double_bits(double x) { return std::bit_cast<std::uint64_t>(x); }

bool half_is_nan(std::uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }
bool bf16_is_nan(std::uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0; }
bool half_is_quiet_nan(std::uint16_t h) { return half_is_nan(h) && (h & 0x0200u) != 0; }
bool bf16_is_quiet_nan(std::uint16_t b) { return bf16_is_nan(b) && (b & 0x0040u) != 0; }

// Value of a binary16 pattern computed from its fields, independently of half_to_float.
double half_value_reference(std::uint16_t h) {
  const int sign = (h >> 15) & 1;
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  double v;
  if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), -24);  // subnormal: mant * 2^-24
  } else if (exp == 31) {
    v = mant == 0 ? kInf : std::numeric_limits<double>::quiet_NaN();
  } else {
    v = std::ldexp(static_cast<double>(1024 + mant), exp - 25);  // 1.mant * 2^(exp-15)
  }
  return sign ? -v : v;
}

// Value of a bfloat16 pattern from its fields (8-bit exponent, 7-bit mantissa).
double bf16_value_reference(std::uint16_t b) {
  const int sign = (b >> 15) & 1;
  const int exp = (b >> 7) & 0xff;
  const int mant = b & 0x7f;
  double v;
  if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), -133);
  } else if (exp == 255) {
    v = mant == 0 ? kInf : std::numeric_limits<double>::quiet_NaN();
  } else {
    v = std::ldexp(static_cast<double>(128 + mant), exp - 134);
  }
  return sign ? -v : v;
}

// ------------------------------------------------------------------ names, sizes, constants

TEST(DType, NamesRoundTrip) {
  for (DType t : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
  }
  EXPECT_EQ(dtype_name(DType::f64), "f64");
  EXPECT_EQ(dtype_name(DType::f32), "f32");
  EXPECT_EQ(dtype_name(DType::f16), "f16");
  EXPECT_EQ(dtype_name(DType::bf16), "bf16");
  EXPECT_FALSE(parse_dtype("f8"));
  EXPECT_FALSE(parse_dtype(""));
  EXPECT_FALSE(parse_dtype("F32"));
  EXPECT_FALSE(parse_dtype("f32 "));
}

TEST(DType, Sizes) {
  EXPECT_EQ(dtype_size(DType::f64), 8u);
  EXPECT_EQ(dtype_size(DType::f32), 4u);
  EXPECT_EQ(dtype_size(DType::f16), 2u);
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
}

TEST(DType, UnitRoundoff) {
  EXPECT_EQ(dtype_unit_roundoff(DType::f64), std::ldexp(1.0, -53));
  EXPECT_EQ(dtype_unit_roundoff(DType::f32), std::ldexp(1.0, -24));
  EXPECT_EQ(dtype_unit_roundoff(DType::f16), std::ldexp(1.0, -11));
  EXPECT_EQ(dtype_unit_roundoff(DType::bf16), std::ldexp(1.0, -8));
  // Meaning of u: 1 + u is the midpoint above 1 (ties to 1, the even neighbour), 1 + 2u is
  // the next representable value.
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    const double u = dtype_unit_roundoff(t);
    double buf = 0;
    store_from_double(t, &buf, 0, 1.0 + u);
    EXPECT_EQ(load_as_double(t, &buf, 0), 1.0) << dtype_name(t);
    store_from_double(t, &buf, 0, 1.0 + 2 * u);
    EXPECT_EQ(load_as_double(t, &buf, 0), 1.0 + 2 * u) << dtype_name(t);
    store_from_double(t, &buf, 0, 1.0 + u * 1.0000001);
    EXPECT_EQ(load_as_double(t, &buf, 0), 1.0 + 2 * u) << dtype_name(t);
  }
  EXPECT_EQ(1.0 + dtype_unit_roundoff(DType::f64), 1.0);
  EXPECT_EQ(1.0 + 2 * dtype_unit_roundoff(DType::f64), std::nextafter(1.0, 2.0));
}

TEST(DType, Max) {
  EXPECT_EQ(dtype_max(DType::f64), std::numeric_limits<double>::max());
  EXPECT_EQ(dtype_max(DType::f32), static_cast<double>(std::numeric_limits<float>::max()));
  EXPECT_EQ(dtype_max(DType::f16), 65504.0);
  EXPECT_EQ(dtype_max(DType::f16), static_cast<double>(half_to_float(0x7bff)));
  EXPECT_EQ(dtype_max(DType::bf16), static_cast<double>(bf16_to_float(0x7f7f)));
  EXPECT_EQ(dtype_max(DType::bf16), 3.3895313892515355e38);
  // The max is representable and the next value up rounds to infinity.
  EXPECT_EQ(double_to_half(dtype_max(DType::f16)), 0x7bff);
  EXPECT_EQ(double_to_bf16(dtype_max(DType::bf16)), 0x7f7f);
  EXPECT_EQ(double_to_half(dtype_max(DType::f16) * (1 + std::ldexp(1.0, -11))), 0x7c00);
  EXPECT_EQ(double_to_bf16(dtype_max(DType::bf16) * (1 + std::ldexp(1.0, -8))), 0x7f80);
}

// ------------------------------------------------------------------ binary16, exhaustive

TEST(Half, ToFloatMatchesFieldsForAllPatterns) {
  for (std::uint32_t i = 0; i < 65536; ++i) {
    const auto h = static_cast<std::uint16_t>(i);
    const float f = half_to_float(h);
    const double ref = half_value_reference(h);
    if (half_is_nan(h)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << i;
      ASSERT_EQ(std::signbit(f), (h & 0x8000u) != 0) << std::hex << i;
      // Widening keeps the payload (the quiet bit may additionally be set).
      ASSERT_EQ((float_bits(f) >> 13) & 0x1ffu, h & 0x1ffu) << std::hex << i;
    } else {
      // Bitwise, so +0 and -0 are told apart.
      ASSERT_EQ(float_bits(f), float_bits(static_cast<float>(ref))) << std::hex << i;
      ASSERT_EQ(static_cast<double>(f), ref) << std::hex << i;  // exact in float
    }
  }
}

TEST(Half, AllPatternsRoundTripThroughFloatAndDouble) {
  for (std::uint32_t i = 0; i < 65536; ++i) {
    const auto h = static_cast<std::uint16_t>(i);
    const float f = half_to_float(h);
    const std::uint16_t via_float = float_to_half(f);
    const std::uint16_t via_double = double_to_half(static_cast<double>(f));
    if (half_is_nan(h)) {
      ASSERT_TRUE(half_is_quiet_nan(via_float)) << std::hex << i << " -> " << via_float;
      ASSERT_TRUE(half_is_quiet_nan(via_double)) << std::hex << i << " -> " << via_double;
      ASSERT_EQ(via_float & 0x8000u, h & 0x8000u) << std::hex << i;
      ASSERT_EQ(via_double & 0x8000u, h & 0x8000u) << std::hex << i;
    } else {
      ASSERT_EQ(via_float, h) << std::hex << i;
      ASSERT_EQ(via_double, h) << std::hex << i;
    }
  }
}

// For every pair of adjacent non-negative finite halfs (a, a+1): the exact midpoint goes to
// the even one, anything just above goes up, anything just below goes down. Covers
// subnormals, the subnormal/normal boundary and the top binade.
TEST(Half, MidpointsTieToEvenInFloatAndDouble) {
  for (std::uint16_t a = 0; a < 0x7bff; ++a) {
    const std::uint16_t b = static_cast<std::uint16_t>(a + 1);
    const double lo = half_value_reference(a), hi = half_value_reference(b);
    const double mid = (lo + hi) / 2;  // exact: 12 significant bits
    const std::uint16_t even = (a & 1) ? b : a;
    for (int s = 0; s < 2; ++s) {
      const std::uint16_t sign = s ? 0x8000 : 0;
      const double m = s ? -mid : mid;
      const auto away = static_cast<std::uint16_t>(sign | b);
      const auto toward = static_cast<std::uint16_t>(sign | a);
      ASSERT_EQ(static_cast<double>(static_cast<float>(m)), m);  // midpoint exact in float
      ASSERT_EQ(double_to_half(m), sign | even) << std::hex << a;
      ASSERT_EQ(float_to_half(static_cast<float>(m)), sign | even) << std::hex << a;
      // Just beyond the midpoint, in float and in double.
      const float fm = static_cast<float>(m);
      ASSERT_EQ(float_to_half(std::nextafter(fm, s ? -INFINITY : INFINITY)), away) << std::hex << a;
      ASSERT_EQ(float_to_half(std::nextafter(fm, 0.0f)), toward) << std::hex << a;
      ASSERT_EQ(double_to_half(std::nextafter(m, s ? -kInf : kInf)), away) << std::hex << a;
      ASSERT_EQ(double_to_half(std::nextafter(m, 0.0)), toward) << std::hex << a;
      // The representable values themselves are exact.
      ASSERT_EQ(double_to_half(s ? -lo : lo), toward);
    }
  }
}

// double_to_half must round once. For a midpoint m that ties down (to an even lower
// neighbour), the double just above m is closer to the upper neighbour; rounding it to
// float first would land exactly on m and then tie down.
TEST(Half, DoubleToHalfRoundsOnce) {
  int checked = 0;
  for (std::uint16_t a = 0; a < 0x7bff; a += 2) {  // even a: the tie goes down to a
    const double lo = half_value_reference(a), hi = half_value_reference(a + 1);
    const double mid = (lo + hi) / 2;
    const double above = std::nextafter(mid, kInf);
    ASSERT_EQ(static_cast<double>(static_cast<float>(above)), mid);  // float would double-round
    ASSERT_EQ(double_to_half(above), a + 1) << std::hex << a;
    ASSERT_EQ(double_to_half(-above), 0x8000 | (a + 1)) << std::hex << a;
    ++checked;
  }
  EXPECT_GT(checked, 15000);
  // One spelled out: 1 + 2^-11 is the tie between 1 and 1 + 2^-10.
  EXPECT_EQ(double_to_half(1.0 + std::ldexp(1.0, -11)), 0x3c00);
  EXPECT_EQ(double_to_half(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)), 0x3c01);
  EXPECT_EQ(float_to_half(static_cast<float>(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40))),
            0x3c00);  // the float input is already the midpoint
}

TEST(Half, SubnormalsAndZero) {
  const double tiny = std::ldexp(1.0, -24);  // smallest subnormal
  EXPECT_EQ(double_to_half(tiny), 0x0001);
  EXPECT_EQ(float_to_half(static_cast<float>(tiny)), 0x0001);
  EXPECT_EQ(double_to_half(tiny / 2), 0x0000);                       // tie -> 0 (even)
  EXPECT_EQ(double_to_half(-tiny / 2), 0x8000);                      // -0 keeps its sign
  EXPECT_EQ(double_to_half(std::nextafter(tiny / 2, 1.0)), 0x0001);  // just above the tie
  EXPECT_EQ(double_to_half(std::nextafter(tiny / 2, 0.0)), 0x0000);
  EXPECT_EQ(double_to_half(1.5 * tiny), 0x0002);            // tie 1|2 -> 2
  EXPECT_EQ(double_to_half(2.5 * tiny), 0x0002);            // tie 2|3 -> 2
  EXPECT_EQ(double_to_half(1023 * tiny), 0x03ff);           // largest subnormal
  EXPECT_EQ(double_to_half(1023.5 * tiny), 0x0400);         // ties up to 2^-14
  EXPECT_EQ(double_to_half(std::ldexp(1.0, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(double_to_half(std::numeric_limits<double>::denorm_min()), 0x0000);
  EXPECT_EQ(double_to_half(-std::numeric_limits<double>::denorm_min()), 0x8000);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(double_to_half(0.0), 0x0000);
  EXPECT_EQ(double_to_half(-0.0), 0x8000);
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(half_to_float(0x0001), static_cast<float>(tiny));
  EXPECT_EQ(half_to_float(0x8001), -static_cast<float>(tiny));
}

TEST(Half, OverflowToInfinity) {
  EXPECT_EQ(double_to_half(65504.0), 0x7bff);
  EXPECT_EQ(double_to_half(65519.99), 0x7bff);
  EXPECT_EQ(float_to_half(65519.99f), 0x7bff);
  EXPECT_EQ(double_to_half(std::nextafter(65520.0, 0.0)), 0x7bff);
  EXPECT_EQ(double_to_half(65520.0), 0x7c00);  // the tie with 2^16 goes to the even "2^16": inf
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);
  EXPECT_EQ(double_to_half(-65520.0), 0xfc00);
  EXPECT_EQ(double_to_half(-65519.99), 0xfbff);
  EXPECT_EQ(double_to_half(1e6), 0x7c00);
  EXPECT_EQ(double_to_half(1e300), 0x7c00);
  EXPECT_EQ(double_to_half(std::numeric_limits<double>::max()), 0x7c00);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::max()), 0x7c00);
  EXPECT_EQ(double_to_half(kInf), 0x7c00);
  EXPECT_EQ(double_to_half(-kInf), 0xfc00);
  EXPECT_EQ(float_to_half(-INFINITY), 0xfc00);
}

TEST(Half, NaNStaysQuietNaNWithSign) {
  const double qnan = std::numeric_limits<double>::quiet_NaN();
  const double snan = std::numeric_limits<double>::signaling_NaN();
  for (double x : {qnan, -qnan, snan, -snan, std::bit_cast<double>(0x7ff0000000000001ull),
                   std::bit_cast<double>(0xfff0000000000001ull)}) {
    const std::uint16_t h = double_to_half(x);
    EXPECT_TRUE(half_is_quiet_nan(h)) << std::hex << h;
    EXPECT_EQ((h & 0x8000u) != 0, std::signbit(x)) << std::hex << h;
  }
  for (std::uint32_t bits : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fa5a5a5u}) {
    const float x = std::bit_cast<float>(bits);
    const std::uint16_t h = float_to_half(x);
    EXPECT_TRUE(half_is_quiet_nan(h)) << std::hex << bits << " -> " << h;
    EXPECT_EQ((h & 0x8000u) != 0, (bits >> 31) != 0);
  }
}

// ------------------------------------------------------------------ bfloat16, exhaustive

TEST(BFloat16, ToFloatIsTheTopHalfForAllPatterns) {
  for (std::uint32_t i = 0; i < 65536; ++i) {
    const auto b = static_cast<std::uint16_t>(i);
    const float f = bf16_to_float(b);
    ASSERT_EQ(float_bits(f), i << 16) << std::hex << i;
    if (!bf16_is_nan(b)) {
      ASSERT_EQ(static_cast<double>(f), bf16_value_reference(b)) << std::hex << i;
    }
  }
}

TEST(BFloat16, AllPatternsRoundTripThroughFloatAndDouble) {
  for (std::uint32_t i = 0; i < 65536; ++i) {
    const auto b = static_cast<std::uint16_t>(i);
    const float f = bf16_to_float(b);
    const std::uint16_t via_float = float_to_bf16(f);
    const std::uint16_t via_double = double_to_bf16(static_cast<double>(f));
    if (bf16_is_nan(b)) {
      ASSERT_TRUE(bf16_is_quiet_nan(via_float)) << std::hex << i << " -> " << via_float;
      ASSERT_TRUE(bf16_is_quiet_nan(via_double)) << std::hex << i << " -> " << via_double;
      ASSERT_EQ(via_float & 0x8000u, b & 0x8000u) << std::hex << i;
      ASSERT_EQ(via_double & 0x8000u, b & 0x8000u) << std::hex << i;
    } else {
      ASSERT_EQ(via_float, b) << std::hex << i;
      ASSERT_EQ(via_double, b) << std::hex << i;
    }
  }
}

TEST(BFloat16, MidpointsTieToEvenInFloatAndDouble) {
  for (std::uint16_t a = 0; a < 0x7f7f; ++a) {
    const std::uint16_t b = static_cast<std::uint16_t>(a + 1);
    const double lo = bf16_value_reference(a), hi = bf16_value_reference(b);
    const double mid = (lo + hi) / 2;
    const std::uint16_t even = (a & 1) ? b : a;
    for (int s = 0; s < 2; ++s) {
      const std::uint16_t sign = s ? 0x8000 : 0;
      const double m = s ? -mid : mid;
      const auto away = static_cast<std::uint16_t>(sign | b);
      const auto toward = static_cast<std::uint16_t>(sign | a);
      const float fm = static_cast<float>(m);
      ASSERT_EQ(static_cast<double>(fm), m);
      ASSERT_EQ(float_to_bf16(fm), sign | even) << std::hex << a;
      ASSERT_EQ(double_to_bf16(m), sign | even) << std::hex << a;
      ASSERT_EQ(float_to_bf16(std::nextafter(fm, s ? -INFINITY : INFINITY)), away) << std::hex << a;
      ASSERT_EQ(float_to_bf16(std::nextafter(fm, 0.0f)), toward) << std::hex << a;
      ASSERT_EQ(double_to_bf16(std::nextafter(m, s ? -kInf : kInf)), away) << std::hex << a;
      ASSERT_EQ(double_to_bf16(std::nextafter(m, 0.0)), toward) << std::hex << a;
    }
  }
}

TEST(BFloat16, DoubleToBf16RoundsOnce) {
  for (std::uint16_t a = 0; a < 0x7f7f; a += 2) {
    const double mid = (bf16_value_reference(a) + bf16_value_reference(a + 1)) / 2;
    const double above = std::nextafter(mid, kInf);
    ASSERT_EQ(static_cast<double>(static_cast<float>(above)), mid);
    ASSERT_EQ(double_to_bf16(above), a + 1) << std::hex << a;
  }
  EXPECT_EQ(double_to_bf16(1.0 + std::ldexp(1.0, -8)), 0x3f80);
  EXPECT_EQ(double_to_bf16(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)), 0x3f81);
}

// float_to_bf16 and double_to_bf16 agree for every float whose upper 16 bits take any value
// and whose lower 16 bits are one of the patterns that decide rounding.
TEST(BFloat16, FloatAndDoublePathsAgree) {
  const std::uint32_t lows[] = {0x0000, 0x0001, 0x3fff, 0x7ffe, 0x7fff, 0x8000,
                                0x8001, 0xbfff, 0xc000, 0xfffe, 0xffff, 0x1234};
  for (std::uint32_t hi = 0; hi < 65536; ++hi) {
    for (std::uint32_t lo : lows) {
      const std::uint32_t bits = (hi << 16) | lo;
      const float f = std::bit_cast<float>(bits);
      const std::uint16_t a = float_to_bf16(f), b = double_to_bf16(static_cast<double>(f));
      if (std::isnan(f)) {
        ASSERT_TRUE(bf16_is_quiet_nan(a) && bf16_is_quiet_nan(b)) << std::hex << bits;
        ASSERT_EQ(a & 0x8000u, b & 0x8000u);
      } else {
        ASSERT_EQ(a, b) << std::hex << bits;
      }
    }
  }
}

TEST(BFloat16, SubnormalsOverflowNaN) {
  const double tiny = std::ldexp(1.0, -133);  // smallest bf16 subnormal
  EXPECT_EQ(double_to_bf16(tiny), 0x0001);
  EXPECT_EQ(double_to_bf16(tiny / 2), 0x0000);
  EXPECT_EQ(double_to_bf16(-tiny / 2), 0x8000);
  EXPECT_EQ(double_to_bf16(std::nextafter(tiny / 2, 1.0)), 0x0001);
  EXPECT_EQ(double_to_bf16(1.5 * tiny), 0x0002);
  EXPECT_EQ(float_to_bf16(static_cast<float>(tiny / 2)), 0x0000);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(double_to_bf16(std::numeric_limits<double>::denorm_min()), 0x0000);
  EXPECT_EQ(double_to_bf16(-0.0), 0x8000);
  EXPECT_EQ(float_to_bf16(-0.0f), 0x8000);
  // Overflow: values at or above the midpoint between the max and 2^128 go to infinity.
  const double max = bf16_value_reference(0x7f7f);
  const double mid = (max + std::ldexp(1.0, 128)) / 2;
  EXPECT_EQ(double_to_bf16(std::nextafter(mid, 0.0)), 0x7f7f);
  EXPECT_EQ(double_to_bf16(mid), 0x7f80);
  EXPECT_EQ(double_to_bf16(-mid), 0xff80);
  EXPECT_EQ(double_to_bf16(1e300), 0x7f80);
  EXPECT_EQ(double_to_bf16(-1e300), 0xff80);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(float_to_bf16(std::nextafter(static_cast<float>(mid), 0.0f)), 0x7f7f);
  EXPECT_EQ(float_to_bf16(INFINITY), 0x7f80);
  EXPECT_EQ(float_to_bf16(-INFINITY), 0xff80);
  EXPECT_EQ(double_to_bf16(kInf), 0x7f80);
  EXPECT_EQ(double_to_bf16(-kInf), 0xff80);
  // NaN: quiet, sign kept, never turned into infinity by the rounding carry.
  for (std::uint32_t bits : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu,
                             0xffffffffu, 0x7f80ffffu, 0x7fa5a5a5u}) {
    const std::uint16_t b = float_to_bf16(std::bit_cast<float>(bits));
    EXPECT_TRUE(bf16_is_quiet_nan(b)) << std::hex << bits << " -> " << b;
    EXPECT_EQ(b >> 15, bits >> 31);
  }
  for (double x :
       {std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::quiet_NaN(),
        std::bit_cast<double>(0x7ff0000000000001ull)}) {
    const std::uint16_t b = double_to_bf16(x);
    EXPECT_TRUE(bf16_is_quiet_nan(b)) << std::hex << b;
    EXPECT_EQ((b & 0x8000u) != 0, std::signbit(x));
  }
}

// ------------------------------------------------------------------ nearest-value properties

// Checks that `got` is a nearest value to x among the finite values of a 16-bit format
// (given through `value`), with ties to the even pattern and overflow to infinity at
// `overflow_at` (the midpoint between the max and the next power of two).
void check_nearest(double x, std::uint16_t got, double (*value)(std::uint16_t),
                   std::uint16_t max_bits, double overflow_at, std::uint16_t inf_bits) {
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(x);
  RC_ASSERT((got & 0x8000u) == sign);
  if (a >= overflow_at) {
    RC_ASSERT(got == (sign | inf_bits));
    return;
  }
  const std::uint16_t mag = got & 0x7fffu;
  RC_ASSERT(mag <= max_bits);
  const double err = std::fabs(a - value(mag));  // exact in double
  if (mag > 0) RC_ASSERT(err <= std::fabs(a - value(static_cast<std::uint16_t>(mag - 1))));
  if (mag < max_bits) {
    const double up_err = std::fabs(a - value(static_cast<std::uint16_t>(mag + 1)));
    RC_ASSERT(err <= up_err);
    if (err == up_err) RC_ASSERT((mag & 1u) == 0);  // tie: the even one
  }
  if (mag > 0) {
    const double down_err = std::fabs(a - value(static_cast<std::uint16_t>(mag - 1)));
    if (err == down_err) RC_ASSERT((mag & 1u) == 0);
  }
}

// Random float bit patterns cover every binade; the exponent is biased toward the half range.
rc::Gen<float> finite_float() {
  return rc::gen::map(
      rc::gen::tuple(rc::gen::arbitrary<bool>(), rc::gen::inRange<std::uint32_t>(80, 160),
                     rc::gen::arbitrary<std::uint32_t>(), rc::gen::arbitrary<std::uint32_t>()),
      [](const std::tuple<bool, std::uint32_t, std::uint32_t, std::uint32_t>& t) {
        const auto& [neg, biased_exp, mant, any] = t;
        // One draw in four takes any finite bit pattern at all.
        std::uint32_t bits =
            (any % 4 == 0) ? (mant & 0x7fffffffu) : ((biased_exp << 23) | (mant & 0x7fffffu));
        if ((bits & 0x7f800000u) == 0x7f800000u) bits &= 0x7f7fffffu;  // keep it finite
        if (neg) bits |= 0x80000000u;
        return std::bit_cast<float>(bits);
      });
}

// Doubles with full 52-bit mantissas and exponents in [lo_exp, lo_exp + n_exp).
rc::Gen<double> double_in_binades(int lo_exp, int n_exp) {
  return rc::gen::map(
      rc::gen::tuple(rc::gen::arbitrary<std::uint64_t>(), rc::gen::inRange(0, n_exp)),
      [lo_exp](const std::tuple<std::uint64_t, int>& t) {
        const auto& [bits, e] = t;
        const double m = 1.0 + std::ldexp(static_cast<double>(bits >> 12), -52);
        return std::ldexp(m, lo_exp + e) * ((bits & 1) ? -1.0 : 1.0);
      });
}

// Each property run checks a batch of values, so the default 100 runs cover thousands.
RC_GTEST_PROP(HalfProperty, FloatToHalfIsNearestTiesToEven, ()) {
  for (float x : *rc::gen::container<std::vector<float>>(64, finite_float())) {
    const std::uint16_t h = float_to_half(x);
    check_nearest(static_cast<double>(x), h, half_value_reference, 0x7bff, 65520.0, 0x7c00);
    RC_ASSERT(double_to_half(static_cast<double>(x)) == h);
  }
}

RC_GTEST_PROP(HalfProperty, DoubleToHalfIsNearestTiesToEven, ()) {
  // Around the half range, 2^-26 .. 2^17.
  for (double x : *rc::gen::container<std::vector<double>>(64, double_in_binades(-26, 44))) {
    check_nearest(x, double_to_half(x), half_value_reference, 0x7bff, 65520.0, 0x7c00);
  }
}

RC_GTEST_PROP(BFloat16Property, FloatToBf16IsNearestTiesToEven, ()) {
  const double overflow_at = (bf16_value_reference(0x7f7f) + std::ldexp(1.0, 128)) / 2;
  for (float x : *rc::gen::container<std::vector<float>>(64, finite_float())) {
    const std::uint16_t b = float_to_bf16(x);
    check_nearest(static_cast<double>(x), b, bf16_value_reference, 0x7f7f, overflow_at, 0x7f80);
    RC_ASSERT(double_to_bf16(static_cast<double>(x)) == b);
  }
}

RC_GTEST_PROP(BFloat16Property, DoubleToBf16IsNearestTiesToEven, ()) {
  const double overflow_at = (bf16_value_reference(0x7f7f) + std::ldexp(1.0, 128)) / 2;
  for (double x : *rc::gen::container<std::vector<double>>(64, double_in_binades(-140, 270))) {
    check_nearest(x, double_to_bf16(x), bf16_value_reference, 0x7f7f, overflow_at, 0x7f80);
  }
}

// ------------------------------------------------------------------ buffers

TEST(DType, LoadStoreRoundTripEveryType) {
  const double values[] = {0.0, -0.0, 1.0, -2.5, 0.1, 65504.0, 1e-7, -3.0e38, 1e300};
  for (DType t : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    std::vector<unsigned char> buf(dtype_size(t) * 4, 0xEE);
    for (double x : values) {
      store_from_double(t, buf.data(), 2, x);
      const double y = load_as_double(t, buf.data(), 2);
      double expected = x;
      switch (t) {
        case DType::f64:
          break;
        case DType::f32:
          expected = static_cast<float>(x);
          break;
        case DType::f16:
          expected = half_to_float(double_to_half(x));
          break;
        case DType::bf16:
          expected = bf16_to_float(double_to_bf16(x));
          break;
      }
      EXPECT_EQ(double_bits(y), double_bits(expected)) << dtype_name(t) << " " << x;
      // Storing what was loaded is exact.
      store_from_double(t, buf.data(), 2, y);
      EXPECT_EQ(double_bits(load_as_double(t, buf.data(), 2)), double_bits(y));
    }
    // Only element 2 was touched; elements 0, 1 and 3 keep their bytes.
    for (std::size_t i = 0; i < buf.size(); ++i) {
      if (i / dtype_size(t) != 2) {
        EXPECT_EQ(buf[i], 0xEE) << dtype_name(t) << " byte " << i;
      }
    }
  }
}

TEST(DType, StoreRoundsOnceAndWritesTheRightBits) {
  // Each case: a double just above a tie of the target type. Rounding once goes up.
  double buf[2] = {0, 0};
  const double f32_above_tie = 1.0 + std::ldexp(1.0, -24) + std::ldexp(1.0, -40);
  store_from_double(DType::f32, buf, 1, f32_above_tie);
  EXPECT_EQ(load_as_double(DType::f32, buf, 1), 1.0 + std::ldexp(1.0, -23));
  float f;
  std::memcpy(&f, reinterpret_cast<unsigned char*>(buf) + 4, 4);
  EXPECT_EQ(float_bits(f), 0x3f800001u);

  std::uint16_t h[3] = {0, 0, 0};
  store_from_double(DType::f16, h, 1, 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40));
  EXPECT_EQ(h[1], 0x3c01);
  EXPECT_EQ(load_as_double(DType::f16, h, 1), 1.0 + std::ldexp(1.0, -10));
  store_from_double(DType::bf16, h, 2, 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40));
  EXPECT_EQ(h[2], 0x3f81);
  EXPECT_EQ(h[0], 0);
  store_from_double(DType::f16, h, 0, -65520.0);
  EXPECT_EQ(h[0], 0xfc00);
  EXPECT_EQ(load_as_double(DType::f16, h, 0), -kInf);

  double d[2] = {0, 0};
  store_from_double(DType::f64, d, 1, 0.1);
  EXPECT_EQ(d[1], 0.1);
  EXPECT_EQ(load_as_double(DType::f64, d, 1), 0.1);
  EXPECT_EQ(d[0], 0.0);
}

TEST(DType, LoadAsDoubleExactForAllHalfAndBf16Patterns) {
  std::vector<std::uint16_t> all(65536);
  for (std::uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<std::uint16_t>(i);
  for (std::uint32_t i = 0; i < 65536; ++i) {
    const double h = load_as_double(DType::f16, all.data(), i);
    const double b = load_as_double(DType::bf16, all.data(), i);
    if (!half_is_nan(all[i])) {
      ASSERT_EQ(double_bits(h), double_bits(half_value_reference(all[i]))) << std::hex << i;
    } else {
      ASSERT_TRUE(std::isnan(h));
    }
    if (!bf16_is_nan(all[i])) {
      ASSERT_EQ(double_bits(b), double_bits(bf16_value_reference(all[i]))) << std::hex << i;
    } else {
      ASSERT_TRUE(std::isnan(b));
    }
  }
}

TEST(DType, DoubleToFloatRoundsToNearestEven) {
  EXPECT_EQ(double_to_float(1.0 + std::ldexp(1.0, -24)), 1.0f);
  EXPECT_EQ(double_to_float(1.0 + 3 * std::ldexp(1.0, -24)), 1.0f + std::ldexp(1.0f, -22));
  EXPECT_EQ(double_to_float(1.0 + std::ldexp(1.0, -24) + std::ldexp(1.0, -50)),
            1.0f + std::ldexp(1.0f, -23));
  EXPECT_EQ(double_to_float(1e39), INFINITY);
  EXPECT_TRUE(std::isnan(double_to_float(std::numeric_limits<double>::quiet_NaN())));
}

}  // namespace
}  // namespace sdpa
