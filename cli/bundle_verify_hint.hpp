// The command that checks a bundle, as `certify` and `bundle merge` print it.
#pragma once

#include <string>

namespace sdpa::cli {

// `sdpa-cts bundle verify DIR`, with `--plugin PLUGIN` when the bundle's backend is a plugin:
// its digest is compared and re-runs load it (PLUGIN "" = a built-in backend).
std::string bundle_verify_command(const std::string& dir, const std::string& plugin);

}  // namespace sdpa::cli
