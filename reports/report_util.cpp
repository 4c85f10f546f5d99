#include "reports/report_util.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <tuple>

namespace sdpa::report {

std::map<std::string, StatusCounts> counts_by_backend(const RunSummary& run) {
  std::map<std::string, StatusCounts> m;
  for (const auto& r : run.records) m[r.backend].add(r.status);
  return m;
}

// ---- err/tol histogram
// ----------------------------------------------------------------------------

const std::array<const char*, kRatioBins>& ratio_bin_labels() {
  static const std::array<const char*, kRatioBins> labels = {
      "0", "<1e-4", "1e-4..1e-3", "1e-3..1e-2", "1e-2..0.1", "0.1..1", ">1"};
  return labels;
}

std::size_t ratio_bin(double r) {
  if (std::isnan(r) || r > 1) return 6;
  if (r <= 0) return 0;
  if (r < 1e-4) return 1;
  if (r < 1e-3) return 2;
  if (r < 1e-2) return 3;
  if (r < 1e-1) return 4;
  return 5;
}

std::map<std::string, std::array<std::int64_t, kRatioBins>> ratio_histograms(
    const RunSummary& run) {
  std::map<std::string, std::array<std::int64_t, kRatioBins>> m;
  for (const auto& r : run.records) {
    if (!has_ratio(r.status)) continue;
    auto& h = m[r.backend];  // value-initialised: all zeros
    ++h[ratio_bin(r.worst_ratio)];
  }
  return m;
}

std::vector<const CaseRecord*> worst_cases(const RunSummary& run, std::size_t n) {
  std::vector<const CaseRecord*> v;
  for (const auto& r : run.records) {
    if (has_ratio(r.status) && (std::isnan(r.worst_ratio) || r.worst_ratio > 0)) v.push_back(&r);
  }
  auto before = [](const CaseRecord* a, const CaseRecord* b) {
    bool an = std::isnan(a->worst_ratio), bn = std::isnan(b->worst_ratio);
    if (an != bn) return an;
    if (!an && a->worst_ratio != b->worst_ratio) return a->worst_ratio > b->worst_ratio;
    return std::tie(a->backend, a->case_id) < std::tie(b->backend, b->case_id);
  };
  std::size_t k = std::min(n, v.size());
  std::partial_sort(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end(), before);
  v.resize(k);
  return v;
}

// ---- Backend x feature matrix -----------------------------------------------------------------

std::vector<std::string> feature_columns(const RunSummary& run) {
  std::set<std::string> dtypes, rest;
  for (const auto& r : run.records) {
    for (const auto& f : r.features) {
      if (f == "all") continue;
      (f.rfind("dtype=", 0) == 0 ? dtypes : rest).insert(f);
    }
  }
  std::vector<std::string> cols = {"all"};
  cols.insert(cols.end(), dtypes.begin(), dtypes.end());
  cols.insert(cols.end(), rest.begin(), rest.end());
  return cols;
}

std::map<std::string, std::map<std::string, FeatureCell>> feature_matrix(const RunSummary& run) {
  std::map<std::string, std::map<std::string, FeatureCell>> m;
  for (const auto& r : run.records) {
    auto add = [&](FeatureCell& c) {
      if (r.status == Status::pass || r.status == Status::quality_warning) {
        ++c.pass;
      } else if (is_failure(r.status)) {
        ++c.fail;
      } else if (r.status == Status::not_supported) {
        ++c.not_supported;
      } else {
        ++c.other;
      }
    };
    auto& row = m[r.backend];
    add(row["all"]);
    std::set<std::string> seen;  // a tag listed twice counts once
    for (const auto& f : r.features) {
      if (f != "all" && seen.insert(f).second) add(row[f]);
    }
  }
  return m;
}

// ---- Text
// ----------------------------------------------------------------------------------------

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

// ---- Markdown ----------------------------------------------------------------------------------

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

}  // namespace sdpa::report
