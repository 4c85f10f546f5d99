#include "golden/golden_file.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>

#include "golden/hdf5_util.hpp"
#include "golden/isolated_read.hpp"

namespace sdpa::golden {

using h5::Handle;
using h5::Where;

namespace {

constexpr const char* kSchemaName = "sdpa-cts-golden";

std::vector<std::int64_t> shape_of(const StridedView& v) {
  return {v.shape.begin(), v.shape.end()};
}

std::int64_t product(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

// Checks the stored type of an element-type dataset (inputs, additive mask) and reads it
// as the element type's bytes, row-major over `dims`.
std::vector<unsigned char> read_elements(const Where& w, hid_t group, const std::string& name,
                                         DType dtype, const std::vector<std::int64_t>& dims) {
  const std::string what = "dataset '" + name + "'";
  if (!h5::exists(w, group, name)) h5::fail_schema(w, what, "missing");
  Handle ds = h5::open_dataset(w, group, name);
  const h5::DatasetShape s = h5::dataset_shape(w, ds.get(), name);
  if (s.dims != dims) {
    h5::fail_schema(w, what,
                    "expected shape " + h5::dims_text(dims) + ", got " + h5::dims_text(s.dims));
  }
  const auto attr = h5::string_attribute(w, ds.get(), name, "dtype");
  const std::string want = std::string(dtype_name(dtype));
  if (attr && *attr != want) {
    h5::fail_schema(w, what, "attribute dtype is '" + *attr + "' but the case is " + want);
  }
  hid_t mem = -1;
  switch (dtype) {
    case DType::f64:
    case DType::f32:
      if (s.kind != h5::Kind::floating || s.size != dtype_size(dtype)) {
        h5::fail_schema(w, what,
                        "expected " + want + " (an IEEE float of " +
                            std::to_string(dtype_size(dtype)) + " bytes), got a type of " +
                            std::to_string(s.size) + " bytes" +
                            (s.kind == h5::Kind::floating ? "" : " that is not a float"));
      }
      mem = dtype == DType::f64 ? H5T_NATIVE_DOUBLE : H5T_NATIVE_FLOAT;
      break;
    case DType::f16:
    case DType::bf16:
      if (s.kind != h5::Kind::unsigned_int || s.size != 2) {
        h5::fail_schema(w, what,
                        "expected " + want + " stored as raw uint16 bit patterns, got a type of " +
                            std::to_string(s.size) + " bytes" +
                            (s.kind == h5::Kind::unsigned_int ? "" : " that is not unsigned"));
      }
      if (!attr) {
        h5::fail_schema(w, what, "uint16 data need the attribute dtype = '" + want + "'");
      }
      mem = H5T_NATIVE_UINT16;
      break;
  }
  std::vector<unsigned char> bytes(static_cast<std::size_t>(product(dims)) * dtype_size(dtype));
  if (!bytes.empty()) h5::read(w, ds.get(), name, mem, bytes.data());
  return bytes;
}

std::vector<double> read_f64(const Where& w, hid_t group, const std::string& name,
                             const std::vector<std::int64_t>& dims) {
  const std::string what = "dataset '" + name + "'";
  if (!h5::exists(w, group, name)) h5::fail_schema(w, what, "missing");
  Handle ds = h5::open_dataset(w, group, name);
  const h5::DatasetShape s = h5::dataset_shape(w, ds.get(), name);
  if (s.kind != h5::Kind::floating) h5::fail_schema(w, what, "expected a float dataset (f64)");
  if (s.dims != dims) {
    h5::fail_schema(w, what,
                    "expected shape " + h5::dims_text(dims) + ", got " + h5::dims_text(s.dims));
  }
  std::vector<double> out(static_cast<std::size_t>(product(dims)));
  if (!out.empty()) h5::read(w, ds.get(), name, H5T_NATIVE_DOUBLE, out.data());
  return out;
}

// Optional int32 metadata (seqlens, cu_seqlens): when present they must agree with the ID.
void check_lengths(const Where& w, hid_t group, const std::string& name,
                   const std::vector<std::int64_t>& want) {
  if (!h5::exists(w, group, name)) return;
  const std::string what = "dataset '" + name + "'";
  Handle ds = h5::open_dataset(w, group, name);
  const h5::DatasetShape s = h5::dataset_shape(w, ds.get(), name);
  if (s.kind != h5::Kind::signed_int && s.kind != h5::Kind::unsigned_int) {
    h5::fail_schema(w, what, "expected integers");
  }
  const std::vector<std::int64_t> dims = {static_cast<std::int64_t>(want.size())};
  if (s.dims != dims) {
    h5::fail_schema(w, what,
                    "expected shape " + h5::dims_text(dims) + ", got " + h5::dims_text(s.dims));
  }
  std::vector<std::int64_t> got(want.size());
  if (!got.empty()) h5::read(w, ds.get(), name, H5T_NATIVE_INT64, got.data());
  if (got != want) {
    h5::fail_schema(
        w, what, "holds " + h5::dims_text(got) + " but the case ID gives " + h5::dims_text(want));
  }
}

// Puts row-major logical elements into a guarded buffer laid out as `view`. Elements that
// share memory (stride 0) must hold identical bytes.
GuardedBuffer place(const Where& w, const std::string& name, const StridedView& view,
                    std::int64_t base_offset, std::size_t element_size,
                    const std::vector<unsigned char>& logical) {
  GuardedBuffer buf(name, element_size, view, base_offset);
  auto* dst = static_cast<unsigned char*>(buf.data());
  const std::int64_t extent = view_extent(view);
  std::vector<std::uint8_t> written(static_cast<std::size_t>(std::max<std::int64_t>(extent, 0)), 0);
  std::size_t n = 0;
  const auto& sh = view.shape;
  const auto& st = view.stride;
  for (std::int64_t a = 0; a < sh[0]; ++a)
    for (std::int64_t b = 0; b < sh[1]; ++b)
      for (std::int64_t c = 0; c < sh[2]; ++c)
        for (std::int64_t d = 0; d < sh[3]; ++d, ++n) {
          const std::int64_t off = a * st[0] + b * st[1] + c * st[2] + d * st[3];
          const unsigned char* src = logical.data() + n * element_size;
          unsigned char* at = dst + off * static_cast<std::int64_t>(element_size);
          if (written[static_cast<std::size_t>(off)]) {
            if (std::memcmp(at, src, element_size) != 0) {
              h5::fail_schema(w, "dataset '" + name + "'",
                              "elements that share memory through a stride of 0 differ (at [" +
                                  std::to_string(a) + ", " + std::to_string(b) + ", " +
                                  std::to_string(c) + ", " + std::to_string(d) + "])");
            }
            continue;
          }
          std::memcpy(at, src, element_size);
          written[static_cast<std::size_t>(off)] = 1;
        }
  buf.snapshot();
  return buf;
}

}  // namespace

// An error the isolated read met loading one case: thrown again, without libhdf5, when the
// case is loaded in the caller's process.
struct RecordedError {
  bool invalid_argument;  // std::invalid_argument, else std::runtime_error
  std::string message;    // what() of the error
  [[noreturn]] void raise() const {
    if (invalid_argument) throw std::invalid_argument(message);
    throw std::runtime_error(message);
  }
};

// Which load failed in the child: an SDPA case with outputs optional or required, or an MHA
// case. Keys of GoldenFile::Impl::failed.
enum class LoadKind : char { sdpa_optional = 'o', sdpa_required = 'r', mha = 'm' };

struct GoldenFile::Impl {
  FileInfo info;
  Handle file;
  std::vector<std::string> ids;
  std::vector<std::string> mha_names;
  std::map<std::pair<LoadKind, std::string>, RecordedError> failed;  // by the isolated read

