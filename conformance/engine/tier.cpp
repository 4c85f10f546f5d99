#include "conformance/engine/tier.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string_view>

#include "core/case_id.hpp"

namespace sdpa::conformance {
namespace {

namespace fs = std::filesystem;

// Start of the comment line that names the family of the entries after it.
constexpr const char* kFamilyDirective = "# family:";

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

void load_into(const fs::path& file, const std::string& tiers_dir, const std::string& source_dir,
               std::vector<std::string>& stack, TierEntries& out, std::set<std::string>& seen,
               const TierDirective& directive) {
  const std::string key = fs::weakly_canonical(file).string();
  for (const auto& s : stack) {
    if (s == key) throw std::invalid_argument("tier " + file.string() + ": include cycle");
  }
  std::ifstream in(file);
  if (!in) throw std::invalid_argument("tier file not found: " + file.string());
  stack.push_back(key);
  std::string line;
  int lineno = 0;
  std::string family;  // from this file's last family line; an include does not change it
  while (std::getline(in, line)) {
    ++lineno;
    const std::string where = file.string() + ":" + std::to_string(lineno) + ": ";
    // The family directive is a comment line, so that a tier file stays readable by a
    // build that does not know it.
    if (const std::string t = trim(line); t.rfind(kFamilyDirective, 0) == 0) {
      family = trim(t.substr(std::string_view(kFamilyDirective).size()));
      const bool ok =
          !family.empty() &&
          family.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") == std::string::npos;
      if (!ok) throw std::invalid_argument(where + "family name must be [a-z0-9_-]+: " + family);
      continue;
    }
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    line = trim(line);
    if (line.empty()) continue;
    if (directive && stack.size() == 1 && directive(line, where)) continue;
    if (line.rfind("golden ", 0) == 0) {
      fs::path p = trim(line.substr(7));
      if (p.is_relative()) p = fs::path(source_dir) / p;
      if (!fs::exists(p))
        throw std::invalid_argument(where + "golden file not found: " + p.string());
      out.golden_files.push_back(p.string());
      out.golden_families.push_back(family);
    } else if (line.rfind("include ", 0) == 0) {
      const std::string name = trim(line.substr(8));
      const fs::path included = fs::path(tiers_dir) / (name + ".tier");
      // The error names the including line too (found by fuzz/targets/tier_file.cpp).
      if (!fs::is_regular_file(included)) {
        throw std::invalid_argument(where + "include " + name +
                                    ": tier file not found: " + included.string());
      }
      load_into(included, tiers_dir, source_dir, stack, out, seen, directive);
    } else {
      std::vector<std::string> ids;
      try {
        ids = expand_alternatives(line);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(where + e.what());
      }
      for (const auto& id : ids) {
        auto parsed = parse_case_id(id);
        if (auto* err = std::get_if<CaseIdError>(&parsed)) {
          throw std::invalid_argument(where + err->message + " in '" + id + "'");
        }
        const std::string canonical = format_case_id(std::get<Case>(parsed));
        if (seen.insert(canonical).second) {
          out.case_ids.push_back(canonical);
          out.case_families.push_back(family);
        }
      }
    }
  }
  stack.pop_back();
}

}  // namespace

std::vector<std::string> expand_alternatives(const std::string& pattern) {
  // A line of many groups multiplies out exponentially: refuse before expanding (found by
  // fuzz/targets/tier_file.cpp, where 20 groups of two took minutes and a gigabyte).
  std::uint64_t count = 1;
  for (std::size_t i = pattern.find('{'); i != std::string::npos; i = pattern.find('{', i + 1)) {
    std::uint64_t alternatives = 1;
    for (std::size_t j = i + 1; j < pattern.size() && pattern[j] != '}'; ++j) {
      alternatives += pattern[j] == ',';
    }
    count *= alternatives;
    if (count > kMaxAlternatives) {
      throw std::invalid_argument("the alternatives expand to more than " +
                                  std::to_string(kMaxAlternatives) + " case IDs");
    }
  }
  const auto open = pattern.find('{');
  const auto close_any = pattern.find('}');
  if (open == std::string::npos) {
    if (close_any != std::string::npos) throw std::invalid_argument("unbalanced '}'");
    return {pattern};
  }
  const auto close = pattern.find('}', open);
  if (close == std::string::npos || pattern.find('{', open + 1) < close) {
    throw std::invalid_argument("unbalanced '{' (alternatives do not nest)");
  }
  std::vector<std::string> out;
  const std::string head = pattern.substr(0, open), tail = pattern.substr(close + 1);
  const std::string body = pattern.substr(open + 1, close - open - 1);
  std::size_t start = 0;
  while (true) {
    const auto comma = body.find(',', start);
    const std::string alt =
        body.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    for (auto& rest : expand_alternatives(tail)) out.push_back(head + alt + rest);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

TierEntries load_tier_file(const std::string& path, const std::string& tiers_dir,
                           const std::string& source_dir, const TierDirective& directive) {
  TierEntries out;
  std::vector<std::string> stack;
  std::set<std::string> seen;
  load_into(path, tiers_dir, source_dir, stack, out, seen, directive);
  return out;
}

TierEntries load_tier(const std::string& name_or_path, const std::string& tiers_dir,
                      const std::string& source_dir) {
  fs::path file = name_or_path;
  if (!fs::exists(file) && name_or_path.find('/') == std::string::npos) {
    file = fs::path(tiers_dir) / (name_or_path + ".tier");
    if (!fs::exists(file)) {
      std::string known;
      if (fs::is_directory(tiers_dir)) {
        for (const auto& e : fs::directory_iterator(tiers_dir)) {
          if (e.path().extension() == ".tier")
            known += (known.empty() ? "" : ", ") + e.path().stem().string();
        }
      }
      throw std::invalid_argument("unknown tier '" + name_or_path + "' (known: " + known + ")");
    }
  }
  return load_tier_file(file.string(), tiers_dir, source_dir, {});
}

std::string default_tiers_dir() { return default_source_dir() + "/conformance/tiers"; }

std::string default_source_dir() {
  // Where the tiers and golden sets are: $SDPA_CTS_DATA_DIR, else an installed tree next to
  // the executable (<prefix>/bin/sdpa-cts with <prefix>/share/sdpa-cts), else the source tree
  // this build came from.
  if (const char* env = std::getenv("SDPA_CTS_DATA_DIR"); env && *env) return env;
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto installed = exe.parent_path().parent_path() / "share" / "sdpa-cts";
    if (std::filesystem::is_directory(installed / "conformance" / "tiers", ec)) {
      return installed.string();
    }
  }
  return SDPA_CTS_SOURCE_DIR;
}

}  // namespace sdpa::conformance
