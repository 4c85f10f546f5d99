#include "core/tensor_view.hpp"

#include <algorithm>

namespace sdpa {
namespace {

bool mul_overflows(std::int64_t a, std::int64_t b, std::int64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}
bool add_overflows(std::int64_t a, std::int64_t b, std::int64_t* out) {
  return __builtin_add_overflow(a, b, out);
}

}  // namespace

std::int64_t view_numel(const StridedView& v) {
  std::int64_t n = 1;
  for (std::int64_t s : v.shape) {
    if (s < 0 || mul_overflows(n, s, &n)) return -1;
  }
  return n;
}

std::int64_t view_extent(const StridedView& v) {
  std::int64_t last = 0;
  for (int k = 0; k < 4; ++k) {
    if (v.shape[k] < 0 || v.stride[k] < 0) return -1;
    if (v.shape[k] == 0) return 0;
  }
  for (int k = 0; k < 4; ++k) {
    std::int64_t span;
    if (mul_overflows(v.shape[k] - 1, v.stride[k], &span) || add_overflows(last, span, &last)) {
      return -1;
    }
  }
  std::int64_t extent;
  if (add_overflows(last, 1, &extent)) return -1;
  return extent;
}

std::string validate_view(const StridedView& v, const std::string& what) {
  for (int k = 0; k < 4; ++k) {
    if (v.shape[k] < 0) {
      return what + ": dimension " + std::to_string(k) + " has negative size " +
             std::to_string(v.shape[k]);
    }
    if (v.stride[k] < 0) {
      return what + ": dimension " + std::to_string(k) + " has negative stride " +
             std::to_string(v.stride[k]);
    }
  }
  if (view_numel(v) < 0) return what + ": element count overflows int64";
  if (view_extent(v) < 0) return what + ": largest element offset overflows int64";
  // Byte offsets must fit too (8 bytes per element at most).
  if (view_extent(v) > (INT64_MAX / 8)) return what + ": byte extent overflows int64";
  return "";
}

std::string validate_no_self_overlap(const StridedView& v, const std::string& what) {
  std::array<int, 4> dims{0, 1, 2, 3};
  if (view_numel(v) == 0) return "";
  std::sort(dims.begin(), dims.end(), [&](int a, int b) { return v.stride[a] < v.stride[b]; });
  std::int64_t span = 0;  // largest offset reachable with the dimensions seen so far
  for (int d : dims) {
    if (v.shape[d] <= 1) continue;
    if (v.stride[d] <= span) {
      return what + ": output view may overlap itself (dimension " + std::to_string(d) +
             " stride " + std::to_string(v.stride[d]) + " does not exceed the span " +
             std::to_string(span) + " of the faster dimensions)";
    }
    span += v.stride[d] * (v.shape[d] - 1);
  }
  return "";
}

std::array<std::int64_t, 4> contiguous_strides(const std::array<std::int64_t, 4>& shape) {
  std::array<std::int64_t, 4> s{};
  std::int64_t acc = 1;
  for (int k = 3; k >= 0; --k) {
    s[k] = acc;
    acc *= std::max<std::int64_t>(shape[k], 1);
  }
  return s;
}

}  // namespace sdpa
