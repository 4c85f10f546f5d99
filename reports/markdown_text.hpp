// Markdown building blocks: code spans and blocks that hold any text verbatim, and escaped
// plain text.
#pragma once

#include <string>
#include <string_view>

namespace sdpa::reports {

// An inline code span holding `s` verbatim: the backtick fence is longer than any backtick run in
// `s`; newlines become spaces. With `in_table`, '|' is escaped so a table cell stays one cell.
std::string md_code(std::string_view s, bool in_table = false);

// A fenced code block (with info string `lang`) holding `s`; the fence is longer than any
// backtick run in `s`.
std::string md_code_block(std::string_view s, std::string_view lang = "");

// `s` as plain Markdown text: the characters Markdown or HTML would interpret are
// backslash-escaped, newlines become spaces.
std::string md_text(std::string_view s);

}  // namespace sdpa::reports
