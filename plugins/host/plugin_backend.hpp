// A backend of a loaded plugin behind the Backend interface: the C structs of
// include/sdpa_cts/plugin.h converted to and from the project's types, so the dispatcher, the
// judge and the reports cannot tell it from a built-in backend.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "kernels/backend.hpp"
#include "sdpa_cts/plugin.h"

namespace sdpa::plugins {

// The sizes of the structs a plugin describes itself with, as ABI 2.0 laid them out (the
// first field 2.1 appended starts there) and as 2.1 does: a plugin of this major built
// against any minor has at least the 2.0 sizes; fields past its own size are absent.
inline constexpr std::size_t kBackendSizeAbi20 = offsetof(sdpa_cts_backend, run_backward);
inline constexpr std::size_t kBackendSizeAbi21 = sizeof(sdpa_cts_backend);
inline constexpr std::size_t kPrecisionSizeAbi20 = offsetof(sdpa_cts_precision, ds_type);
inline constexpr std::size_t kParamsSizeAbi20 = offsetof(sdpa_cts_params, d_bias);
// Whether `b` declares the backward and has the entry for it.
bool has_backward(const sdpa_cts_backend& b);

// Checks one backend description of a plugin; "" when it is usable, else why not.
std::string check_description(const sdpa_cts_backend& b);

// The Backend of `b`, which must outlive it (the plugin stays loaded for the process).
std::unique_ptr<const Backend> make_plugin_backend(const sdpa_cts_backend& b);

// The project's capabilities from the plugin's.
Capabilities capabilities_from(const sdpa_cts_capabilities& c);

}  // namespace sdpa::plugins
