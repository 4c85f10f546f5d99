#include "python/src/arrays.hpp"

#include <nanobind/ndarray.h>

#include <cstring>
#include <sstream>
#include <stdexcept>

namespace sdpa::python {
namespace {

using i64 = std::int64_t;

nb::dlpack::dtype element_dtype(DType t) {
  switch (t) {
    case DType::f64:
      return nb::dtype<double>();
    case DType::f32:
      return nb::dtype<float>();
    case DType::f16:
      return {static_cast<std::uint8_t>(nb::dlpack::dtype_code::Float), 16, 1};
    default:  // bf16: its bits
      return nb::dtype<std::uint16_t>();
  }
}

nb::object make_view(const void* data, nb::dlpack::dtype dt, const StridedView& v,
                     nb::handle owner) {
  std::size_t shape[4];
  std::int64_t stride[4];
  for (int k = 0; k < 4; ++k) {
    shape[k] = static_cast<std::size_t>(v.shape[k]);
    stride[k] = v.stride[k];
  }
  nb::ndarray<nb::numpy, nb::ro> a(data, 4, shape, owner, stride, dt);
  return nb::cast(a, nb::rv_policy::reference);
}

std::string dtype_text(nb::dlpack::dtype d) {
  const char* code = "?";
  switch (static_cast<nb::dlpack::dtype_code>(d.code)) {
    case nb::dlpack::dtype_code::Int:
      code = "int";
      break;
    case nb::dlpack::dtype_code::UInt:
      code = "uint";
      break;
    case nb::dlpack::dtype_code::Float:
      code = "float";
      break;
    case nb::dlpack::dtype_code::Bfloat:
      code = "bfloat";
      break;
    case nb::dlpack::dtype_code::Bool:
      code = "bool";
      break;
    default:
      break;
  }
  return code + std::to_string(d.bits);
}

bool is(nb::dlpack::dtype d, nb::dlpack::dtype_code code, int bits) {
  return d.code == static_cast<std::uint8_t>(code) && d.bits == bits && d.lanes == 1;
}

}  // namespace

nb::object numpy_view(const void* data, DType t, const StridedView& v, nb::handle owner) {
  return make_view(data, element_dtype(t), v, owner);
}

nb::object numpy_view_u8(const void* data, const StridedView& v, nb::handle owner) {
  return make_view(data, nb::dtype<std::uint8_t>(), v, owner);
}

void copy_into(nb::handle array, const std::string& what, DType t, const StridedView& v, void* dst,
               bool widen_ok) {
  nb::ndarray<nb::ro> a;
  if (!nb::try_cast(array, a, false)) {
    throw std::invalid_argument(what + ": a " + nb::type_name(array.type()).c_str() +
                                " is not an array (it needs __dlpack__ or the buffer protocol)");
  }
  if (a.device_type() != nb::device::cpu::value) {
    throw std::invalid_argument(what + ": the array is not in host memory (device type " +
                                std::to_string(a.device_type()) + "); move it to the CPU first");
  }
  std::ostringstream want;
  want << "(" << v.shape[0] << ", " << v.shape[1] << ", " << v.shape[2] << ", " << v.shape[3]
       << ")";
  if (a.ndim() != 4) {
    throw std::invalid_argument(what + ": has " + std::to_string(a.ndim()) +
                                " dimensions, the case's is 4-D " + want.str());
  }
  for (int k = 0; k < 4; ++k) {
    if (static_cast<i64>(a.shape(k)) != v.shape[k]) {
      std::ostringstream got;
      got << "(" << a.shape(0) << ", " << a.shape(1) << ", " << a.shape(2) << ", " << a.shape(3)
          << ")";
      throw std::invalid_argument(what + ": has shape " + got.str() + ", the case's is " +
                                  want.str());
    }
  }
  const nb::dlpack::dtype d = a.dtype();
  bool same = false, from_f64 = false;
  switch (t) {
    case DType::f64:
      same = is(d, nb::dlpack::dtype_code::Float, 64);
      break;
    case DType::f32:
      same = is(d, nb::dlpack::dtype_code::Float, 32);
      from_f64 = widen_ok && is(d, nb::dlpack::dtype_code::Float, 64);
      break;
    case DType::f16:
      same = is(d, nb::dlpack::dtype_code::Float, 16);
      break;
    case DType::bf16:
      same = is(d, nb::dlpack::dtype_code::Bfloat, 16) || is(d, nb::dlpack::dtype_code::UInt, 16);
      break;
  }
  if (!same && !from_f64) {
    throw std::invalid_argument(what + ": has dtype " + dtype_text(d) + ", the case's is " +
                                std::string(dtype_name(t)) +
                                (t == DType::bf16 ? " (bfloat16, or its bits as uint16)" : ""));
  }
  const std::size_t es = dtype_size(t), src_es = a.itemsize();
  const auto* src = static_cast<const unsigned char*>(a.data());
  auto* out = static_cast<unsigned char*>(dst);
  for (i64 i0 = 0; i0 < v.shape[0]; ++i0)
    for (i64 i1 = 0; i1 < v.shape[1]; ++i1)
      for (i64 i2 = 0; i2 < v.shape[2]; ++i2)
        for (i64 i3 = 0; i3 < v.shape[3]; ++i3) {
          const i64 s = i0 * a.stride(0) + i1 * a.stride(1) + i2 * a.stride(2) + i3 * a.stride(3);
          const i64 o = i0 * v.stride[0] + i1 * v.stride[1] + i2 * v.stride[2] + i3 * v.stride[3];
          if (from_f64) {
            double x;
            std::memcpy(&x, src + s * static_cast<i64>(src_es), 8);
            const float f = static_cast<float>(x);
            std::memcpy(out + o * static_cast<i64>(es), &f, 4);
          } else {
            std::memcpy(out + o * static_cast<i64>(es), src + s * static_cast<i64>(src_es), es);
          }
        }
}

}  // namespace sdpa::python
