// The built-in backends, in default priority order (first = preferred).
#pragma once

#include <string_view>
#include <vector>

#include "kernels/backend.hpp"

namespace sdpa {

// Every backend compiled into this build, in priority order. Backends that need hardware
// this build or machine lacks are still listed: their supports() says why they decline.
const std::vector<const Backend*>& builtin_backends();

// The backend with this name, or nullptr.
const Backend* find_backend(std::string_view name);

}  // namespace sdpa
