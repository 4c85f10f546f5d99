#include "golden/golden_writer.hpp"

#include <hdf5.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>

namespace sdpa::golden {
namespace {

// An HDF5 identifier closed on scope exit.
class Id {
 public:
  Id(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Id() {
    if (id_ >= 0) close_(id_);
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  hid_t get() const { return id_; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

struct Writer {
  std::string path;
  void check(herr_t r, const std::string& what) const {
    if (r < 0) throw std::runtime_error(path + ": cannot write " + what);
  }
  void check_id(hid_t id, const std::string& what) const {
    if (id < 0) throw std::runtime_error(path + ": cannot create " + what);
  }
  void string_attr(hid_t obj, const char* name, const std::string& value) const {
    Id type(H5Tcopy(H5T_C_S1), H5Tclose);
    check(H5Tset_size(type.get(), value.size() + 1), std::string("attribute ") + name);
    Id space(H5Screate(H5S_SCALAR), H5Sclose);
    Id a(H5Acreate2(obj, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    check_id(a.get(), std::string("attribute ") + name);
    check(H5Awrite(a.get(), type.get(), value.c_str()), std::string("attribute ") + name);
  }
  void int_attr(hid_t obj, const char* name, std::int64_t value) const {
    Id space(H5Screate(H5S_SCALAR), H5Sclose);
    Id a(H5Acreate2(obj, name, H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    check_id(a.get(), std::string("attribute ") + name);
    check(H5Awrite(a.get(), H5T_NATIVE_INT64, &value), std::string("attribute ") + name);
  }
  void dataset(hid_t group, const std::string& where, const char* name, hid_t file_type,
               hid_t mem_type, const std::vector<hsize_t>& dims, const void* data,
               const char* dtype_attr) const {
    Id space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
    Id d(H5Dcreate2(group, name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
         H5Dclose);
    check_id(d.get(), "dataset " + where + "/" + name);
    check(H5Dwrite(d.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data),
          "dataset " + where + "/" + name);
    if (dtype_attr) string_attr(d.get(), "dtype", dtype_attr);
  }
};

// The logical tensor of a view, row-major, as raw elements; `dims` may have 1 where the
// view broadcasts (stride 0), the stored shape of a mask.
std::vector<unsigned char> logical(const GuardedBuffer& g, const std::vector<hsize_t>& dims) {
  const StridedView& v = g.view();
  const std::size_t es = g.element_size();
  std::vector<unsigned char> out;
  const auto* base = static_cast<const unsigned char*>(g.data());
  for (hsize_t a = 0; a < dims[0]; ++a)
    for (hsize_t b = 0; b < dims[1]; ++b)
      for (hsize_t c = 0; c < dims[2]; ++c)
        for (hsize_t d = 0; d < dims[3]; ++d) {
          const std::int64_t off = std::int64_t(a) * v.stride[0] + std::int64_t(b) * v.stride[1] +
                                   std::int64_t(c) * v.stride[2] + std::int64_t(d) * v.stride[3];
          const auto* e = base + off * static_cast<std::int64_t>(es);
          out.insert(out.end(), e, e + es);
        }
  return out;
}

std::vector<hsize_t> dims_of(const StridedView& v) {
  return {hsize_t(v.shape[0]), hsize_t(v.shape[1]), hsize_t(v.shape[2]), hsize_t(v.shape[3])};
}

void input(const Writer& w, hid_t group, const std::string& where, const char* name, DType t,
           const GuardedBuffer& g, const std::vector<hsize_t>& dims) {
  const auto bytes = logical(g, dims);
  switch (t) {
    case DType::f64:
      return w.dataset(group, where, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, dims, bytes.data(),
                       nullptr);
    case DType::f32:
      return w.dataset(group, where, name, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, dims, bytes.data(),
                       nullptr);
    case DType::f16:
    case DType::bf16:
      return w.dataset(group, where, name, H5T_STD_U16LE, H5T_NATIVE_UINT16, dims, bytes.data(),
                       std::string(dtype_name(t)).c_str());
  }
}

void write_case(const Writer& w, hid_t sdpa, const CaseToWrite& cw) {
  const Problem& p = cw.c->problem;
  const std::string id = format_case_id(*cw.c);
  const std::string where = "/sdpa/" + id;
  Id g(H5Gcreate2(sdpa, id.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  w.check_id(g.get(), "group " + where);
  input(w, g.get(), where, "q", p.dtype, cw.inputs->q, dims_of(cw.inputs->q.view()));
  input(w, g.get(), where, "k", p.dtype, cw.inputs->k, dims_of(cw.inputs->k.view()));
  input(w, g.get(), where, "v", p.dtype, cw.inputs->v, dims_of(cw.inputs->v.view()));
  if (cw.inputs->mask) {
    std::vector<hsize_t> dims = dims_of(cw.inputs->mask->view());
    for (int d = 0; d < 4; ++d) {
      if (p.mask_broadcast & (1u << d)) dims[static_cast<std::size_t>(d)] = 1;
    }
    if (p.mask == MaskKind::boolean) {
      w.dataset(g.get(), where, "mask", H5T_STD_U8LE, H5T_NATIVE_UINT8, dims,
                logical(*cw.inputs->mask, dims).data(), nullptr);
    } else {
      input(w, g.get(), where, "mask", p.dtype, *cw.inputs->mask, dims);
    }
  }
  const auto B = hsize_t(p.batch), H = hsize_t(p.heads_q), L = hsize_t(p.len_q),
             S = hsize_t(p.len_kv), Dv = hsize_t(p.head_dim_v);
  if (cw.o)
    w.dataset(g.get(), where, "o", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {B, H, L, Dv}, cw.o->data(),
              nullptr);
  if (cw.lse)
    w.dataset(g.get(), where, "lse", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {B, H, L}, cw.lse->data(),
              nullptr);
  if (cw.weights)
    w.dataset(g.get(), where, "weights", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {B, H, L, S},
              cw.weights->data(), nullptr);
  if (p.backward) {
    if (!cw.inputs->d_out) throw std::runtime_error(where + ": a backward case without dO");
    input(w, g.get(), where, "d_out", p.dtype, *cw.inputs->d_out,
          dims_of(cw.inputs->d_out->view()));
    const auto Hkv = hsize_t(p.heads_kv), Dq = hsize_t(p.head_dim_qk);
    if (cw.dq)
      w.dataset(g.get(), where, "dq", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {B, H, L, Dq},
                cw.dq->data(), nullptr);
    if (cw.dk)
      w.dataset(g.get(), where, "dk", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {B, Hkv, S, Dq},
                cw.dk->data(), nullptr);
    if (cw.dv)
      w.dataset(g.get(), where, "dv", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {B, Hkv, S, Dv},
                cw.dv->data(), nullptr);
    if (cw.dbias && p.bias_grad) {
      // The mask's stored shape: 1 in its broadcast dimensions.
      std::vector<hsize_t> dims = {B, H, L, S};
      for (int d = 0; d < 4; ++d) {
        if (p.mask_broadcast & (1u << d)) dims[static_cast<std::size_t>(d)] = 1;
      }
      w.dataset(g.get(), where, "dbias", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, dims, cw.dbias->data(),
                nullptr);
    }
  }
}

}  // namespace

void write_golden_file(const std::string& path, const FileAttributes& attributes,
                       const std::vector<CaseToWrite>& cases) {
  const std::string tmp = path + ".tmp";
  const Writer w{path};
  {
    Id f(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    if (f.get() < 0) throw std::runtime_error(path + ": cannot create " + tmp);
    try {
      w.string_attr(f.get(), "schema", "sdpa-cts-golden");
      bool backward = false;
      for (const CaseToWrite& c : cases) backward = backward || c.c->problem.backward;
      w.int_attr(f.get(), "schema_version", backward ? 2 : 1);
      w.string_attr(f.get(), "semantics_version", "1");
      w.string_attr(f.get(), "generator", attributes.generator);
      w.string_attr(f.get(), "generator_version", attributes.generator_version);
      w.int_attr(f.get(), "precision_digits", attributes.precision_digits);
      if (!attributes.set.empty()) w.string_attr(f.get(), "set", attributes.set);
      Id sdpa(H5Gcreate2(f.get(), "sdpa", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
      w.check_id(sdpa.get(), "group /sdpa");
      for (const CaseToWrite& c : cases) write_case(w, sdpa.get(), c);
    } catch (...) {
      std::remove(tmp.c_str());
      throw;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": cannot rename " + tmp + " into place: " + ec.message());
  }
}

}  // namespace sdpa::golden
