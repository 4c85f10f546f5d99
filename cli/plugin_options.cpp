#include "cli/plugin_options.hpp"

#include <set>
#include <stdexcept>

#include "kernels/registry.hpp"

namespace sdpa::cli {

void add_plugin_option(CLI::App* cmd, std::vector<std::string>* paths) {
  cmd->add_option("--plugin", *paths,
                  "Load backends from this sdpa-cts plugin (a shared library; repeatable; "
                  "SDPA_CTS_PLUGINS adds more, separated by ':')");
}

std::vector<plugins::ProbedPlugin> probe_plugins(const std::vector<std::string>& flags) {
  std::vector<plugins::ProbedPlugin> out;
  std::set<std::string> names;
  for (const Backend* b : builtin_backends()) names.emplace(b->name());
  for (const std::string& path : plugins::plugin_paths(flags)) {
    plugins::ProbedPlugin p = plugins::probe_plugin(path);
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

std::vector<plugins::ProbedPlugin> load_plugins_here(const std::vector<std::string>& flags) {
  std::vector<plugins::ProbedPlugin> probed = probe_plugins(flags);
  for (const auto& p : probed) plugins::load_plugin(p.path);
  return probed;
}

}  // namespace sdpa::cli
