#include "core/case_id.hpp"

#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <vector>

#include "core/spec_fields.hpp"

namespace sdpa {
namespace {

// ---------------------------------------------------------------- printing

std::string fmt_double(double x) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, x);  // shortest round-trip form
  return std::string(buf, r.ptr);
}

std::string join_ints(const std::vector<std::int64_t>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += '_';
    s += std::to_string(v[i]);
  }
  return s;
}

std::string align_name(Align a) { return a == Align::top_left ? "tl" : "br"; }

bool same_layout(const TensorLayout& a, const TensorLayout& b) {
  return a.stride == b.stride && a.base_offset == b.base_offset;
}

bool matches_named(const Problem& p, LayoutKind kind, std::int64_t* gap) {
  std::int64_t row_width = p.head_dim_qk;
  if (kind == LayoutKind::bshd && __builtin_mul_overflow(p.heads_q, p.head_dim_qk, &row_width)) {
    row_width = std::numeric_limits<std::int64_t>::max();  // apply_layout saturates too
  }
  if (__builtin_sub_overflow(p.q.stride[2], row_width, gap) || *gap < 0) return false;
  Problem t = p;
  apply_layout(t, kind, *gap, p.q.base_offset);
  return same_layout(t.q, p.q) && same_layout(t.k, p.k) && same_layout(t.v, p.v) &&
         same_layout(t.o, p.o);
}

std::string explicit_layout(const TensorLayout& t) {
  return std::to_string(t.stride[0]) + "_" + std::to_string(t.stride[1]) + "_" +
         std::to_string(t.stride[2]) + "_" + std::to_string(t.stride[3]) + "_" +
         std::to_string(t.base_offset);
}

// ---------------------------------------------------------------- parsing

struct ParseFailure {
  CaseIdError error;
};

[[noreturn]] void fail(const std::string& field, const std::string& message) {
  throw ParseFailure{{field, "case ID field '" + field + "': " + message}};
}

std::int64_t parse_int(const std::string& field, std::string_view s, bool allow_negative) {
  std::int64_t v = 0;
  if (s.empty()) fail(field, "missing number");
  if (!allow_negative && s[0] == '-')
    fail(field, "must not be negative, got '" + std::string(s) + "'");
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec == std::errc::result_out_of_range)
    fail(field, "number out of range '" + std::string(s) + "'");
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) {
    fail(field, "expected an integer, got '" + std::string(s) + "'");
  }
  return v;
}

std::uint64_t parse_uint(const std::string& field, std::string_view s) {
  std::uint64_t v = 0;
  if (s.empty() || s[0] == '-' || s[0] == '+')
    fail(field, "expected an unsigned integer, got '" + std::string(s) + "'");
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec == std::errc::result_out_of_range)
    fail(field, "number out of range '" + std::string(s) + "'");
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) {
    fail(field, "expected an unsigned integer, got '" + std::string(s) + "'");
  }
  return v;
}

double parse_real(const std::string& field, std::string_view s) {
  double v = 0;
  if (s.empty() || s[0] == '+') fail(field, "expected a number, got '" + std::string(s) + "'");
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || !std::isfinite(v)) {
    fail(field, "expected a finite number, got '" + std::string(s) + "'");
  }
  return v;
}

Align parse_align(const std::string& field, std::string_view s) {
  if (s == "tl") return Align::top_left;
  if (s == "br") return Align::bottom_right;
  fail(field, "expected 'tl' or 'br', got '" + std::string(s) + "'");
}

std::vector<std::int64_t> parse_int_list(const std::string& field, std::string_view s) {
  std::vector<std::int64_t> v;
  for (auto part : split(s, '_')) v.push_back(parse_int(field, part, false));
  return v;
}

TensorLayout parse_explicit_layout(const std::string& field, std::string_view s) {
  auto parts = split(s, '_');
  if (parts.size() != 5)
    fail(field, "expected 5 values s0_s1_s2_s3_offset, got '" + std::string(s) + "'");
  TensorLayout t;
  for (int k = 0; k < 4; ++k) t.stride[k] = parse_int(field, parts[k], false);
  t.base_offset = parse_int(field, parts[4], false);
  return t;
}

// Tokens: split on '.', and a segment that starts with a digit continues the previous
// token (it is the fractional part of a number such as p0.2 or scale=0.125).
std::vector<std::string> tokenize(std::string_view id) {
  std::vector<std::string> tokens;
  for (auto seg : split(id, '.')) {
    if (!seg.empty() && seg[0] >= '0' && seg[0] <= '9' && !tokens.empty()) {
      tokens.back() += '.';
      tokens.back() += seg;
    } else {
      if (seg.empty()) fail("<id>", "empty field (two dots in a row, or a leading/trailing dot)");
      tokens.emplace_back(seg);
    }
  }
  return tokens;
}

