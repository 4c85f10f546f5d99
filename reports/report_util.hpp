// Shared pieces of the report writers: escaping for each output format, number formatting, and
// the tallies every report shows (counts per backend, err/tol bins, worst cases, the backend x
// feature matrix). Reports never judge: they only group and count what conformance decided.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "conformance/run_record.hpp"

namespace sdpa::report {

// ---- Tallies (the status vocabulary itself is conformance/status.hpp) -------------------------

// Counts per backend, backends sorted by name.
std::map<std::string, StatusCounts> counts_by_backend(const RunSummary& run);


// ---- err/tol histogram
// ----------------------------------------------------------------------------

// Log-scale bins of worst_ratio: "0" (exact), "<1e-4", "1e-4..1e-3", "1e-3..1e-2",
// "1e-2..0.1", "0.1..1" (1 included: a ratio of 1 passes) and ">1" (the bound is broken; NaN and
// infinity land here too).
inline constexpr std::size_t kRatioBins = 7;
const std::array<const char*, kRatioBins>& ratio_bin_labels();
std::size_t ratio_bin(double ratio);

// Per backend (sorted by name): the number of has_ratio() records in each bin.
std::map<std::string, std::array<std::int64_t, kRatioBins>> ratio_histograms(const RunSummary& run);

// The `n` records with the highest worst_ratio among has_ratio() records with a ratio above 0
// (NaN ranks first, then +inf), ties broken by backend then case ID.
std::vector<const CaseRecord*> worst_cases(const RunSummary& run, std::size_t n);

// ---- Backend x feature matrix -----------------------------------------------------------------

// One matrix cell: PASS and QUALITY_WARNING count as pass; FAIL, CRASH and TIMEOUT as fail;
// INVALID and MISTRUSTED as other.
struct FeatureCell {
  std::int64_t pass = 0, fail = 0, not_supported = 0, other = 0;
  std::int64_t total() const { return pass + fail + not_supported + other; }
};

// The feature column "all" (every record) first, then the dtype=... tags, then the rest, each
// group sorted by name.
std::vector<std::string> feature_columns(const RunSummary& run);

// matrix[backend][feature], including the "all" column.
std::map<std::string, std::map<std::string, FeatureCell>> feature_matrix(const RunSummary& run);

// ---- Text
// ----------------------------------------------------------------------------------------

// `s` with every invalid UTF-8 sequence replaced by U+FFFD.
std::string valid_utf8(std::string_view s);

// `s` as valid UTF-8 plain text: CR LF and lone CR become LF, other control characters (except
// tab and LF) and invalid UTF-8 become U+FFFD.
std::string clean_text(std::string_view s);

// Escaped for XML 1.0 or HTML character data and attribute values: & < > " ' become
// references, invalid UTF-8 and the control characters XML 1.0 cannot hold become U+FFFD. With
// `attribute`, tab, newline and carriage return become character references too (a parser would
// otherwise normalise them to spaces).
std::string markup_escape(std::string_view s, bool attribute = false);

// At most `max_bytes` bytes of `s`, cut at a code-point boundary, with "..." appended when cut.
std::string truncate_utf8(std::string_view s, std::size_t max_bytes);

// The first line of `s` (up to the first '\n' or '\r').
std::string first_line(std::string_view s);

// %.*g of x with `digits` significant digits; "inf", "-inf", "nan" when not finite.
std::string format_number(double x, int digits = 3);

// Seconds as a plain decimal with 3 decimals, never negative nor exponent form ("0.000" for
// NaN): the form JUnit consumers accept.
std::string format_seconds(double seconds);

// ---- Markdown ----------------------------------------------------------------------------------

// An inline code span holding `s` verbatim: the backtick fence is longer than any backtick run in
// `s`; newlines become spaces. With `in_table`, '|' is escaped so a table cell stays one cell.
std::string md_code(std::string_view s, bool in_table = false);

// A fenced code block (with info string `lang`) holding `s`; the fence is longer than any
// backtick run in `s`.
std::string md_code_block(std::string_view s, std::string_view lang = "");

// `s` as plain Markdown text: the characters Markdown or HTML would interpret are
// backslash-escaped, newlines become spaces.
std::string md_text(std::string_view s);

}  // namespace sdpa::report
