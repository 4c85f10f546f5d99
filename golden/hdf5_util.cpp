#include "golden/hdf5_util.hpp"

#include <mutex>
#include <stdexcept>

namespace sdpa::golden::h5 {

void silence_errors() {
  static std::once_flag once;
  std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

namespace {

herr_t collect(unsigned n, const H5E_error2_t* e, void* data) {
  auto* out = static_cast<std::string*>(data);
  if (n >= 4 || !e->desc || !*e->desc) return 0;  // the outer few entries say enough
  if (!out->empty()) *out += "; ";
  *out += e->desc;
  return 0;
}

}  // namespace

std::string error_stack() {
  std::string out;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect, &out);
  H5Eclear2(H5E_DEFAULT);
  return out;
}

std::string Where::prefix() const {
  std::string s = "golden file '" + file + "'";
  if (!group.empty()) s += ": group '" + group + "'";
  return s;
}

std::string Where::message(const std::string& what, const std::string& msg) const {
  return prefix() + (what.empty() ? "" : ": " + what) + ": " + msg;
}

void fail_read(const Where& w, const std::string& what, const std::string& msg) {
  const std::string hdf5 = error_stack();
  throw std::runtime_error(w.message(what, msg) + (hdf5.empty() ? "" : " (HDF5: " + hdf5 + ")"));
}

void fail_schema(const Where& w, const std::string& what, const std::string& msg) {
  H5Eclear2(H5E_DEFAULT);
  throw std::invalid_argument(w.message(what, msg));
}

bool exists(const Where& w, hid_t group, const std::string& name) {
  const htri_t r = H5Lexists(group, name.c_str(), H5P_DEFAULT);
  if (r < 0) fail_read(w, "'" + name + "'", "cannot look up the link");
  return r > 0;
}

Handle open_group(const Where& w, hid_t parent, const std::string& name) {
  Handle g(H5Gopen2(parent, name.c_str(), H5P_DEFAULT), H5Gclose);
  if (!g.valid()) fail_read(w, "group '" + name + "'", "cannot open the group");
  return g;
}

namespace {

herr_t add_name(hid_t, const char* name, const H5L_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}

}  // namespace

std::vector<std::string> list_links(const Where& w, hid_t group) {
  std::vector<std::string> names;
  hsize_t idx = 0;
  // Iterating by name needs no creation-order index, which the files need not have.
  if (H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, &idx, add_name, &names) < 0) {
    fail_read(w, "", "cannot list the group's members");
  }
  return names;
}

namespace {

Handle open_attribute(const Where& w, hid_t obj, const std::string& obj_name,
                      const std::string& attr, bool* present) {
  const htri_t e = H5Aexists(obj, attr.c_str());
  if (e < 0) fail_read(w, obj_name + "attribute '" + attr + "'", "cannot look up the attribute");
  *present = e > 0;
  if (!*present) return {};
  Handle a(H5Aopen(obj, attr.c_str(), H5P_DEFAULT), H5Aclose);
  if (!a.valid()) fail_read(w, obj_name + "attribute '" + attr + "'", "cannot open the attribute");
  return a;
}

// Attributes must be scalars (or one-element arrays).
void check_scalar(const Where& w, hid_t a, const std::string& what) {
  Handle space(H5Aget_space(a), H5Sclose);
  const hssize_t n = space.valid() ? H5Sget_simple_extent_npoints(space.get()) : -1;
  if (n != 1) fail_schema(w, what, "expected a scalar attribute");
}

std::string label(const std::string& obj_name, const std::string& attr) {
  return (obj_name.empty() ? "" : "dataset '" + obj_name + "': ") + "attribute '" + attr + "'";
}

}  // namespace

