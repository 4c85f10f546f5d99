// Byte sizes as people write them on a command line ("512M", "8G", "1.5T") and as messages
// print them ("11.6 GiB"). Units are binary: K = 1024 bytes, M = 1024 K, and so on.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sdpa::conformance {

// A positive whole number of bytes, or a decimal number followed by K, M, G, T or P and an
// optional "iB" ("512M", "8GiB", "1.5T", "4096"; letters in either case). Throws
// std::invalid_argument naming the text for anything else, for 0 and for more than UINT64_MAX
// bytes.
std::uint64_t parse_byte_size(std::string_view text);

// "512 B", "1.5 KiB", "11.6 GiB", "45.5 TiB": one decimal at most, in the largest unit not
// above the size; UINT64_MAX, a saturated size, prints as "at least 16 EiB".
std::string format_byte_size(std::uint64_t bytes);

}  // namespace sdpa::conformance
