#include "cli/distinct_dirs.hpp"

#include <filesystem>
#include <map>
#include <stdexcept>

namespace sdpa::cli {
namespace {

// A path as one spelling (symbolic links, `..` and a trailing / resolved).
std::string canonical(const std::string& path) {
  std::error_code ec;
  const auto c = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : c.string();
}

}  // namespace

void check_distinct_dirs(const std::string& command, const std::vector<std::string>& dirs,
                         const std::string& out) {
  std::map<std::string, std::string> seen;  // canonical path -> the name given
  for (const auto& d : dirs) {
    if (canonical(d) == canonical(out)) {
      throw std::invalid_argument(command + ": --out '" + out +
                                  "' is one of the directories to merge ('" + d + "')");
    }
    const auto [it, fresh] = seen.emplace(canonical(d), d);
    if (!fresh) {
      throw std::invalid_argument(command + ": the directory '" + d + "' is given twice" +
                                  (it->second == d ? "" : " (also as '" + it->second + "')"));
    }
  }
}

}  // namespace sdpa::cli
