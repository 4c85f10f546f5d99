// Small RAII and reading helpers over the HDF5 C API, shared by the golden loaders. Every
// failure throws with a message naming the file, the object and HDF5's own reason.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sdpa::golden::h5 {

// Switches off HDF5's automatic error printing (once per process).
void silence_errors();

// HDF5's current error stack as one line ("" when empty); clears the stack.
std::string error_stack();

// An owned HDF5 identifier, closed with the matching H5*close.
class Handle {
 public:
  Handle() = default;
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Handle() { reset(); }
  Handle(Handle&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = H5I_INVALID_HID; }
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      close_ = o.close_;
      o.id_ = H5I_INVALID_HID;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset() {
    if (id_ >= 0 && close_) close_(id_);
    id_ = H5I_INVALID_HID;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  herr_t (*close_)(hid_t) = nullptr;
};

// Where an object lives, for messages: "golden file 'F': group 'G'".
struct Where {
  std::string file;   // path of the file
  std::string group;  // HDF5 path of the group, e.g. "/sdpa/<id>"; "" for the file itself
  std::string prefix() const;
  // "golden file 'F': group 'G': <what>: <message>" (what may be empty).
  std::string message(const std::string& what, const std::string& msg) const;
};

// Throws std::runtime_error (read failures) with HDF5's reason appended.
[[noreturn]] void fail_read(const Where& w, const std::string& what, const std::string& msg);
// Throws std::invalid_argument (schema violations).
[[noreturn]] void fail_schema(const Where& w, const std::string& what, const std::string& msg);

// Whether a link of that name exists in the group.
bool exists(const Where& w, hid_t group, const std::string& name);
Handle open_group(const Where& w, hid_t parent, const std::string& name);
// Names of the links in a group, in increasing byte order.
std::vector<std::string> list_links(const Where& w, hid_t group);

// Attributes: nullopt when absent; a present attribute of the wrong kind is an error.
std::optional<std::string> string_attribute(const Where& w, hid_t obj, const std::string& obj_name,
                                            const std::string& attr);
std::optional<std::int64_t> int_attribute(const Where& w, hid_t obj, const std::string& obj_name,
                                          const std::string& attr);
std::optional<double> float_attribute(const Where& w, hid_t obj, const std::string& obj_name,
                                      const std::string& attr);

// The element kind of a stored dataset.
enum class Kind { floating, signed_int, unsigned_int, other };
struct DatasetShape {
  Kind kind = Kind::other;         // class of the file type
  std::size_t size = 0;            // bytes per element in the file
  std::vector<std::int64_t> dims;  // extents
};
DatasetShape dataset_shape(const Where& w, hid_t dataset, const std::string& name);
Handle open_dataset(const Where& w, hid_t group, const std::string& name);
// Reads a whole dataset converted to the memory type into `out` (sized by the caller).
void read(const Where& w, hid_t dataset, const std::string& name, hid_t mem_type, void* out);

// "[2, 3, 4]".
std::string dims_text(const std::vector<std::int64_t>& dims);

}  // namespace sdpa::golden::h5