std::optional<std::string> string_attribute(const Where& w, hid_t obj, const std::string& obj_name,
                                            const std::string& attr) {
  bool present = false;
  Handle a = open_attribute(w, obj, obj_name.empty() ? "" : "dataset '" + obj_name + "': ", attr,
                            &present);
  if (!present) return std::nullopt;
  const std::string what = label(obj_name, attr);
  check_scalar(w, a.get(), what);
  Handle type(H5Aget_type(a.get()), H5Tclose);
  if (!type.valid() || H5Tget_class(type.get()) != H5T_STRING) {
    fail_schema(w, what, "expected a string attribute");
  }
  const htri_t variable = H5Tis_variable_str(type.get());
  if (variable > 0) {
    Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.get(), H5T_VARIABLE);
    H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
    char* value = nullptr;
    if (H5Aread(a.get(), mem.get(), &value) < 0) fail_read(w, what, "cannot read the attribute");
    std::string s = value ? value : "";
    H5free_memory(value);
    return s;
  }
  const std::size_t size = H5Tget_size(type.get());
  std::string s(size, '\0');
  Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(mem.get(), size);
  H5Tset_strpad(mem.get(), H5T_STR_NULLPAD);
  H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
  if (size && H5Aread(a.get(), mem.get(), s.data()) < 0) {
    fail_read(w, what, "cannot read the attribute");
  }
  s.resize(s.find('\0') == std::string::npos ? s.size() : s.find('\0'));
  return s;
}

std::optional<std::int64_t> int_attribute(const Where& w, hid_t obj, const std::string& obj_name,
                                          const std::string& attr) {
  bool present = false;
  Handle a = open_attribute(w, obj, obj_name.empty() ? "" : "dataset '" + obj_name + "': ", attr,
                            &present);
  if (!present) return std::nullopt;
  const std::string what = label(obj_name, attr);
  check_scalar(w, a.get(), what);
  Handle type(H5Aget_type(a.get()), H5Tclose);
  if (!type.valid() || H5Tget_class(type.get()) != H5T_INTEGER) {
    fail_schema(w, what, "expected an integer attribute");
  }
  std::int64_t v = 0;
  if (H5Aread(a.get(), H5T_NATIVE_INT64, &v) < 0) fail_read(w, what, "cannot read the attribute");
  return v;
}

std::optional<double> float_attribute(const Where& w, hid_t obj, const std::string& obj_name,
                                      const std::string& attr) {
  bool present = false;
  Handle a = open_attribute(w, obj, obj_name.empty() ? "" : "dataset '" + obj_name + "': ", attr,
                            &present);
  if (!present) return std::nullopt;
  const std::string what = label(obj_name, attr);
  check_scalar(w, a.get(), what);
  Handle type(H5Aget_type(a.get()), H5Tclose);
  const H5T_class_t cls = type.valid() ? H5Tget_class(type.get()) : H5T_NO_CLASS;
  if (cls != H5T_FLOAT && cls != H5T_INTEGER) fail_schema(w, what, "expected a number");
  double v = 0;
  if (H5Aread(a.get(), H5T_NATIVE_DOUBLE, &v) < 0) fail_read(w, what, "cannot read the attribute");
  return v;
}

Handle open_dataset(const Where& w, hid_t group, const std::string& name) {
  Handle d(H5Dopen2(group, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.valid()) fail_read(w, "dataset '" + name + "'", "cannot open the dataset");
  return d;
}

DatasetShape dataset_shape(const Where& w, hid_t dataset, const std::string& name) {
  const std::string what = "dataset '" + name + "'";
  DatasetShape s;
  Handle type(H5Dget_type(dataset), H5Tclose);
  Handle space(H5Dget_space(dataset), H5Sclose);
  if (!type.valid() || !space.valid()) fail_read(w, what, "cannot read the type or the shape");
  switch (H5Tget_class(type.get())) {
    case H5T_FLOAT:
      s.kind = Kind::floating;
      break;
    case H5T_INTEGER:
      s.kind = H5Tget_sign(type.get()) == H5T_SGN_NONE ? Kind::unsigned_int : Kind::signed_int;
      break;
    default:
      s.kind = Kind::other;
  }
  s.size = H5Tget_size(type.get());
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) fail_read(w, what, "cannot read the shape");
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (rank > 0 && H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0) {
    fail_read(w, what, "cannot read the shape");
  }
  for (hsize_t d : dims) s.dims.push_back(static_cast<std::int64_t>(d));
  return s;
}

void read(const Where& w, hid_t dataset, const std::string& name, hid_t mem_type, void* out) {
  if (H5Dread(dataset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0) {
    fail_read(w, "dataset '" + name + "'",
              "cannot read the data (truncated or corrupt file, or an unreadable type)");
  }
}

std::string dims_text(const std::vector<std::int64_t>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

}  // namespace sdpa::golden::h5