  void raise_if_failed(LoadKind kind, const std::string& name) const {
    const auto it = failed.find({kind, name});
    if (it != failed.end()) it->second.raise();
  }
};

namespace {

// The child's report of the loads that failed: per load, the kind byte, the error kind byte
// ('I' invalid_argument, 'R' runtime_error), and the name and message, each as
// "<length>:<bytes>".
void append_field(std::string& out, const std::string& field) {
  out += std::to_string(field.size());
  out += ':';
  out += field;
}

std::string read_field(const std::string& in, std::size_t& at) {
  const std::size_t colon = in.find(':', at);
  if (colon == std::string::npos) throw std::runtime_error("a malformed report of the child");
  const std::size_t n = std::stoull(in.substr(at, colon - at));
  if (colon + 1 + n > in.size()) throw std::runtime_error("a malformed report of the child");
  std::string field = in.substr(colon + 1, n);
  at = colon + 1 + n;
  return field;
}

std::string encode_failures(const std::map<std::pair<LoadKind, std::string>, RecordedError>& m) {
  std::string out;
  for (const auto& [key, error] : m) {
    out += static_cast<char>(key.first);
    out += error.invalid_argument ? 'I' : 'R';
    append_field(out, key.second);
    append_field(out, error.message);
  }
  return out;
}

std::map<std::pair<LoadKind, std::string>, RecordedError> decode_failures(const std::string& in) {
  std::map<std::pair<LoadKind, std::string>, RecordedError> m;
  std::size_t at = 0;
  while (at < in.size()) {
    if (at + 2 > in.size()) throw std::runtime_error("a malformed report of the child");
    const auto kind = static_cast<LoadKind>(in[at]);
    const bool invalid_argument = in[at + 1] == 'I';
    at += 2;
    std::string name = read_field(in, at);
    std::string message = read_field(in, at);
    m[{kind, std::move(name)}] = RecordedError{invalid_argument, std::move(message)};
  }
  return m;
}

// Runs `load`; records its error under `key`.
template <class Load>
void try_load(std::map<std::pair<LoadKind, std::string>, RecordedError>& failed, LoadKind kind,
              const std::string& name, Load load) {
  try {
    load();
  } catch (const std::invalid_argument& e) {
    failed[{kind, name}] = RecordedError{true, e.what()};
  } catch (const std::exception& e) {
    failed[{kind, name}] = RecordedError{false, e.what()};
  }
}

// The child's report for a file this process has read already, as long as the file is
// unchanged (same size and modification time): a conformance worker opens the same golden
// file for each of its cases, and one child read of the whole file is enough.
std::string checked_once(const std::string& path, const std::function<std::string()>& check) {
  static std::mutex mutex;
  static std::map<std::string, std::string> reports;
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  const auto time = std::filesystem::last_write_time(path, ec);
  std::string key = std::filesystem::absolute(path, ec).string();
  key += '\n' + std::to_string(size) + '\n' + std::to_string(time.time_since_epoch().count());
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = reports.find(key); it != reports.end()) return it->second;
  }
  std::string report = check();
  const std::lock_guard<std::mutex> lock(mutex);
  reports[key] = report;
  return report;
}

}  // namespace

