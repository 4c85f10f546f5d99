// The CUDA emulator's f16/bf16 conversions (kernels/cuda/emulator/emulator.hpp: what
// simt.hpp's to_float / from_float run on the host) against core/dtype's, the project's one
// definition of them (round to nearest even, overflow to infinity, NaN kept quiet with its
// sign): bit for bit, on every f16 and bf16 pattern widened and on f32 values that reach
// every rounding case when narrowed (each tie between neighbours and the f32 values on either
// side of it, subnormals, the overflow thresholds, NaNs, and a stride through all f32 bit
// patterns). core/dtype's own correctness is tests/core/dtype_test.cpp's; a few anchors with
// hand-computed results here keep the comparison honest should both sides go wrong alike.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "kernels/cuda/emulator/emulator.hpp"

namespace sdpa {
namespace {

namespace emu = cuda::emu;

std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }
float float_of(std::uint32_t u) { return std::bit_cast<float>(u); }

std::string hex(std::uint32_t u, int digits) {
  char s[16];
  std::snprintf(s, sizeof s, "0x%0*x", digits, u);
  return s;
}

std::uint16_t emu_half_bits(float x) { return emu::ops::to_half(x).bits; }
std::uint16_t emu_bf16_bits(float x) { return emu::ops::to_bf16(x).bits; }
// (Half{bits} would convert the bits as a float: the types' one-argument constructor.)
float emu_widen_half(std::uint32_t bits) {
  emu::Half h;
  h.bits = static_cast<std::uint16_t>(bits);
  return emu::ops::to_float(h);
}
float emu_widen_bf16(std::uint32_t bits) {
  emu::Bf16 b;
  b.bits = static_cast<std::uint16_t>(bits);
  return emu::ops::to_float(b);
}

// f32 inputs that exercise every rounding case of a narrowing to a 16-bit type whose finite
// patterns of one sign are 0 .. last_finite and whose values half_to_float-like `widen` gives.
template <class Widen>
std::vector<float> narrowing_inputs(std::uint16_t last_finite, Widen widen) {
  std::vector<float> in;
  auto add_with_neighbours = [&](float x) {
    for (float v :
         {x, std::nextafter(x, 0.f), std::nextafter(x, std::numeric_limits<float>::infinity())}) {
      in.push_back(v);
      in.push_back(-v);
    }
  };
  for (std::uint32_t h = 0; h <= last_finite; ++h) {
    const double lo = widen(static_cast<std::uint16_t>(h));
    add_with_neighbours(static_cast<float>(lo));  // exact values
    // The tie between this pattern and the next: exact in f32 (the 16-bit types have at most
    // 11 significant bits, f32 24), including the tie between the largest finite value and
    // the first value past it, which rounds to infinity.
    const double next = h < last_finite ? widen(static_cast<std::uint16_t>(h + 1))
                                        : 2 * lo - widen(static_cast<std::uint16_t>(h - 1));
    const double tie = (lo + next) / 2;
    if (tie <= std::numeric_limits<float>::max()) add_with_neighbours(static_cast<float>(tie));
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float v :
       {inf, std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
        std::numeric_limits<float>::denorm_min(), 65504.f, 65519.99f, 65520.f, std::ldexp(1.f, -24),
        std::ldexp(1.f, -25), std::ldexp(3.f, -26), std::ldexp(1.f, -14), std::ldexp(1.f, -126),
        std::ldexp(1.f, -133), std::ldexp(1.f, -134), std::ldexp(3.f, -135)}) {
    add_with_neighbours(v);
  }
  // NaNs: quiet and signalling, with payloads in the bits a narrowing drops and keeps.
  for (std::uint32_t nan : {0x7fc00000u, 0x7f800001u, 0x7fa00000u, 0x7fbfffffu, 0x7fc0ffffu,
                            0x7f80ffffu, 0x7fffffffu}) {
    in.push_back(float_of(nan));
    in.push_back(float_of(nan | 0x80000000u));
  }
  // A stride through all 2^32 f32 patterns (odd, so every residue of the low bits occurs).
  for (std::uint64_t u = 0; u < (1ull << 32); u += 4099) {
    in.push_back(float_of(static_cast<std::uint32_t>(u)));
  }
  return in;
}

// Compares emulator and core on every input; reports the first few differences.
template <class Emu, class Core>
void expect_same_narrowing(const std::vector<float>& inputs, Emu emu_fn, Core core_fn) {
  int reported = 0;
  long differences = 0;
  for (float x : inputs) {
    const std::uint16_t e = emu_fn(x), c = core_fn(x);
    if (e == c) continue;
    ++differences;
    if (reported++ < 8) {
      ADD_FAILURE() << "f32 " << hex(bits_of(x), 8) << " (" << x << "): emulator " << hex(e, 4)
                    << ", core/dtype " << hex(c, 4);
    }
  }
  EXPECT_EQ(differences, 0) << "of " << inputs.size() << " inputs";
}

TEST(EmulatorConversions, EveryHalfPatternWidensAsCoreDtype) {
  long differences = 0;
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const std::uint32_t e = bits_of(emu_widen_half(h));
    const std::uint32_t c = bits_of(half_to_float(static_cast<std::uint16_t>(h)));
    if (e != c && differences++ < 8) {
      ADD_FAILURE() << "f16 " << hex(h, 4) << ": emulator " << hex(e, 8) << ", core/dtype "
                    << hex(c, 8);
    }
  }
  EXPECT_EQ(differences, 0);
  // Anchors: one, the smallest subnormal, the largest finite value, infinity, a NaN's payload.
  EXPECT_EQ(emu_widen_half(0x3c00), 1.f);
  EXPECT_EQ(emu_widen_half(0x0001), std::ldexp(1.f, -24));
  EXPECT_EQ(emu_widen_half(0x83ff), -std::ldexp(1023.f, -24));
  EXPECT_EQ(emu_widen_half(0x7bff), 65504.f);
  EXPECT_EQ(bits_of(emu_widen_half(0xfc00)), 0xff800000u);
  EXPECT_EQ(bits_of(emu_widen_half(0x7d01)), 0x7fa02000u);
}

