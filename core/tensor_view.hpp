// Strided 4-D tensor views: shape and element strides, and their validation.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace sdpa {

// A 4-D view into a flat buffer: element (i0,i1,i2,i3) lives at
// sum_k idx_k * stride[k] elements from the view's first element.
struct StridedView {
  std::array<std::int64_t, 4> shape{};   // extent of each dimension, >= 0
  std::array<std::int64_t, 4> stride{};  // element stride of each dimension, >= 0 (0 = broadcast)
};

// Number of logical elements (product of the shape), or -1 on int64 overflow.
std::int64_t view_numel(const StridedView& v);

// Elements a buffer must hold for the view: max offset + 1 (0 for an empty view),
// or -1 on int64 overflow.
std::int64_t view_extent(const StridedView& v);

// Checks shape and strides: non-negative, no overflow in sizes or offsets.
// Returns "" when valid, else the reason naming `what` (e.g. "q").
std::string validate_view(const StridedView& v, const std::string& what);

// Checks that no two logical elements of an output view share memory. The test is
// sufficient (sorted strides each exceed the span of the dimensions below them); a view
// that fails it is rejected as possibly self-overlapping. Returns "" or the reason.
std::string validate_no_self_overlap(const StridedView& v, const std::string& what);

// Contiguous row-major strides for a shape.
std::array<std::int64_t, 4> contiguous_strides(const std::array<std::int64_t, 4>& shape);

}  // namespace sdpa
