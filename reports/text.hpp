// Text for the report formats: valid UTF-8, control characters, XML / HTML escaping,
// truncation and number formatting.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sdpa::reports {

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

}  // namespace sdpa::reports
