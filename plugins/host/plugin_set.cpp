#include "plugins/host/plugin_set.hpp"

#include <set>
#include <stdexcept>

#include "kernels/registry.hpp"

namespace sdpa::plugins {

std::vector<ProbedPlugin> probe_plugins(const std::vector<std::string>& flags) {
  std::vector<ProbedPlugin> out;
  std::set<std::string> names;
  for (const Backend* b : builtin_backends()) names.emplace(b->name());
  for (const std::string& path : plugin_paths(flags)) {
    ProbedPlugin p = probe_plugin(path);
    for (const auto& b : p.backends) {
      if (!names.insert(b.name).second) {
        throw std::invalid_argument("plugin '" + path + "': backend '" + b.name +
                                    "' is already registered (a built-in backend or another "
                                    "plugin has that name)");
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<ProbedPlugin> load_plugins_here(const std::vector<std::string>& flags) {
  std::vector<ProbedPlugin> probed = probe_plugins(flags);
  for (const auto& p : probed) load_plugin(p.path);
  return probed;
}

}  // namespace sdpa::plugins
