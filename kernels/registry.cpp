#include "kernels/registry.hpp"

#include <stdexcept>

#include "kernels/backend_families.hpp"  // generated: register_backend_families()

namespace sdpa {

void BackendRegistry::add(const Backend& backend) {
  if (find(backend.name())) {
    throw std::invalid_argument("backend '" + std::string(backend.name()) +
                                "' is registered twice");
  }
  list_.push_back(&backend);
}

void BackendRegistry::add(std::unique_ptr<const Backend> backend) {
  add(*backend);
  owned_.push_back(std::move(backend));
}

const Backend* BackendRegistry::find(std::string_view name) const {
  for (const Backend* b : list_) {
    if (b->name() == name) return b;
  }
  return nullptr;
}

std::string BackendRegistry::names() const {
  std::string s;
  for (const Backend* b : list_) s += (s.empty() ? "" : ", ") + std::string(b->name());
  return s;
}

BackendRegistry& backend_registry() {
  static BackendRegistry* registry = [] {
    auto* r = new BackendRegistry;  // never destroyed: backends outlive static destructors
    detail::register_backend_families(*r);
    return r;
  }();
  return *registry;
}

const std::vector<const Backend*>& builtin_backends() { return backend_registry().backends(); }

const Backend* find_backend(std::string_view name) { return backend_registry().find(name); }

const Backend& find_backend_or_throw(std::string_view name) {
  if (const Backend* b = find_backend(name)) return *b;
  throw std::invalid_argument("unknown backend '" + std::string(name) +
                              "' (known: " + backend_registry().names() + ")");
}

const std::vector<std::string>& backend_family_names() { return detail::backend_family_list(); }

}  // namespace sdpa
