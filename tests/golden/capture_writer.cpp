#include "tests/golden/capture_writer.hpp"

#include <hdf5.h>

#include <stdexcept>

namespace sdpa::golden::testing {

namespace {

void check(herr_t r, const char* what) {
  if (r < 0) throw std::runtime_error(std::string("capture writer: ") + what);
}

void string_attr(hid_t obj, const char* name, const std::string& value) {
  const hid_t type = H5Tcopy(H5T_C_S1);
  check(H5Tset_size(type, value.size() + 1), "string size");
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  check(H5Awrite(a, type, value.c_str()), name);
  H5Aclose(a);
  H5Sclose(space);
  H5Tclose(type);
}

void int_attr(hid_t obj, const char* name, std::int64_t value) {
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(obj, name, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT);
  check(H5Awrite(a, H5T_NATIVE_INT64, &value), name);
  H5Aclose(a);
  H5Sclose(space);
}

void dataset(hid_t group, const char* name, hid_t file_type, hid_t mem_type,
             const std::vector<hsize_t>& dims, const void* data, const char* dtype_attr) {
  const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  const hid_t d = H5Dcreate2(group, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  check(H5Dwrite(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), name);
  if (dtype_attr) string_attr(d, "dtype", dtype_attr);
  H5Dclose(d);
  H5Sclose(space);
}

// The logical tensor of a dense view, row-major, as raw elements.
std::vector<unsigned char> logical(const GuardedBuffer& g) {
  const StridedView& v = g.view();
  const std::size_t es = g.element_size();
  std::vector<unsigned char> out;
  const auto* base = static_cast<const unsigned char*>(g.data());
  for (std::int64_t a = 0; a < v.shape[0]; ++a)
    for (std::int64_t b = 0; b < v.shape[1]; ++b)
      for (std::int64_t c = 0; c < v.shape[2]; ++c)
        for (std::int64_t d = 0; d < v.shape[3]; ++d) {
          const std::int64_t off = a * v.stride[0] + b * v.stride[1] + c * v.stride[2] + d * v.stride[3];
          out.insert(out.end(), base + off * static_cast<std::int64_t>(es),
                     base + (off + 1) * static_cast<std::int64_t>(es));
        }
  return out;
}

void input(hid_t group, const char* name, DType t, const GuardedBuffer& g) {
  const StridedView& v = g.view();
  const std::vector<hsize_t> dims(v.shape.begin(), v.shape.end());
  const auto bytes = logical(g);
  switch (t) {
    case DType::f64:
      return dataset(group, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, dims, bytes.data(), nullptr);
    case DType::f32:
      return dataset(group, name, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, dims, bytes.data(), nullptr);
    case DType::f16:
    case DType::bf16:
      return dataset(group, name, H5T_STD_U16LE, H5T_NATIVE_UINT16, dims, bytes.data(),
                     std::string(dtype_name(t)).c_str());
  }
}

}  // namespace

void write_capture(const std::string& path, std::int64_t digits,
                   const std::vector<CapturedCase>& cases) {
  const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (f < 0) throw std::runtime_error("capture writer: cannot create " + path);
  string_attr(f, "schema", "sdpa-cts-golden");
  int_attr(f, "schema_version", 1);
  string_attr(f, "semantics_version", "1");
  string_attr(f, "generator", "tests/golden/capture_writer.cpp");
  string_attr(f, "generator_version", "1");
  int_attr(f, "precision_digits", digits);
  const hid_t sdpa = H5Gcreate2(f, "sdpa", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  for (const CapturedCase& cc : cases) {
    const Problem& p = cc.c.problem;
    const hid_t g = H5Gcreate2(sdpa, format_case_id(cc.c).c_str(), H5P_DEFAULT, H5P_DEFAULT,
                               H5P_DEFAULT);
    input(g, "q", p.dtype, cc.in->q);
    input(g, "k", p.dtype, cc.in->k);
    input(g, "v", p.dtype, cc.in->v);
    if (cc.in->mask) {
      if (p.mask == MaskKind::boolean) {
        const StridedView& v = cc.in->mask->view();
        dataset(g, "mask", H5T_STD_U8LE, H5T_NATIVE_UINT8,
                std::vector<hsize_t>(v.shape.begin(), v.shape.end()),
                logical(*cc.in->mask).data(), nullptr);
      } else {
        input(g, "mask", p.dtype, *cc.in->mask);
      }
    }
    const auto B = static_cast<hsize_t>(p.batch), H = static_cast<hsize_t>(p.heads_q),
               L = static_cast<hsize_t>(p.len_q), Dv = static_cast<hsize_t>(p.head_dim_v);
    dataset(g, "o", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {B, H, L, Dv}, cc.o.data(), nullptr);
    dataset(g, "lse", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {B, H, L}, cc.lse.data(), nullptr);
    H5Gclose(g);
  }
  H5Gclose(sdpa);
  H5Fclose(f);
}

}  // namespace sdpa::golden::testing
