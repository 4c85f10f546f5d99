#include "core/cpu_flags.hpp"

#include <fstream>
#include <sstream>

namespace sdpa {

std::set<std::string> parse_cpu_flags(std::string_view cpuinfo) {
  std::istringstream lines{std::string(cpuinfo)};
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("flags", 0) != 0 && line.rfind("Features", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    // "flags\t\t: fpu vme ...": the key is the whole text before the colon.
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    if (key != "flags" && key != "Features") continue;
    std::istringstream words(line.substr(colon + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;  // every core lists the same flags: the first line is enough
  }
  return {};
}

const std::set<std::string>& host_cpu_flags() {
  static const std::set<std::string> flags = [] {
    std::ifstream in("/proc/cpuinfo");
    std::stringstream text;
    text << in.rdbuf();
    return parse_cpu_flags(text.str());
  }();
  return flags;
}

}  // namespace sdpa
