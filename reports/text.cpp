#include "reports/text.hpp"

#include <cmath>
#include <cstdio>

namespace sdpa::reports {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence starting at s[i], or 0 if it is invalid.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  if (c < 0x80) return 1;
  std::size_t len;
  char32_t cp;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2, cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3, cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4, cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return 0;  // overlong, surrogate
  if (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
  return len;
}

}  // namespace

std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    std::size_t len = utf8_sequence(s, i);
    if (len == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

std::string clean_text(std::string_view s) {
  std::string in = valid_utf8(s), out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(in[i]);
    if (c == '\r') {
      out += '\n';
      if (i + 1 < in.size() && in[i + 1] == '\n') ++i;
    } else if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7F) {
      out += kReplacement;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string markup_escape(std::string_view s, bool attribute) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  for (std::size_t i = 0; i < s.size();) {
    std::size_t len = utf8_sequence(s, i);
    if (len == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    std::string_view seq = s.substr(i, len);
    i += len;
    unsigned char c = static_cast<unsigned char>(seq[0]);
    if (len == 1) {
      switch (c) {
        case '&':
          out += "&amp;";
          continue;
        case '<':
          out += "&lt;";
          continue;
        case '>':
          out += "&gt;";
          continue;
        case '"':
          out += "&quot;";
          continue;
        case '\'':
          out += "&#39;";
          continue;
        case '\t':
          out += attribute ? "&#9;" : "\t";
          continue;
        case '\n':
          out += attribute ? "&#10;" : "\n";
          continue;
        case '\r':
          out += "&#13;";  // a parser would turn a literal CR into LF
          continue;
        default:
          if (c < 0x20 || c == 0x7F) {
            out += kReplacement;
            continue;
          }
      }
    }
    bool c1_control = len == 2 && c == 0xC2 && static_cast<unsigned char>(seq[1]) < 0xA0;
    bool nonchar = seq == "\xEF\xBF\xBE" || seq == "\xEF\xBF\xBF";  // U+FFFE, U+FFFF
    if (c1_control || nonchar) {
      out += kReplacement;
    } else {
      out.append(seq);
    }
  }
  return out;
}

std::string truncate_utf8(std::string_view s, std::size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return std::string(s.substr(0, cut)) + "...";
}

std::string first_line(std::string_view s) {
  return std::string(s.substr(0, s.find_first_of("\r\n")));
}

std::string format_number(double x, int digits) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, x);
  return buf;
}

std::string format_seconds(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) seconds = 0;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%.3f", seconds);
  return buf;
}

}  // namespace sdpa::reports
