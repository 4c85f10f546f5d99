// `--plugin PATH` (repeatable) and SDPA_CTS_PLUGINS on the commands that judge, explain or
// time backends (docs/PLUGINS.md).
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <vector>

#include "plugins/host/plugin_loader.hpp"

namespace sdpa::cli {

// Adds --plugin to `cmd`, collecting into `paths`.
void add_plugin_option(CLI::App* cmd, std::vector<std::string>* paths);

// Probes every plugin of `flags` and SDPA_CTS_PLUGINS in a child process each, and checks
// that no backend name repeats a built-in one or another plugin's. Throws
// std::invalid_argument naming the file. Returns the probed plugins, in order.
std::vector<plugins::ProbedPlugin> probe_plugins(const std::vector<std::string>& flags);

// Probes, then loads every plugin into this process's registry (explain, bench and golden
// verify run plugin code in-process once the probe has shown that loading is safe).
std::vector<plugins::ProbedPlugin> load_plugins_here(const std::vector<std::string>& flags);

}  // namespace sdpa::cli
