#include "kernels/registry.hpp"

namespace sdpa {

// Each backend's translation unit provides its accessor; the list below is the priority
// order (docs/DISPATCH.md explains it).
const std::vector<const Backend*>& builtin_backends() {
  static const std::vector<const Backend*> list = {};
  return list;
}

const Backend* find_backend(std::string_view name) {
  for (const Backend* b : builtin_backends()) {
    if (b->name() == name) return b;
  }
  return nullptr;
}

}  // namespace sdpa
