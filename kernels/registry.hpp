// The backends of this build, in priority order (first = preferred).
//
// Each backend family (one folder under kernels/, e.g. kernels/cpu) registers itself: its
// folder has one registration file defining
//
//   void sdpa_cts_register_<family>_backends(sdpa::BackendRegistry& registry);
//
// and one CMake line, sdpa_cts_add_backend_family(...) (cmake/BackendFamily.cmake), which
// builds the folder as its own target behind the option SDPA_CTS_BACKEND_<FAMILY> and adds
// the call to the generated list of families (in family priority order). Nothing else names
// a backend: the dispatcher reads capabilities and traits (docs/KERNELS.md "Adding a
// backend").
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/backend.hpp"

namespace sdpa {

class BackendRegistry {
 public:
  // Adds a backend after those already registered. Throws std::invalid_argument when a
  // backend of the same name is registered already.
  void add(const Backend& backend);
  // Adds a backend the registry owns (backends made at run time).
  void add(std::unique_ptr<const Backend> backend);
  // Every registered backend, in priority order.
  const std::vector<const Backend*>& backends() const { return list_; }
  // The backend with this name, or nullptr.
  const Backend* find(std::string_view name) const;
  // "a, b, c": every name, for error messages.
  std::string names() const;

 private:
  std::vector<const Backend*> list_;
  std::vector<std::unique_ptr<const Backend>> owned_;
};

// The registry of this process, filled with every family compiled into the build on first
// use. Backends that need hardware this machine lacks are still listed: their supports()
// says why they decline.
BackendRegistry& backend_registry();

// backend_registry().backends().
const std::vector<const Backend*>& builtin_backends();

// The backend with this name, or nullptr.
const Backend* find_backend(std::string_view name);

// The backend with this name; throws std::invalid_argument "unknown backend 'x' (known:
// ...)" otherwise.
const Backend& find_backend_or_throw(std::string_view name);

// Names of the backend families compiled into this build, in priority order.
const std::vector<std::string>& backend_family_names();

}  // namespace sdpa
