// Element types of sdpa-cts and their exact conversions.
//
// Policy: every conversion to a narrower type rounds to nearest, ties to even;
// overflow goes to +-inf; NaN stays NaN (quiet, sign kept). Conversions to wider
// types are exact. These are the only conversion routines in the project: kernels,
// the reference and the data generators all use them, so they agree bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sdpa {

// The element type shared by Q, K, V and O (and an additive mask).
enum class DType : std::uint8_t { f64, f32, f16, bf16 };

// Size of one element in bytes.
std::size_t dtype_size(DType t);
// Canonical lower-case name used in case IDs and reports: "f64", "f32", "f16", "bf16".
std::string_view dtype_name(DType t);
// Inverse of dtype_name; nullopt for an unknown name.
std::optional<DType> parse_dtype(std::string_view name);
// Unit roundoff of the type: 2^-53, 2^-24, 2^-11, 2^-8.
double dtype_unit_roundoff(DType t);
// Largest finite value of the type.
double dtype_max(DType t);

// IEEE binary16, stored as its bit pattern.
struct Half {
  std::uint16_t bits;
};
// bfloat16 (the top 16 bits of a binary32), stored as its bit pattern.
struct BFloat16 {
  std::uint16_t bits;
};

// Exact widening conversions.
float half_to_float(std::uint16_t bits);
float bf16_to_float(std::uint16_t bits);

// Narrowing conversions, round to nearest even.
std::uint16_t float_to_half(float x);
std::uint16_t double_to_half(double x);  // single rounding from f64, no double rounding
std::uint16_t float_to_bf16(float x);
std::uint16_t double_to_bf16(double x);  // single rounding from f64, no double rounding
float double_to_float(double x);

// Reads element `index` of a buffer of type t as a double (exact).
double load_as_double(DType t, const void* base, std::int64_t index);
// Writes x rounded once (nearest even) into element `index` of a buffer of type t.
void store_from_double(DType t, void* base, std::int64_t index, double x);

}  // namespace sdpa
