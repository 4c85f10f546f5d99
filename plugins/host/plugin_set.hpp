// The plugins of one command: its `--plugin PATH` flags and SDPA_CTS_PLUGINS, probed (and
// loaded) together so that no backend name is registered twice (docs/PLUGINS.md).
#pragma once

#include <string>
#include <vector>

#include "plugins/host/plugin_loader.hpp"

namespace sdpa::plugins {

// Probes every plugin of `flags` and SDPA_CTS_PLUGINS in a child process each, and checks
// that no backend name repeats a built-in one or another plugin's. Throws
// std::invalid_argument naming the file. Returns the probed plugins, in order.
std::vector<ProbedPlugin> probe_plugins(const std::vector<std::string>& flags);

// Probes, then loads every plugin into this process's registry (explain, bench and golden
// verify run plugin code in-process once the probe has shown that loading is safe).
std::vector<ProbedPlugin> load_plugins_here(const std::vector<std::string>& flags);

}  // namespace sdpa::plugins
