// Loading backends that live outside the project through the C plugin ABI
// (include/sdpa_cts/plugin.h, docs/PLUGINS.md).
//
// Policy: plugin code runs in worker processes. `sdpa-cts run` first probes every plugin in
// a child process (a plugin that crashes, aborts or hangs while loading cannot take the
// command with it), builds its jobs from what the probe reported, and lets each worker load
// the plugin itself; the judge's CRASH / TIMEOUT / guarded buffers then apply to plugin code
// as to any backend. Every load error names the file and is an exit code 2 error.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/registry.hpp"

namespace sdpa::plugins {

// What a probe reports of one backend of a plugin.
struct ProbedBackend {
  std::string name;                     // the backend's name
  DeviceKind device = DeviceKind::cpu;  // the kind of device it runs on
  std::string description;              // capabilities and precision contracts as one JSON object
                                        // (kernels/backend_json.hpp), without the isa_targets trait
                                        // the ABI cannot declare
};

// A plugin file and the backends it provides.
struct ProbedPlugin {
  std::string path;                     // as given
  std::string name, version;            // the plugin's own
  std::string abi;                      // the ABI version it was built against, "MAJOR.MINOR"
  std::vector<ProbedBackend> backends;  // in the plugin's order
};

// The plugin paths of a command: `--plugin` values first, then the entries of the
// environment variable SDPA_CTS_PLUGINS (paths separated by ':'), without repeats.
std::vector<std::string> plugin_paths(const std::vector<std::string>& from_flags);

// Loads `path` in a child process and reports its backends. Throws std::invalid_argument
// naming the file: it cannot be opened, lacks the entry symbol, has another ABI major
// version (both versions named; an entry that returns NULL to this host is asked as a host
// of each older major, to learn its version) or too small structs, describes an invalid
// backend, or the child crashed, exited or did not answer within `timeout_seconds` while
// loading.
ProbedPlugin probe_plugin(const std::string& path, double timeout_seconds = 30);

// Loads `path` into this process and adds its backends to `registry` (after the built-in
// ones). Throws std::invalid_argument naming the file for every error probe_plugin names,
// and for a backend name the registry already has.
ProbedPlugin load_plugin(const std::string& path, BackendRegistry& registry = backend_registry());

}  // namespace sdpa::plugins
