#include "reports/records/shard.hpp"

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace sdpa::conformance {
namespace {

bool parse_int(std::string_view s, int* out) {
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

Shard checked(int index, int count, const std::string& what) {
  if (count < 1) throw std::invalid_argument(what + ": the number of shards must be at least 1");
  if (index < 0 || index >= count) {
    throw std::invalid_argument(what + ": shard index " + std::to_string(index) +
                                " is outside [0, " + std::to_string(count - 1) +
                                "] (indices are 0-based)");
  }
  return Shard{index, count};
}

}  // namespace

Shard parse_shard(std::string_view text) {
  const std::string what = "--shard '" + std::string(text) + "'";
  const auto slash = text.find('/');
  int k = 0, n = 0;
  if (slash == std::string_view::npos || !parse_int(text.substr(0, slash), &k) ||
      !parse_int(text.substr(slash + 1), &n)) {
    throw std::invalid_argument(what + ": expected K/N, two integers with 0 <= K < N (e.g. 0/3)");
  }
  return checked(k, n, what);
}

std::string shard_name(const Shard& s) {
  return std::to_string(s.index) + "/" + std::to_string(s.count);
}

Shard shard_from_environment() {
  const char* total = std::getenv("TEST_TOTAL_SHARDS");
  if (!total || !*total) return Shard{};
  const char* index = std::getenv("TEST_SHARD_INDEX");
  int n = 0, k = 0;
  if (!parse_int(total, &n)) {
    throw std::invalid_argument(std::string("TEST_TOTAL_SHARDS='") + total + "' is not an integer");
  }
  if (!index || !parse_int(index, &k)) {
    throw std::invalid_argument(std::string("TEST_SHARD_INDEX='") + (index ? index : "") +
                                "' is not an integer (TEST_TOTAL_SHARDS is set)");
  }
  Shard s = checked(
      k, n, "TEST_SHARD_INDEX=" + std::to_string(k) + " TEST_TOTAL_SHARDS=" + std::to_string(n));
  if (const char* status = std::getenv("TEST_SHARD_STATUS_FILE"); status && *status) {
    std::ofstream touch(status, std::ios::app);
    if (!touch) {
      throw std::invalid_argument(std::string("TEST_SHARD_STATUS_FILE: cannot write '") + status +
                                  "'");
    }
  }
  return s;
}

std::size_t shard_size(std::size_t total, const Shard& s) {
  const auto n = static_cast<std::size_t>(s.count), k = static_cast<std::size_t>(s.index);
  return total > k ? (total - k + n - 1) / n : 0;
}

}  // namespace sdpa::conformance
