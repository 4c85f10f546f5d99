#include "cli/old_spellings.hpp"

#include <set>

#include "core/shell_quote.hpp"

namespace sdpa::cli {
namespace {

std::string joined(const std::vector<std::string>& words) {
  std::string s = "sdpa-cts";
  for (const auto& w : words)
    s += " " + (w.find_first_of(" '\"$\\*?;&|<>()`") == std::string::npos ? w : shell_quote(w));
  return s;
}

// `golden verify [options] FILE...` with --backend: the same judging is `run --golden`.
// Options `run` shares pass through; the reference's own (--precision, --max-ulps, --quiet)
// do not apply to a backend and are dropped.
std::vector<std::string> golden_verify_as_run(const std::vector<std::string>& rest) {
  const std::set<std::string> kept_with_value = {"--backend", "--device", "--filter", "--threads",
                                                 "--plugin"};
  const std::set<std::string> dropped_with_value = {"--precision", "--max-ulps"};
  std::vector<std::string> run = {"run"};
  std::vector<std::string> files;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    const std::string& a = rest[i];
    const std::string name = a.substr(0, a.find('='));
    const bool inline_value = a.find('=') != std::string::npos;
    if (kept_with_value.count(name)) {
      run.push_back(a);
      if (!inline_value && i + 1 < rest.size()) run.push_back(rest[++i]);
    } else if (dropped_with_value.count(name)) {
      if (!inline_value) ++i;
    } else if (a == "--quiet") {
      continue;
    } else if (a.rfind("-", 0) == 0) {
      run.push_back(a);  // unknown here: `run` will say what it makes of it
    } else {
      files.push_back(a);
    }
  }
  for (const auto& f : files) {
    run.push_back("--golden");
    run.push_back(f);
  }
  return run;
}

bool has_backend_option(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "--backend" || a.rfind("--backend=", 0) == 0) return true;
  }
  return false;
}

}  // namespace

std::optional<std::string> new_spelling(const std::vector<std::string>& args) {
  if (args.empty()) return std::nullopt;
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "judge") {
    std::vector<std::string> words = {"cases", "judge"};
    words.insert(words.end(), rest.begin(), rest.end());
    return joined(words);
  }
  if (args[0] == "verify-bundle") {
    std::vector<std::string> words = {"bundle", "verify"};
    words.insert(words.end(), rest.begin(), rest.end());
    return joined(words);
  }
  if (args[0] == "golden" && args.size() > 1 && args[1] == "verify" && has_backend_option(args)) {
    return joined(golden_verify_as_run(std::vector<std::string>(args.begin() + 2, args.end())));
  }
  return std::nullopt;
}

}  // namespace sdpa::cli
