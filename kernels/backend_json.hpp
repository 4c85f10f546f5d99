// A backend's declared capabilities and precision contracts as JSON: what a certification
// manifest records of the backend it certifies (and what a plugin probe reports).
#pragma once

#include <nlohmann/json.hpp>

#include "kernels/backend.hpp"

namespace sdpa {

// {"name", "capabilities": {every Capabilities field}, "precision": {dtype: contract}} with
// one precision entry per declared element type.
nlohmann::ordered_json backend_json(const Backend& backend);

}  // namespace sdpa
