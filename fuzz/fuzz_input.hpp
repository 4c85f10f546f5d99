// Structure-aware decoding of a fuzzer's bytes: each call takes the next value from the
// input, so that libFuzzer's mutations change one field of a case at a time. Past the end
// of the input every value is the smallest of its range.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace sdpa::fuzz {

class FuzzInput {
 public:
  FuzzInput(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  // An integer in [lo, hi] (inclusive), from as few bytes as the range needs.
  std::int64_t range(std::int64_t lo, std::int64_t hi) {
    if (hi <= lo) return lo;
    const std::uint64_t span = static_cast<std::uint64_t>(hi - lo);
    std::uint64_t v = 0;
    for (std::uint64_t have = 0; have < span && pos_ < size_; have = (have << 8) | 0xff) {
      v = (v << 8) | data_[pos_++];
    }
    return lo + static_cast<std::int64_t>(v % (span + 1));
  }
  bool flag() { return range(0, 1) == 1; }
  std::uint64_t u64() {
    std::uint64_t v = 0;
    for (int i = 0; i < 8 && pos_ < size_; ++i) v = (v << 8) | data_[pos_++];
    return v;
  }
  // The rest of the input as text.
  std::string rest() {
    std::string s(reinterpret_cast<const char*>(data_ + pos_), size_ - pos_);
    pos_ = size_;
    return s;
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

}  // namespace sdpa::fuzz