Case parse(std::string_view id) {
  if (id.empty()) fail("<id>", "the case ID is empty");
  Case c;
  Problem& p = c.problem;
  std::set<std::string> seen;
  std::optional<LayoutKind> layout_kind;
  std::int64_t gap = 0, offset = 0;
  std::map<std::string, TensorLayout> explicit_layouts;
  bool have_dtype = false;

  for (const std::string& tok : tokenize(id)) {
    auto [key, value] = split_spec_field(tok);
    // Also for "=x": an empty name would give an error that names no field.
    if (key.empty()) fail(tok, "not a field (fields start with a lower-case name)");
    if (!seen.insert(key).second) fail(key, "given twice");

    static const std::set<std::string> flags = {"packed", "lse", "attnw", "bwd", "dbias"};
    static const std::set<std::string> numeric = {"b",  "hq", "hkv",   "l",    "s",   "dqk",
                                                  "dv", "p",  "dseed", "doff", "seed"};
    const bool has_eq = tok.find('=') != std::string::npos;
    if (flags.count(key)) {
      if (!value.empty() || has_eq) fail(key, "is a flag and takes no value");
    } else if (numeric.count(key)) {
      if (has_eq) fail(key, "is written without '=', e.g. " + key + "4");
    } else if (key != "dtype" && !has_eq) {
      fail(key, "unknown field '" + tok + "'");
    }

    if (key == "b")
      p.batch = parse_int(key, value, false);
    else if (key == "hq")
      p.heads_q = parse_int(key, value, false);
    else if (key == "hkv")
      p.heads_kv = parse_int(key, value, false);
    else if (key == "l")
      p.len_q = parse_int(key, value, false);
    else if (key == "s")
      p.len_kv = parse_int(key, value, false);
    else if (key == "dqk")
      p.head_dim_qk = parse_int(key, value, false);
    else if (key == "dv")
      p.head_dim_v = parse_int(key, value, false);
    else if (key == "dtype") {
      const auto t = parse_dtype(value);  // reached for "dtype=..." spellings too
      if (!t) fail(key, "expected one of f64, f32, f16, bf16, got '" + value + "'");
      p.dtype = *t;
      have_dtype = true;
    } else if (key == "causal") {
      p.causal =
          parse_align(key, value) == Align::top_left ? Causal::top_left : Causal::bottom_right;
    } else if (key == "win") {
      auto parts = split(value, '_');
      if (parts.size() != 3)
        fail(key, "expected left_right_align, e.g. win=4_0_br, got '" + value + "'");
      p.window.enabled = true;
      p.window.left = parse_int(key, parts[0], true);
      p.window.right = parse_int(key, parts[1], true);
      p.window.align = parse_align(key, parts[2]);
      if (p.window.left < -1 || p.window.right < -1) fail(key, "unbounded is written -1");
    } else if (key == "mask") {
      if (value == "bool")
        p.mask = MaskKind::boolean;
      else if (value == "add")
        p.mask = MaskKind::additive;
      else
        fail(key, "expected 'bool' or 'add', got '" + value + "'");
    } else if (key == "mbc") {
      const std::string dims = "bhls";
      for (char ch : value) {
        auto pos = dims.find(ch);
        if (pos == std::string::npos)
          fail(key, "broadcast dimensions are letters of 'bhls', got '" + value + "'");
        if (p.mask_broadcast & (1u << pos)) fail(key, "dimension repeated in '" + value + "'");
        p.mask_broadcast |= static_cast<std::uint8_t>(1u << pos);
      }
      if (value.empty()) fail(key, "empty broadcast list");
    } else if (key == "qlen")
      p.seqlens_q = parse_int_list(key, value);
    else if (key == "kvlen")
      p.seqlens_kv = parse_int_list(key, value);
    else if (key == "packed")
      p.packed = true;
    else if (key == "softcap")
      p.softcap = parse_real(key, value);
    else if (key == "scale")
      p.scale = parse_real(key, value);
    else if (key == "p")
      p.dropout_p = parse_real(key, value);
    else if (key == "dseed")
      p.dropout_seed = parse_uint(key, value);
    else if (key == "doff")
      p.dropout_offset = parse_uint(key, value);
    else if (key == "lay") {
      if (value == "bhsd")
        layout_kind = LayoutKind::bhsd;
      else if (value == "bshd")
        layout_kind = LayoutKind::bshd;
      else
        fail(key, "expected 'bhsd' or 'bshd', got '" + value + "'");
    } else if (key == "gap")
      gap = parse_int(key, value, false);
    else if (key == "off")
      offset = parse_int(key, value, false);
    else if (key == "qst" || key == "kst" || key == "vst" || key == "ost") {
      explicit_layouts[key] = parse_explicit_layout(key, value);
    } else if (key == "lse")
      p.want_lse = true;
    else if (key == "attnw")
      p.want_weights = true;
    else if (key == "bwd")
      p.backward = true;
    else if (key == "dbias")
      p.bias_grad = true;
    else if (key == "seed")
      c.data.seed = parse_uint(key, value);
    else if (key == "gen") {
      if (value.empty()) fail(key, "empty generator name");
      for (char ch : value) {
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_')) {
          fail(key, "generator names use [a-z0-9_], got '" + value + "'");
        }
      }
      c.data.generator = value;
    } else {
      fail(key, "unknown field '" + tok + "'");
    }
  }
  for (const char* required : {"b", "hq", "l", "s", "dqk"}) {
    if (!seen.count(required)) fail(required, "missing (required fields: b, hq, l, s, dqk, dtype)");
  }
  if (!have_dtype) fail("dtype", "missing: one of f64, f32, f16, bf16");
  if (!seen.count("hkv")) p.heads_kv = p.heads_q;
  if (!seen.count("dv")) p.head_dim_v = p.head_dim_qk;
  if (!explicit_layouts.empty()) {
    if (layout_kind || seen.count("gap") || seen.count("off")) {
      fail(explicit_layouts.begin()->first, "explicit strides cannot be combined with lay/gap/off");
    }
    for (const char* t : {"qst", "kst", "vst", "ost"}) {
      if (!explicit_layouts.count(t)) fail(t, "explicit strides need all of qst, kst, vst, ost");
    }
    p.q = explicit_layouts["qst"];
    p.k = explicit_layouts["kst"];
    p.v = explicit_layouts["vst"];
    p.o = explicit_layouts["ost"];
  } else {
    apply_layout(p, layout_kind.value_or(LayoutKind::bhsd), gap, offset);
  }
  return c;
}

}  // namespace