GoldenFile::GoldenFile(const std::string& path, Reading reading) : impl_(std::make_unique<Impl>()) {
  h5::silence_errors();
  const Where w{path, ""};
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw std::runtime_error(w.prefix() + ": no such file");
  }
  if (std::filesystem::is_directory(path, ec)) {
    throw std::runtime_error(w.prefix() + ": is a directory, not a file");
  }
  if (reading == Reading::isolated) {
    // Every load this object can later make is made once in the child, which reports the
    // ones that failed; a failure of the file itself is rethrown here.
    const std::string report = checked_once(path, [&] {
      return read_in_child(path, [&] {
        const GoldenFile file(path, Reading::in_process);
        std::map<std::pair<LoadKind, std::string>, RecordedError> failed;
        for (const auto& id : file.case_ids()) {
          try_load(failed, LoadKind::sdpa_optional, id,
                   [&] { (void)file.load(id, Outputs::optional); });
          try_load(failed, LoadKind::sdpa_required, id, [&] { (void)file.load(id); });
        }
        for (const auto& name : file.mha_case_names()) {
          try_load(failed, LoadKind::mha, name, [&] { (void)file.load_mha(name); });
        }
        return encode_failures(failed);
      });
    });
    try {
      impl_->failed = decode_failures(report);
    } catch (const std::exception& e) {
      throw std::runtime_error(w.prefix() + ": " + e.what());
    }
  }
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  if (is_hdf5 <= 0) {
    h5::fail_read(w, "", "not an HDF5 file (no HDF5 signature: corrupt, or another format)");
  }
  impl_->file = Handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!impl_->file.valid()) {
    h5::fail_read(w, "", "cannot open the HDF5 file (truncated or corrupt?)");
  }
  const hid_t root = impl_->file.get();
  FileInfo& fi = impl_->info;
  fi.path = path;
  const auto schema = h5::string_attribute(w, root, "", "schema");
  if (!schema || *schema != kSchemaName) {
    h5::fail_schema(w, "attribute 'schema'",
                    schema ? "is '" + *schema + "', expected '" + kSchemaName + "'"
                           : std::string("missing: not an sdpa-cts golden file (expected '") +
                                 kSchemaName + "')");
  }
  const auto version = h5::int_attribute(w, root, "", "schema_version");
  if (!version) h5::fail_schema(w, "attribute 'schema_version'", "missing");
  if (*version < 1 || *version > kSchemaVersion) {
    h5::fail_schema(w, "attribute 'schema_version'",
                    "the file has schema version " + std::to_string(*version) +
                        ", this loader reads versions 1 to " + std::to_string(kSchemaVersion));
  }
  fi.schema_version = *version;
  const auto sem = h5::string_attribute(w, root, "", "semantics_version");
  if (!sem) h5::fail_schema(w, "attribute 'semantics_version'", "missing");
  if (*sem != kSemanticsVersion) {
    h5::fail_schema(w, "attribute 'semantics_version'",
                    "the expected values follow semantics version '" + *sem +
                        "', this build implements '" + kSemanticsVersion + "'");
  }
  fi.semantics_version = *sem;
  for (auto [field, name] : {std::pair{&fi.generator, "generator"},
                             std::pair{&fi.generator_version, "generator_version"}}) {
    const auto v = h5::string_attribute(w, root, "", name);
    if (!v) h5::fail_schema(w, std::string("attribute '") + name + "'", "missing");
    *field = *v;
  }
  const auto digits = h5::int_attribute(w, root, "", "precision_digits");
  if (!digits) h5::fail_schema(w, "attribute 'precision_digits'", "missing");
  if (*digits < 1) h5::fail_schema(w, "attribute 'precision_digits'", "must be >= 1");
  fi.precision_digits = *digits;
  fi.set = h5::string_attribute(w, root, "", "set").value_or("");
  if (h5::exists(w, root, "sdpa")) {
    Handle g = h5::open_group(w, root, "sdpa");
    impl_->ids = h5::list_links(Where{path, "/sdpa"}, g.get());
  }
  if (h5::exists(w, root, "mha")) {
    Handle g = h5::open_group(w, root, "mha");
    impl_->mha_names = h5::list_links(Where{path, "/mha"}, g.get());
  }
}