TEST(EmulatorConversions, EveryBf16PatternWidensAsCoreDtype) {
  long differences = 0;
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const std::uint32_t e = bits_of(emu_widen_bf16(b));
    const std::uint32_t c = bits_of(bf16_to_float(static_cast<std::uint16_t>(b)));
    if (e != c && differences++ < 8) {
      ADD_FAILURE() << "bf16 " << hex(b, 4) << ": emulator " << hex(e, 8) << ", core/dtype "
                    << hex(c, 8);
    }
  }
  EXPECT_EQ(differences, 0);
  EXPECT_EQ(emu_widen_bf16(0x3f80), 1.f);
  EXPECT_EQ(emu_widen_bf16(0x0001), std::ldexp(1.f, -133));
  EXPECT_EQ(bits_of(emu_widen_bf16(0xff81)), 0xff810000u);
}

TEST(EmulatorConversions, NarrowingToHalfRoundsAsCoreDtype) {
  const auto inputs = narrowing_inputs(
      0x7bff, [](std::uint16_t h) { return static_cast<double>(half_to_float(h)); });
  expect_same_narrowing(inputs, emu_half_bits, [](float x) { return float_to_half(x); });
  // Anchors: ties to even (up and down, normal and subnormal), just past a tie, overflow.
  EXPECT_EQ(emu_half_bits(1.f + std::ldexp(1.f, -11)), 0x3c00);  // tie, down to even
  EXPECT_EQ(emu_half_bits(1.f + std::ldexp(3.f, -11)), 0x3c02);  // tie, up to even
  EXPECT_EQ(emu_half_bits(std::nextafter(1.f + std::ldexp(1.f, -11), 2.f)), 0x3c01);
  EXPECT_EQ(emu_half_bits(std::ldexp(1.f, -25)), 0x0000);     // tie at zero
  EXPECT_EQ(emu_half_bits(std::ldexp(3.f, -25)), 0x0002);     // subnormal tie, up
  EXPECT_EQ(emu_half_bits(std::ldexp(2047.f, -25)), 0x0400);  // into the normals
  EXPECT_EQ(emu_half_bits(-0.f), 0x8000);                     // -0 keeps its sign
  EXPECT_EQ(emu_half_bits(-std::ldexp(1.f, -26)), 0x8000);    // as does an underflow
  EXPECT_EQ(emu_half_bits(-65519.99f), 0xfbff);
  EXPECT_EQ(emu_half_bits(65520.f), 0x7c00);
  EXPECT_EQ(emu_half_bits(float_of(0xffa00000u)), 0xfe00);  // NaN: quiet, sign kept
}

TEST(EmulatorConversions, NarrowingToBf16RoundsAsCoreDtype) {
  const auto inputs = narrowing_inputs(
      0x7f7f, [](std::uint16_t b) { return static_cast<double>(bf16_to_float(b)); });
  expect_same_narrowing(inputs, emu_bf16_bits, [](float x) { return float_to_bf16(x); });
  EXPECT_EQ(emu_bf16_bits(float_of(0x3f808000u)), 0x3f80);  // tie, down to even
  EXPECT_EQ(emu_bf16_bits(float_of(0x3f818000u)), 0x3f82);  // tie, up to even
  EXPECT_EQ(emu_bf16_bits(float_of(0x3f808001u)), 0x3f81);
  EXPECT_EQ(emu_bf16_bits(float_of(0x00018000u)), 0x0002);  // subnormal tie, up (no flush)
  EXPECT_EQ(emu_bf16_bits(-0.f), 0x8000);                   // -0 keeps its sign
  EXPECT_EQ(emu_bf16_bits(float_of(0x80007fffu)), 0x8000);  // as does an underflow
  EXPECT_EQ(emu_bf16_bits(float_of(0x7f7fffffu)), 0x7f80);  // overflow to infinity
  EXPECT_EQ(emu_bf16_bits(float_of(0xff800001u)), 0xffc0);  // NaN: quiet, sign kept
}

}  // namespace
}  // namespace sdpa
