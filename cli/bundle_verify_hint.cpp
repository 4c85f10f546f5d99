#include "cli/bundle_verify_hint.hpp"

#include "core/shell_quote.hpp"

namespace sdpa::cli {

std::string bundle_verify_command(const std::string& dir, const std::string& plugin) {
  std::string c = "sdpa-cts bundle verify " + shell_quote(dir);
  if (!plugin.empty()) c += " --plugin " + shell_quote(plugin);
  return c;
}

}  // namespace sdpa::cli