GoldenFile::~GoldenFile() = default;
GoldenFile::GoldenFile(GoldenFile&&) noexcept = default;
GoldenFile& GoldenFile::operator=(GoldenFile&&) noexcept = default;

const FileInfo& GoldenFile::info() const { return impl_->info; }
const std::vector<std::string>& GoldenFile::case_ids() const { return impl_->ids; }
const std::vector<std::string>& GoldenFile::mha_case_names() const { return impl_->mha_names; }

GoldenCase GoldenFile::load(const std::string& id, Outputs outputs) const {
  const std::string& path = impl_->info.path;
  if (!std::binary_search(impl_->ids.begin(), impl_->ids.end(), id)) {
    throw std::invalid_argument(Where{path, ""}.prefix() + ": no case '" + id + "' under /sdpa");
  }
  impl_->raise_if_failed(
      outputs == Outputs::optional ? LoadKind::sdpa_optional : LoadKind::sdpa_required, id);
  const Where w{path, "/sdpa/" + id};
  // The group name is the canonical case ID: parse it, and insist on the canonical form.
  auto parsed = parse_case_id(id);
  if (auto* e = std::get_if<CaseIdError>(&parsed)) {
    h5::fail_schema(w, "", "the group name is not a valid case ID: " + e->message);
  }
  Case c = std::get<Case>(std::move(parsed));
  if (const std::string canonical = format_case_id(c); canonical != id) {
    h5::fail_schema(w, "", "the group name is not the canonical case ID '" + canonical + "'");
  }
  const Problem& p = c.problem;
  if (auto r = validate(p); !r.empty()) {
    h5::fail_schema(w, "", "the case ID describes an invalid problem: " + r);
  }
  if (p.backward && info().schema_version < 2) {
    h5::fail_schema(w, "",
                    "the case ID asks for the backward (bwd), which schema version " +
                        std::to_string(info().schema_version) +
                        " cannot hold (dO and the gradients are version 2)");
  }
  Handle sdpa = h5::open_group(Where{path, ""}, impl_->file.get(), "sdpa");
  Handle g = h5::open_group(w, sdpa.get(), id);

  const std::size_t es = dtype_size(p.dtype);
  auto input = [&](const char* name, const StridedView& view, std::int64_t base) {
    auto bytes = read_elements(w, g.get(), name, p.dtype, shape_of(view));
    return place(w, name, view, base, es, bytes);
  };
  GuardedBuffer q = input("q", q_view(p), p.q.base_offset);
  GuardedBuffer k = input("k", k_view(p), p.k.base_offset);
  GuardedBuffer v = input("v", v_view(p), p.v.base_offset);

  std::optional<GuardedBuffer> mask;
  // The mask's stored shape: 1 in broadcast dimensions. With the mask view's strides (0 there)
  // the memory layout is the mask view's own; d bias has the same shape.
  StridedView stored = mask_view(p);
  for (int d = 0; d < 4; ++d) {
    if (p.mask_broadcast & (1u << d)) stored.shape[d] = 1;
  }
  const std::vector<std::int64_t> mask_dims = shape_of(stored);
  if (p.mask != MaskKind::none) {
    const std::vector<std::int64_t>& dims = mask_dims;
    if (p.mask == MaskKind::boolean) {
      const std::string what = "dataset 'mask'";
      if (!h5::exists(w, g.get(), "mask")) h5::fail_schema(w, what, "missing");
      Handle ds = h5::open_dataset(w, g.get(), "mask");
      const h5::DatasetShape s = h5::dataset_shape(w, ds.get(), "mask");
      if ((s.kind != h5::Kind::unsigned_int && s.kind != h5::Kind::signed_int) || s.size != 1) {
        h5::fail_schema(w, what, "a bool mask is stored as uint8 (0 = masked, 1 = attend)");
      }
      if (s.dims != dims) {
        h5::fail_schema(w, what,
                        "expected shape " + h5::dims_text(dims) + ", got " + h5::dims_text(s.dims));
      }
      std::vector<unsigned char> bytes(static_cast<std::size_t>(product(dims)));
      if (!bytes.empty()) h5::read(w, ds.get(), "mask", H5T_NATIVE_UINT8, bytes.data());
      for (std::size_t i = 0; i < bytes.size(); ++i) {
        if (bytes[i] > 1) {
          h5::fail_schema(w, what,
                          "bool mask value " + std::to_string(bytes[i]) + " at flat index " +
                              std::to_string(i) + " (must be 0 or 1)");
        }
      }
      mask.emplace(place(w, "mask", stored, 0, 1, bytes));
    } else {
      auto bytes = read_elements(w, g.get(), "mask", p.dtype, dims);
      mask.emplace(place(w, "mask", stored, 0, es, bytes));
    }
  } else if (h5::exists(w, g.get(), "mask")) {
    h5::fail_schema(w, "dataset 'mask'", "present, but the case ID has no mask");
  }

  if (!p.seqlens_q.empty()) check_lengths(w, g.get(), "seqlens_q", p.seqlens_q);
  if (!p.seqlens_kv.empty()) check_lengths(w, g.get(), "seqlens_kv", p.seqlens_kv);
  if (p.packed) {
    check_lengths(w, g.get(), "cu_seqlens_q", cu_seqlens_q(p));
    check_lengths(w, g.get(), "cu_seqlens_kv", cu_seqlens_kv(p));
  }

  const std::int64_t B = p.batch, H = p.heads_q, L = p.len_q, S = p.len_kv, Dv = p.head_dim_v;
  // A results file (`sdpa-cts cases export`) holds outputs only for the cases filled in.
  std::vector<double> o, lse, weights;
  const bool optional = outputs == Outputs::optional;
  const bool has_o = !optional || h5::exists(w, g.get(), "o");
  const bool has_lse = !optional || h5::exists(w, g.get(), "lse");
  if (has_o) o = read_f64(w, g.get(), "o", {B, H, L, Dv});
  if (has_lse) lse = read_f64(w, g.get(), "lse", {B, H, L});
  const bool has_weights = h5::exists(w, g.get(), "weights");
  if (p.want_weights && !has_weights && !optional) {
    h5::fail_schema(w, "dataset 'weights'", "missing (the case ID asks for attnw)");
  }
  if (has_weights && !p.want_weights) {
    h5::fail_schema(w, "dataset 'weights'", "present, but the case ID has no attnw");
  }
  if (has_weights) weights = read_f64(w, g.get(), "weights", {B, H, L, S});

  // The backward (schema version 2): dO in O's layout, the exact gradients in f64.
  std::optional<GuardedBuffer> d_out;
  std::vector<double> dq, dk, dv, dbias;
  bool has_gradients = false;
  if (p.bias_grad && (!optional || h5::exists(w, g.get(), "dbias"))) {
    dbias = read_f64(w, g.get(), "dbias", mask_dims);
  } else if (!p.bias_grad && h5::exists(w, g.get(), "dbias")) {
    h5::fail_schema(w, "dataset 'dbias'", "present, but the case ID has no dbias");
  }
  if (p.backward) {
    d_out.emplace(input("d_out", o_view(p), p.o.base_offset));
    has_gradients = !optional || h5::exists(w, g.get(), "dq");
    if (has_gradients) {
      const std::int64_t Hkv = p.heads_kv, Dq = p.head_dim_qk;
      dq = read_f64(w, g.get(), "dq", {B, H, L, Dq});
      dk = read_f64(w, g.get(), "dk", {B, Hkv, S, Dq});
      dv = read_f64(w, g.get(), "dv", {B, Hkv, S, Dv});
    }
  } else {
    for (const char* name : {"d_out", "dq", "dk", "dv"}) {
      if (h5::exists(w, g.get(), name)) {
        h5::fail_schema(w, std::string("dataset '") + name + "'",
                        "present, but the case ID has no bwd");
      }
    }
  }
  GoldenCase out{
      id,
      std::move(c),
      InputBuffers{std::move(q), std::move(k), std::move(v), std::move(mask), std::move(d_out)},
      std::move(o),
      std::move(lse),
      std::move(weights),
      has_o,
      has_lse,
      has_weights,
      info().precision_digits,
      h5::string_attribute(w, g.get(), "", "family").value_or(""),
      h5::string_attribute(w, g.get(), "", "data").value_or(""),
      h5::string_attribute(w, g.get(), "", "note").value_or(""),
      std::move(dq),
      std::move(dk),
      std::move(dv),
      has_gradients,
      std::move(dbias)};
  return out;
}

