// A backend of a loaded plugin behind the Backend interface: the C structs of
// include/sdpa_cts/plugin.h converted to and from the project's types, so the dispatcher, the
// judge and the reports cannot tell it from a built-in backend.
#pragma once

#include <memory>
#include <string>

#include "kernels/backend.hpp"
#include "sdpa_cts/plugin.h"

namespace sdpa::plugins {

// Checks one backend description of a plugin; "" when it is usable, else why not.
std::string check_description(const sdpa_cts_backend& b);

// The Backend of `b`, which must outlive it (the plugin stays loaded for the process).
std::unique_ptr<const Backend> make_plugin_backend(const sdpa_cts_backend& b);

// The project's capabilities from the plugin's.
Capabilities capabilities_from(const sdpa_cts_capabilities& c);

}  // namespace sdpa::plugins
