#include "reports/markdown_text.hpp"

#include <algorithm>

#include "reports/text.hpp"

namespace sdpa::reports {

namespace {

std::size_t longest_backtick_run(std::string_view s) {
  std::size_t best = 0, run = 0;
  for (char c : s) {
    run = c == '`' ? run + 1 : 0;
    best = std::max(best, run);
  }
  return best;
}

}  // namespace

std::string md_code(std::string_view s, bool in_table) {
  std::string body;
  for (char c : clean_text(s)) {
    if (c == '\n' || c == '\r') {
      body += ' ';
    } else if (c == '|' && in_table) {
      body += "\\|";
    } else {
      body += c;
    }
  }
  if (body.empty()) return "` `";
  std::string fence(longest_backtick_run(body) + 1, '`');
  bool pad = body.front() == '`' || body.back() == '`';
  return fence + (pad ? " " : "") + body + (pad ? " " : "") + fence;
}

std::string md_code_block(std::string_view s, std::string_view lang) {
  std::string body = clean_text(s);
  std::string fence(std::max<std::size_t>(3, longest_backtick_run(body) + 1), '`');
  std::string out = fence + std::string(lang) + "\n" + body;
  if (out.back() != '\n') out += '\n';
  return out + fence + "\n";
}

std::string md_text(std::string_view s) {
  std::string out;
  for (char c : clean_text(s)) {
    switch (c) {
      case '\n':
      case '\r':
        out += ' ';
        break;
      case '\\':
      case '`':
      case '*':
      case '_':
      case '[':
      case ']':
      case '<':
      case '>':
      case '|':
      case '~':
      case '&':
      case '!':
      case '#':
        out += '\\';
        out += c;
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace sdpa::reports