std::string format_case_id(const Case& c) {
  const Problem& p = c.problem;
  std::string s;
  auto add = [&](const std::string& t) {
    if (!s.empty()) s += '.';
    s += t;
  };
  // name + value without operator+ (GCC 12 reports a false -Wrestrict on "x" + string).
  auto field = [&](const char* name, const std::string& value) {
    if (!s.empty()) s += '.';
    s.append(name).append(value);
  };
  field("b", std::to_string(p.batch));
  field("hq", std::to_string(p.heads_q));
  field("hkv", std::to_string(p.heads_kv));
  field("l", std::to_string(p.len_q));
  field("s", std::to_string(p.len_kv));
  field("dqk", std::to_string(p.head_dim_qk));
  field("dv", std::to_string(p.head_dim_v));
  add(std::string(dtype_name(p.dtype)));
  if (p.causal != Causal::none) {
    add(std::string("causal=") + (p.causal == Causal::top_left ? "tl" : "br"));
  }
  if (p.window.enabled) {
    field("win=", std::to_string(p.window.left) + "_" + std::to_string(p.window.right) + "_" +
        align_name(p.window.align));
  }
  if (p.mask != MaskKind::none) add(p.mask == MaskKind::boolean ? "mask=bool" : "mask=add");
  if (p.mask_broadcast) {
    std::string dims;
    const char* names = "bhls";
    for (int k = 0; k < 4; ++k) {
      if (p.mask_broadcast & (1u << k)) dims += names[k];
    }
    field("mbc=", dims);
  }
  if (!p.seqlens_q.empty()) field("qlen=", join_ints(p.seqlens_q));
  if (!p.seqlens_kv.empty()) field("kvlen=", join_ints(p.seqlens_kv));
  if (p.packed) add("packed");
  if (p.softcap != 0) field("softcap=", fmt_double(p.softcap));
  if (p.scale) field("scale=", fmt_double(*p.scale));
  if (p.dropout_p != 0) field("p", fmt_double(p.dropout_p));
  if (p.dropout_seed != 0) field("dseed", std::to_string(p.dropout_seed));
  if (p.dropout_offset != 0) field("doff", std::to_string(p.dropout_offset));
  std::int64_t gap = 0;
  if (matches_named(p, LayoutKind::bhsd, &gap)) {
    if (gap) field("gap=", std::to_string(gap));
    if (p.q.base_offset) field("off=", std::to_string(p.q.base_offset));
  } else if (matches_named(p, LayoutKind::bshd, &gap)) {
    add("lay=bshd");
    if (gap) field("gap=", std::to_string(gap));
    if (p.q.base_offset) field("off=", std::to_string(p.q.base_offset));
  } else {
    field("qst=", explicit_layout(p.q));
    field("kst=", explicit_layout(p.k));
    field("vst=", explicit_layout(p.v));
    field("ost=", explicit_layout(p.o));
  }
  if (p.want_lse) add("lse");
  if (p.want_weights) add("attnw");
  if (p.backward) add("bwd");
  if (p.bias_grad) add("dbias");
  field("seed", std::to_string(c.data.seed));
  field("gen=", c.data.generator);
  return s;
}

std::variant<Case, CaseIdError> parse_case_id(std::string_view id) {
  try {
    return parse(id);
  } catch (const ParseFailure& f) {
    return f.error;
  }
}

Case parse_case_id_or_throw(std::string_view id) {
  auto r = parse_case_id(id);
  if (auto* e = std::get_if<CaseIdError>(&r)) throw std::invalid_argument(e->message);
  return std::get<Case>(std::move(r));
}

}  // namespace sdpa
