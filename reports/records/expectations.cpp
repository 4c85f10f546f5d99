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

Expectations parse_expectations(std::string_view text, const std::string& name,
                                const ExpectFacts& facts) {
  Expectations out;
  out.file = name;
  out.facts = facts;
  out.text = std::string(text);
  std::istringstream lines(out.text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;  // blank or comment
    const std::string where = name + ":" + std::to_string(number) + ": ";
    // A leading `[when CONDITION]`: the hosts the entry holds on.
    ExpectCondition condition;
    std::size_t fields = first;
    if (line[first] == '[') {
      const auto close = line.find(']', first);
      const std::string_view clause = std::string_view(line).substr(first + 1);
      if (clause.rfind("when", 0) != 0 ||
          (clause.size() > 4 && clause[4] != ' ' && clause[4] != '\t' && clause[4] != ']')) {
        throw std::invalid_argument(where + "a line that starts with '[' must start with a " +
                                    "condition, '[when CONDITION]'");
      }
      if (close == std::string::npos)
        throw std::invalid_argument(where + "the condition '[when ...' has no closing ']'");
      try {
        condition = parse_expect_condition(
            std::string_view(line).substr(first + 5, close > first + 5 ? close - first - 5 : 0));
        condition_holds(condition, facts, facts.isa);  // a missing version fact is an error
      } catch (const std::invalid_argument& err) {
        throw std::invalid_argument(where + err.what());
      }
      fields = close + 1;
    }
    std::istringstream words(line.substr(fields));
    std::vector<std::string> w;
    for (std::string s; words >> s;) w.push_back(s);
    if (w.empty() && !condition.empty())
      throw std::invalid_argument(where + "a condition without an entry after it");
    if (w.empty()) continue;
    for (const std::string& word : w) {
      if (word.rfind("[when", 0) == 0) {
        throw std::invalid_argument(where + "a condition goes first on the line, before the " +
                                    "backend ('[when ...] <backend> <case> <reason>')");
      }
    }
    if (w.size() < 3) {
      throw std::invalid_argument(where + "expected '<backend> <case> <reason> [<issue>]', " +
                                  "the reason is missing");
    }
    Expectation e;
    e.line = number;
    e.condition = std::move(condition);
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

Expectations load_expectations(const std::string& path, const ExpectFacts& facts) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("--expect: cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_expectations(ss.str(), path, facts);
}

bool expectation_applies(const Expectations& e, const Expectation& x, std::string_view isa) {
  return x.condition.empty() || condition_holds(x.condition, e.facts, isa);
}

const Expectation* find_expectation(const Expectations& e, std::string_view backend,
                                    std::string_view case_id, std::string_view isa) {
  if (isa.empty()) isa = e.facts.isa;
  for (const auto& x : e.entries) {
    if (glob_match(x.backend, backend) && case_matches(x.cases, case_id) &&
        expectation_applies(e, x, isa))
      return &x;
  }
  return nullptr;
}

std::string expectation_text(const Expectation& e) {
  return e.issue.empty() ? e.reason : e.reason + " " + e.issue;
}

bool apply_expectations(const Expectations& e, CaseRecord& r) {
  // A record run on a forced target (--simd) is judged with that target, else the run's.
  const Expectation* x = find_expectation(e, r.backend, r.case_id, r.simd_target);
  if (!x) return false;
  r.expected = expectation_text(*x);
  if (is_failure(r.status)) {
    const std::string when = x->condition.empty() ? "" : " [when " + x->condition.text + "]";
    r.message = std::string("expected failure (") + status_name(r.status) + ", " + e.file + ":" +
                std::to_string(x->line) + when + ": " + r.expected + "): " + r.message;
    r.status = Status::expected_failure;
  }
  return true;
}

std::vector<const CaseRecord*> unexpectedly_passing(const std::vector<CaseRecord>& records) {
  std::vector<const CaseRecord*> out;
  // `expected` is set only by an entry that applied: one whose condition did not hold on this
  // host never makes a passing case "unexpectedly passing".
  for (const auto& r : records)
    if (is_pass(r.status) && !r.expected.empty()) out.push_back(&r);
  return out;
}

}  // namespace sdpa::conformance