namespace {

using reference::MhaMaskKind;

std::int64_t required_int(const Where& w, hid_t g, const char* name) {
  const auto v = h5::int_attribute(w, g, "", name);
  if (!v) h5::fail_schema(w, std::string("attribute '") + name + "'", "missing");
  return *v;
}

bool required_flag(const Where& w, hid_t g, const char* name) {
  const std::int64_t v = required_int(w, g, name);
  if (v != 0 && v != 1) {
    h5::fail_schema(w, std::string("attribute '") + name + "'",
                    "must be 0 or 1, got " + std::to_string(v));
  }
  return v == 1;
}

MhaMaskKind mask_kind(const Where& w, hid_t g, const char* name) {
  const auto v = h5::string_attribute(w, g, "", name);
  if (!v) h5::fail_schema(w, std::string("attribute '") + name + "'", "missing");
  if (*v == "none") return MhaMaskKind::none;
  if (*v == "bool") return MhaMaskKind::boolean;
  if (*v == "float") return MhaMaskKind::floating;
  h5::fail_schema(w, std::string("attribute '") + name + "'",
                  "expected 'none', 'bool' or 'float', got '" + *v + "'");
}

// An MHA array: required iff `used`, of the given shape; bool masks are uint8 0 / 1.
std::vector<double> mha_array(const Where& w, hid_t g, const std::string& name, bool used,
                              const std::vector<std::int64_t>& dims, bool boolean = false) {
  const std::string what = "dataset '" + name + "'";
  const bool present = h5::exists(w, g, name);
  if (!used) {
    if (present) h5::fail_schema(w, what, "present, but the problem does not use it");
    return {};
  }
  if (!present) h5::fail_schema(w, what, "missing");
  if (!boolean) return read_f64(w, g, name, dims);
  Handle ds = h5::open_dataset(w, g, name);
  const h5::DatasetShape s = h5::dataset_shape(w, ds.get(), name);
  if (s.kind != h5::Kind::unsigned_int || s.size != 1) {
    h5::fail_schema(w, what, "a bool mask is stored as uint8 (1 = ignore, MHA convention)");
  }
  if (s.dims != dims) {
    h5::fail_schema(w, what,
                    "expected shape " + h5::dims_text(dims) + ", got " + h5::dims_text(s.dims));
  }
  std::vector<std::uint8_t> raw(static_cast<std::size_t>(product(dims)));
  if (!raw.empty()) h5::read(w, ds.get(), name, H5T_NATIVE_UINT8, raw.data());
  std::vector<double> out(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] > 1) {
      h5::fail_schema(w, what,
                      "bool mask value " + std::to_string(raw[i]) + " at flat index " +
                          std::to_string(i) + " (must be 0 or 1)");
    }
    out[i] = raw[i];
  }
  return out;
}

}  // namespace

