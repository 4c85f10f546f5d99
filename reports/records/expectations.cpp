#include "reports/records/expectations.hpp"

#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace sdpa::conformance {
namespace {

// '*' matches any run of characters, '?' one character; everything else is literal.
bool glob_match(std::string_view pattern, std::string_view text) {
  std::size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool looks_like_issue(const std::string& word) {
  if (word.find("://") != std::string::npos) return true;
  if (word.size() < 2 || word[0] != '#') return false;
  for (std::size_t i = 1; i < word.size(); ++i)
    if (word[i] < '0' || word[i] > '9') return false;
  return true;
}

bool case_matches(const std::string& pattern, std::string_view case_id) {
  if (pattern.rfind("re:", 0) == 0) {
    // Checked when the file was parsed.
    return std::regex_search(case_id.begin(), case_id.end(), std::regex(pattern.substr(3)));
  }
  return glob_match(pattern, case_id);
}

}  // namespace

Expectations parse_expectations(std::string_view text, const std::string& name) {
  Expectations out;
  out.file = name;
  out.text = std::string(text);
  std::istringstream lines(out.text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;  // blank or comment
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string s; words >> s;) w.push_back(s);
    if (w.empty()) continue;
    const std::string where = name + ":" + std::to_string(number) + ": ";
    if (w.size() < 3) {
      throw std::invalid_argument(where + "expected '<backend> <case> <reason> [<issue>]', " +
                                  "the reason is missing");
    }
    Expectation e;
    e.line = number;
    e.backend = w[0];
    e.cases = w[1];
    std::size_t last = w.size();
    if (looks_like_issue(w.back())) {
      e.issue = w.back();
      --last;
    }
    for (std::size_t i = 2; i < last; ++i) e.reason += (e.reason.empty() ? "" : " ") + w[i];
    if (e.reason.empty()) {
      throw std::invalid_argument(where +
                                  "the reason is missing (only an issue link follows the case)");
    }
    if (e.cases.rfind("re:", 0) == 0) {
      try {
        std::regex check(e.cases.substr(3));
      } catch (const std::regex_error& err) {
        throw std::invalid_argument(where + "bad regular expression '" + e.cases.substr(3) +
                                    "': " + err.what());
      }
    }
    out.entries.push_back(std::move(e));
  }
  return out;
}

Expectations load_expectations(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("--expect: cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_expectations(ss.str(), path);
}

const Expectation* find_expectation(const Expectations& e, std::string_view backend,
                                    std::string_view case_id) {
  for (const auto& x : e.entries) {
    if (glob_match(x.backend, backend) && case_matches(x.cases, case_id)) return &x;
  }
  return nullptr;
}

std::string expectation_text(const Expectation& e) {
  return e.issue.empty() ? e.reason : e.reason + " " + e.issue;
}

bool apply_expectations(const Expectations& e, CaseRecord& r) {
  const Expectation* x = find_expectation(e, r.backend, r.case_id);
  if (!x) return false;
  r.expected = expectation_text(*x);
  if (is_failure(r.status)) {
    r.message = std::string("expected failure (") + status_name(r.status) + ", " + e.file + ":" +
                std::to_string(x->line) + ": " + r.expected + "): " + r.message;
    r.status = Status::expected_failure;
  }
  return true;
}

std::vector<const CaseRecord*> unexpectedly_passing(const std::vector<CaseRecord>& records) {
  std::vector<const CaseRecord*> out;
  for (const auto& r : records)
    if (is_pass(r.status) && !r.expected.empty()) out.push_back(&r);
  return out;
}

}  // namespace sdpa::conformance
