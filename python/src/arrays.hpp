// Arrays between Python and the suite's buffers: read-only numpy views of a case's tensors
// (zero-copy, in the case's own strides) and copies of a function's returned arrays (numpy,
// PyTorch, JAX, CuPy on the host: anything with __dlpack__ or the buffer protocol) into the
// judge's output buffers.
#pragma once

#include <nanobind/nanobind.h>

#include "core/dtype.hpp"
#include "core/problem.hpp"

namespace sdpa::python {

namespace nb = nanobind;

// A read-only numpy array over `data` (element 0 of view `v`, elements of type t; bf16 as
// uint16 bits, a boolean mask as uint8), kept alive by `owner`.
nb::object numpy_view(const void* data, DType t, const StridedView& v, nb::handle owner);
nb::object numpy_view_u8(const void* data, const StridedView& v, nb::handle owner);

// Copies `array` into `dst` (element 0 of view `v`, elements of type t). The array must be
// on the host with v's shape and t's element type (bf16: bfloat16 or its uint16 bits); float64
// is accepted for an f32 destination when `widen_ok` (the LSE), and rounded. Throws
// std::invalid_argument naming `what` and the mismatch.
void copy_into(nb::handle array, const std::string& what, DType t, const StridedView& v, void* dst,
               bool widen_ok = false);

}  // namespace sdpa::python