MhaGoldenCase GoldenFile::load_mha(const std::string& name) const {
  const std::string& path = impl_->info.path;
  if (!std::binary_search(impl_->mha_names.begin(), impl_->mha_names.end(), name)) {
    throw std::invalid_argument(Where{path, ""}.prefix() + ": no case '" + name + "' under /mha");
  }
  impl_->raise_if_failed(LoadKind::mha, name);
  const Where w{path, "/mha/" + name};
  Handle mha = h5::open_group(Where{path, ""}, impl_->file.get(), "mha");
  Handle grp = h5::open_group(w, mha.get(), name);
  const hid_t g = grp.get();
  MhaGoldenCase c;
  c.name = name;
  reference::MhaProblem& p = c.problem;
  p.embed_dim = required_int(w, g, "embed_dim");
  p.num_heads = required_int(w, g, "num_heads");
  p.kdim = required_int(w, g, "kdim");
  p.vdim = required_int(w, g, "vdim");
  p.use_separate_proj_weight = required_flag(w, g, "use_separate_proj_weight");
  p.batch = required_int(w, g, "batch");
  p.len_q = required_int(w, g, "len_q");
  p.len_kv = required_int(w, g, "len_kv");
  p.batch_first = required_flag(w, g, "batch_first");
  p.bias = required_flag(w, g, "bias");
  p.add_bias_kv = required_flag(w, g, "add_bias_kv");
  p.add_zero_attn = required_flag(w, g, "add_zero_attn");
  p.key_padding_mask = mask_kind(w, g, "key_padding_mask");
  p.attn_mask = mask_kind(w, g, "attn_mask");
  p.attn_mask_rank = static_cast<int>(required_int(w, g, "attn_mask_rank"));
  p.need_weights = required_flag(w, g, "need_weights");
  p.average_attn_weights = required_flag(w, g, "average_attn_weights");
  p.is_causal = required_flag(w, g, "is_causal");
  p.dropout_p = h5::float_attribute(w, g, "", "dropout_p").value_or(0.0);
  p.dropout_seed =
      static_cast<std::uint64_t>(h5::int_attribute(w, g, "", "dropout_seed").value_or(0));
  p.dropout_offset =
      static_cast<std::uint64_t>(h5::int_attribute(w, g, "", "dropout_offset").value_or(0));
  if (auto r = reference::validate(p); !r.empty()) {
    h5::fail_schema(w, "", "the attributes describe an invalid MHA problem: " + r);
  }
  const std::int64_t E = p.embed_dim, B = p.batch, L = p.len_q, S = p.len_kv, H = p.num_heads;
  const std::int64_t kd = *p.kdim, vd = *p.vdim, Sp = reference::attended_len_kv(p);
  const bool sep = p.use_separate_proj_weight;
  auto seq = [&](std::int64_t n, std::int64_t f) {
    return p.batch_first ? std::vector<std::int64_t>{B, n, f} : std::vector<std::int64_t>{n, B, f};
  };
  reference::MhaInputs& in = c.inputs;
  in.query = mha_array(w, g, "query", true, seq(L, E));
  in.key = mha_array(w, g, "key", true, seq(S, kd));
  in.value = mha_array(w, g, "value", true, seq(S, vd));
  in.in_proj_weight = mha_array(w, g, "in_proj_weight", !sep, {3 * E, E});
  in.q_proj_weight = mha_array(w, g, "q_proj_weight", sep, {E, E});
  in.k_proj_weight = mha_array(w, g, "k_proj_weight", sep, {E, kd});
  in.v_proj_weight = mha_array(w, g, "v_proj_weight", sep, {E, vd});
  in.in_proj_bias = mha_array(w, g, "in_proj_bias", p.bias, {3 * E});
  in.bias_k = mha_array(w, g, "bias_k", p.add_bias_kv, {E});
  in.bias_v = mha_array(w, g, "bias_v", p.add_bias_kv, {E});
  in.out_proj_weight = mha_array(w, g, "out_proj_weight", true, {E, E});
  in.out_proj_bias = mha_array(w, g, "out_proj_bias", p.bias, {E});
  in.key_padding_mask = mha_array(w, g, "key_padding_mask", p.key_padding_mask != MhaMaskKind::none,
                                  {B, S}, p.key_padding_mask == MhaMaskKind::boolean);
  const std::vector<std::int64_t> am_dims = p.attn_mask_rank == 3
                                                ? std::vector<std::int64_t>{B * H, L, S}
                                                : std::vector<std::int64_t>{L, S};
  in.attn_mask = mha_array(w, g, "attn_mask", p.attn_mask != MhaMaskKind::none, am_dims,
                           p.attn_mask == MhaMaskKind::boolean);
  c.out = mha_array(w, g, "out", true, seq(L, E));
  c.weights = mha_array(w, g, "weights", p.need_weights,
                        p.average_attn_weights ? std::vector<std::int64_t>{B, L, Sp}
                                               : std::vector<std::int64_t>{B, H, L, Sp});
  c.family = h5::string_attribute(w, g, "", "family").value_or("");
  c.note = h5::string_attribute(w, g, "", "note").value_or("");
  return c;
}

}  // namespace sdpa::golden
