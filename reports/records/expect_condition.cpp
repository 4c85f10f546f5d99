#include "reports/records/expect_condition.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <stdexcept>

#include "core/cpu_flags.hpp"
#include "core/device.hpp"

namespace sdpa::conformance {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_lower_word(char c) { return (c >= 'a' && c <= 'z') || is_digit(c) || c == '_'; }

// A library name: a letter or '_', then letters, digits, '_', '.', '-' (torch, jax, jax-lib).
bool is_library_name(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'))
      return false;
  return true;
}

// Digits separated by single dots: 2, 2.15, 2.15.0.
bool is_plain_version(std::string_view s) {
  bool digit_before = false;
  for (char c : s) {
    if (is_digit(c)) {
      digit_before = true;
    } else if (c == '.' && digit_before) {
      digit_before = false;
    } else {
      return false;
    }
  }
  return digit_before;
}

// The leading numeric components of a version: "2.15.0+cu132" -> {2, 15, 0}.
std::vector<unsigned long long> version_numbers(std::string_view v) {
  if (v.empty() || !is_digit(v[0]))
    throw std::invalid_argument("version '" + std::string(v) + "' does not start with a number");
  std::vector<unsigned long long> out;
  std::size_t i = 0;
  while (i < v.size() && is_digit(v[i])) {
    unsigned long long n = 0;
    for (; i < v.size() && is_digit(v[i]); ++i) n = n * 10 + static_cast<unsigned>(v[i] - '0');
    out.push_back(n);
    // The next component only when a dot is followed by a digit ("0.dev1" stops at "dev").
    if (i + 1 < v.size() && v[i] == '.' && is_digit(v[i + 1])) {
      ++i;
    } else {
      break;
    }
  }
  return out;
}

ExpectTerm parse_term(std::string_view word) {
  ExpectTerm t;
  std::string_view s = word;
  if (!s.empty() && s[0] == '!') {
    t.negated = true;
    s.remove_prefix(1);
  }
  const std::string w(word);
  if (s.rfind("cpu:", 0) == 0) {
    t.kind = ExpectTerm::Kind::cpu;
    t.name = std::string(s.substr(4));
    bool ok = !t.name.empty();
    for (char c : t.name) ok = ok && is_lower_word(c);
    if (!ok) {
      throw std::invalid_argument("bad CPU flag in '" + w +
                                  "': flags are written as /proc/cpuinfo names them "
                                  "(lowercase letters, digits, '_'), e.g. cpu:amx_bf16");
    }
    return t;
  }
  if (s.rfind("isa:", 0) == 0) {
    t.kind = ExpectTerm::Kind::isa;
    t.name = std::string(s.substr(4));
    if (!parse_isa_target(t.name)) {
      throw std::invalid_argument("unknown ISA target in '" + w + "' (known: " + isa_target_list() +
                                  ")");
    }
    return t;
  }
  t.kind = ExpectTerm::Kind::version;
  const auto at = s.find_first_of("<>=!");
  if (at == std::string_view::npos) {
    throw std::invalid_argument("bad term '" + w +
                                "': expected cpu:FLAG, isa:TARGET or NAME OP VERSION (OP one of "
                                ">= <= > < == !=), each optionally negated with '!'");
  }
  t.name = std::string(s.substr(0, at));
  std::string_view rest = s.substr(at);
  for (const char* op : {">=", "<=", "==", "!=", ">", "<"}) {
    if (rest.rfind(op, 0) == 0) {
      t.op = op;
      break;
    }
  }
  if (t.op.empty()) {
    throw std::invalid_argument("bad operator in '" + w + "' (one of >= <= > < == !=)");
  }
  t.version = std::string(rest.substr(t.op.size()));
  if (!is_library_name(t.name)) {
    throw std::invalid_argument("bad library name in '" + w +
                                "' (a letter or '_', then letters, digits, '_', '.', '-')");
  }
  if (!is_plain_version(t.version)) {
    throw std::invalid_argument("bad version in '" + w + "' (numbers separated by dots: 2.15)");
  }
  return t;
}

bool term_holds(const ExpectTerm& t, const ExpectFacts& facts, std::string_view isa) {
  bool holds = false;
  switch (t.kind) {
    case ExpectTerm::Kind::cpu:
      holds = facts.cpu_flags.count(t.name) > 0;
      break;
    case ExpectTerm::Kind::isa:
      holds = isa == t.name;
      break;
    case ExpectTerm::Kind::version: {
      const auto it = facts.versions.find(t.name);
      if (it == facts.versions.end()) {
        throw std::invalid_argument("the condition asks for the version of '" + t.name +
                                    "', which was not given (--expect-fact " + t.name +
                                    "=VERSION; from Python, check(expect_facts={\"" + t.name +
                                    "\": ...}))");
      }
      const int c = compare_versions(it->second, t.version);
      holds = t.op == ">="   ? c >= 0
              : t.op == "<=" ? c <= 0
              : t.op == ">"  ? c > 0
              : t.op == "<"  ? c < 0
              : t.op == "==" ? c == 0
                             : c != 0;
      break;
    }
  }
  return holds != t.negated;
}

}  // namespace

ExpectCondition parse_expect_condition(std::string_view text) {
  ExpectCondition c;
  std::istringstream words{std::string(text)};
  for (std::string w; words >> w;) {
    c.terms.push_back(parse_term(w));
    c.text += (c.text.empty() ? "" : " ") + w;
  }
  if (c.terms.empty()) throw std::invalid_argument("empty condition '[when ]'");
  return c;
}

bool condition_holds(const ExpectCondition& c, const ExpectFacts& facts, std::string_view isa) {
  if (facts.every_host) return true;
  bool all = true;
  // Every term is evaluated, so that a missing version fact is reported on every host.
  for (const ExpectTerm& t : c.terms) all = term_holds(t, facts, isa) && all;
  return all;
}

int compare_versions(std::string_view a, std::string_view b) {
  auto x = version_numbers(a), y = version_numbers(b);
  const std::size_t n = std::max(x.size(), y.size());
  x.resize(n, 0);
  y.resize(n, 0);
  return x < y ? -1 : x > y ? 1 : 0;
}

void add_version_fact(ExpectFacts* facts, std::string_view assignment) {
  const auto eq = assignment.find('=');
  const std::string a(assignment);
  if (eq == std::string_view::npos) {
    throw std::invalid_argument("--expect-fact '" + a + "': expected NAME=VERSION (torch=2.15.0)");
  }
  const std::string name(assignment.substr(0, eq)), version(assignment.substr(eq + 1));
  if (!is_library_name(name)) {
    throw std::invalid_argument("--expect-fact '" + a +
                                "': bad name (a letter or '_', then letters, digits, '_', "
                                "'.', '-')");
  }
  try {
    version_numbers(version);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("--expect-fact '" + a + "': " + e.what());
  }
  if (!facts->versions.emplace(name, version).second) {
    throw std::invalid_argument("--expect-fact '" + a + "': " + name + " is given twice");
  }
}

ExpectFacts host_expect_facts(std::string isa) {
  ExpectFacts f;
  f.cpu_flags = host_cpu_flags();
  f.isa = std::move(isa);
  return f;
}

ExpectFacts every_host_facts() {
  ExpectFacts f;
  f.every_host = true;
  return f;
}

}  // namespace sdpa::conformance
