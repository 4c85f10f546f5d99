#include "reference/mha_spec.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <stdexcept>
#include <vector>

#include "core/spec_fields.hpp"

namespace sdpa::reference {
namespace {

std::string dname(DType t) { return std::string(dtype_name(t)); }

}  // namespace

bool same_embed_dims(const MhaProblem& m) {
  return key_dim(m) == m.embed_dim && value_dim(m) == m.embed_dim;
}

std::string validate(const MhaCall& c) {
  if (auto r = validate(c.mha); !r.empty()) return r;
  if (c.self_attention && (c.mha.len_q != c.mha.len_kv || !same_embed_dims(c.mha))) {
    return "self: self-attention (query is key is value) needs l == s and kdim == vdim == e";
  }
  if (!c.batched && c.mha.batch != 1) {
    return "batched: unbatched (2-D) inputs have batch 1, got b" + std::to_string(c.mha.batch);
  }
  if (!c.need_weights_explicit && !c.mha.need_weights) {
    return "need_weights: false although not given (PyTorch's default is true)";
  }
  return "";
}

// ------------------------------------------------------------------ spec strings

namespace {

struct SpecError {
  std::string message;
};

[[noreturn]] void fail(const std::string& field, const std::string& what) {
  throw SpecError{"MHA spec field '" + field + "': " + what};
}

std::int64_t parse_size(const std::string& field, std::string_view s) {
  std::int64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size() || v < 0) {
    fail(field, "expected a non-negative integer, got '" + std::string(s) + "'");
  }
  return v;
}

bool parse_flag(const std::string& field, std::string_view s) {
  if (s == "0") return false;
  if (s == "1") return true;
  fail(field, "expected 0 or 1, got '" + std::string(s) + "'");
}

MhaMaskKind parse_mask(const std::string& field, std::string_view s) {
  if (s == "none") return MhaMaskKind::none;
  if (s == "bool") return MhaMaskKind::boolean;
  if (s == "float") return MhaMaskKind::floating;
  fail(field, "expected none, bool or float, got '" + std::string(s) + "'");
}

const char* mask_name(MhaMaskKind k) {
  return k == MhaMaskKind::none ? "none" : k == MhaMaskKind::boolean ? "bool" : "float";
}

const std::vector<std::string>& spec_fields() {
  static const std::vector<std::string> f = {
      "e",        "h",         "b",           "l",
      "s",        "dtype",     "wdtype",      "kdim",
      "vdim",     "bias",      "add_bias_kv", "add_zero_attn",
      "kpm",      "mask",      "mask_rank",   "need_weights",
      "avg",      "is_causal", "p",           "batch_first",
      "training", "self",      "batched",     "fastpath",
      "autocast", "grad",      "nested"};
  return f;
}

MhaCall parse_spec(std::string_view spec) {
  if (spec.empty()) fail("<spec>", "the MHA spec is empty");
  // Tokens split on '.'; a segment starting with a digit continues the previous token (p=0.1).
  std::vector<std::string> tokens;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= spec.size(); ++i) {
    if (i < spec.size() && spec[i] != '.') continue;
    const std::string seg(spec.substr(start, i - start));
    start = i + 1;
    if (!seg.empty() && seg[0] >= '0' && seg[0] <= '9' && !tokens.empty()) {
      tokens.back() += "." + seg;
    } else if (seg.empty()) {
      fail("<spec>", "empty field (two dots in a row, or a leading/trailing dot)");
    } else {
      tokens.push_back(seg);
    }
  }
  MhaCall c;
  auto& m = c.mha;
  std::set<std::string> seen;
  std::optional<bool> self;
  bool wdtype_given = false;
  for (const auto& tok : tokens) {
    auto [key, value] = split_spec_field(tok);
    if (tok.find('=') == std::string::npos && !parse_dtype(tok)) {
      if (key != "e" && key != "h" && key != "b" && key != "l" && key != "s") {
        fail(key.empty() ? tok : key,
             "unknown field '" + tok + "' (sizes are e, h, b, l, s; other fields are key=value)");
      }
    }
    if (std::find(spec_fields().begin(), spec_fields().end(), key) == spec_fields().end()) {
      std::string known;
      for (const auto& f : spec_fields()) known += (known.empty() ? "" : ", ") + f;
      fail(key, "unknown field (known: " + known + ")");
    }
    if (!seen.insert(key).second) fail(key, "given twice");
    if (key == "e") {
      m.embed_dim = parse_size(key, value);
    } else if (key == "h") {
      m.num_heads = parse_size(key, value);
    } else if (key == "b") {
      m.batch = parse_size(key, value);
    } else if (key == "l") {
      m.len_q = parse_size(key, value);
    } else if (key == "s") {
      m.len_kv = parse_size(key, value);
    } else if (key == "dtype" || key == "wdtype") {
      const auto t = parse_dtype(value);
      if (!t) fail(key, "expected f64, f32, f16 or bf16, got '" + value + "'");
      (key == "dtype" ? c.dtype : c.param_dtype) = *t;
      if (key == "wdtype") wdtype_given = true;
    } else if (key == "kdim") {
      m.kdim = parse_size(key, value);
    } else if (key == "vdim") {
      m.vdim = parse_size(key, value);
    } else if (key == "bias") {
      m.bias = parse_flag(key, value);
    } else if (key == "add_bias_kv") {
      m.add_bias_kv = parse_flag(key, value);
    } else if (key == "add_zero_attn") {
      m.add_zero_attn = parse_flag(key, value);
    } else if (key == "kpm") {
      m.key_padding_mask = parse_mask(key, value);
    } else if (key == "mask") {
      m.attn_mask = parse_mask(key, value);
    } else if (key == "mask_rank") {
      if (value != "2" && value != "3") fail(key, "expected 2 or 3, got '" + value + "'");
      m.attn_mask_rank = value == "2" ? 2 : 3;
    } else if (key == "need_weights") {
      m.need_weights = parse_flag(key, value);
      c.need_weights_explicit = true;
    } else if (key == "avg") {
      m.average_attn_weights = parse_flag(key, value);
    } else if (key == "is_causal") {
      m.is_causal = parse_flag(key, value);
    } else if (key == "p") {
      double v = 0;
      auto r = std::from_chars(value.data(), value.data() + value.size(), v);
      if (value.empty() || r.ec != std::errc() || r.ptr != value.data() + value.size() ||
          !std::isfinite(v)) {
        fail(key, "expected a number, got '" + value + "'");
      }
      m.dropout_p = v;
    } else if (key == "batch_first") {
      m.batch_first = parse_flag(key, value);
    } else if (key == "training") {
      c.training = parse_flag(key, value);
    } else if (key == "self") {
      self = parse_flag(key, value);
    } else if (key == "batched") {
      c.batched = parse_flag(key, value);
    } else if (key == "fastpath") {
      c.fastpath_enabled = parse_flag(key, value);
    } else if (key == "autocast") {
      c.autocast = parse_flag(key, value);
    } else if (key == "grad") {
      c.requires_grad = parse_flag(key, value);
    } else if (key == "nested") {
      c.nested = parse_flag(key, value);
    }
  }
  for (const char* req : {"e", "h"}) {
    if (!seen.count(req)) fail(req, "missing (required fields: e, h)");
  }
  if (!seen.count("l")) m.len_q = 1;
  if (!seen.count("s")) m.len_kv = m.len_q;
  if (!seen.count("b")) m.batch = 1;
  if (!wdtype_given) c.param_dtype = c.dtype;
  m.use_separate_proj_weight = !same_embed_dims(m);
  c.self_attention = self.value_or(m.len_q == m.len_kv && same_embed_dims(m));
  if (auto r = validate(c); !r.empty()) throw SpecError{"MHA spec: invalid call: " + r};
  return c;
}

}  // namespace

