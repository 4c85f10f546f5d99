#include "conformance/engine/byte_size.hpp"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace sdpa::conformance {
namespace {

constexpr std::array<char, 6> kUnitLetters = {'K', 'M', 'G', 'T', 'P', 'E'};

[[noreturn]] void bad_size(std::string_view text, const std::string& why) {
  throw std::invalid_argument("size '" + std::string(text) + "': " + why +
                              " (expected bytes, or a number with K, M, G, T or P: 512M, 8G, "
                              "1.5T; K = 1024 bytes)");
}

}  // namespace

std::uint64_t parse_byte_size(std::string_view text) {
  std::size_t i = 0;
  std::string number;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    number += text[i++];
  if (number.empty() || number.front() == '.' || number.back() == '.' ||
      number.find('.') != number.rfind('.')) {
    bad_size(text, "not a number");
  }
  int power = 0;  // of 1024
  if (i < text.size()) {
    const char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(text[i])));
    for (std::size_t u = 0; u + 1 < kUnitLetters.size(); ++u) {  // up to P
      if (unit == kUnitLetters[u]) power = static_cast<int>(u) + 1;
    }
    if (power == 0) bad_size(text, "unknown unit '" + std::string(text.substr(i)) + "'");
    ++i;
    const std::string_view rest = text.substr(i);
    if (!rest.empty() &&
        !(rest.size() == 2 && std::tolower(rest[0]) == 'i' && std::tolower(rest[1]) == 'b')) {
      bad_size(text, "unknown unit '" + std::string(text.substr(i - 1)) + "'");
    }
  } else if (number.find('.') != std::string::npos) {
    bad_size(text, "a number of bytes must be whole");
  }
  const long double bytes = std::strtold(number.c_str(), nullptr) * std::pow(1024.0L, power);
  if (bytes > static_cast<long double>(UINT64_MAX)) bad_size(text, "more than 2^64 bytes");
  const auto whole = static_cast<std::uint64_t>(bytes);
  if (whole == 0) bad_size(text, "must be at least 1 byte");
  return whole;
}

std::string format_byte_size(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  long double value = static_cast<long double>(bytes);
  std::size_t unit = 0;
  value /= 1024;
  while (value >= 1023.95L && unit + 1 < kUnitLetters.size()) {  // never "1024.0 KiB"
    value /= 1024;
    ++unit;
  }
  char text[48];
  std::snprintf(text, sizeof text, "%.1Lf %ciB", value, kUnitLetters[unit]);
  std::string s = text;
  if (s.find(".0 ") != std::string::npos) s.erase(s.find(".0 "), 2);
  if (bytes == UINT64_MAX) return "at least " + s;
  return s;
}

}  // namespace sdpa::conformance