std::variant<MhaCall, std::string> parse_mha_spec(std::string_view spec) {
  try {
    return parse_spec(spec);
  } catch (const SpecError& e) {
    return e.message;
  }
}

MhaCall parse_mha_spec_or_throw(std::string_view spec) {
  auto r = parse_mha_spec(spec);
  if (auto* e = std::get_if<std::string>(&r)) throw std::invalid_argument(*e);
  return std::get<MhaCall>(std::move(r));
}

std::string format_mha_spec(const MhaCall& c) {
  const auto& m = c.mha;
  std::string s;
  for (auto [name, v] :
       {std::pair{"e", m.embed_dim}, std::pair{"h", m.num_heads}, std::pair{"b", m.batch},
        std::pair{"l", m.len_q}, std::pair{"s", m.len_kv}}) {
    s.append(s.empty() ? "" : ".").append(name).append(std::to_string(v));
  }
  s.append(".").append(dtype_name(c.dtype));
  auto add = [&](const std::string& t) { s += "." + t; };
  auto flag = [&](const char* name, bool v, bool def) {
    if (v != def) add(std::string(name) + "=" + (v ? "1" : "0"));
  };
  if (c.param_dtype != c.dtype) add("wdtype=" + dname(c.param_dtype));
  if (m.kdim) add("kdim=" + std::to_string(*m.kdim));
  if (m.vdim) add("vdim=" + std::to_string(*m.vdim));
  flag("bias", m.bias, true);
  flag("add_bias_kv", m.add_bias_kv, false);
  flag("add_zero_attn", m.add_zero_attn, false);
  if (m.key_padding_mask != MhaMaskKind::none)
    add(std::string("kpm=") + mask_name(m.key_padding_mask));
  if (m.attn_mask != MhaMaskKind::none) add(std::string("mask=") + mask_name(m.attn_mask));
  if (m.attn_mask_rank != 2) add("mask_rank=" + std::to_string(m.attn_mask_rank));
  if (c.need_weights_explicit) add(std::string("need_weights=") + (m.need_weights ? "1" : "0"));
  flag("avg", m.average_attn_weights, true);
  flag("is_causal", m.is_causal, false);
  if (m.dropout_p != 0) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, m.dropout_p);
    add("p=" + std::string(buf, r.ptr));
  }
  flag("batch_first", m.batch_first, false);
  flag("training", c.training, false);
  flag("self", c.self_attention, m.len_q == m.len_kv && same_embed_dims(m));
  flag("batched", c.batched, true);
  flag("fastpath", c.fastpath_enabled, true);
  flag("autocast", c.autocast, false);
  flag("grad", c.requires_grad, false);
  flag("nested", c.nested, false);
  return s;
}

}  // namespace sdpa::reference
