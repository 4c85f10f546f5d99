#include "conformance/engine/shrink.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <stdexcept>

#include "conformance/engine/case_sampler.hpp"
#include "core/case_id.hpp"

namespace sdpa::conformance {
namespace {

// The fields of an ID: '.'-separated segments, a segment starting with a digit or '-'
// continuing the previous one ("p0.25", "scale=-0.3").
std::vector<std::string> fields_of(const std::string& id) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= id.size(); ++i) {
    if (i < id.size() && id[i] != '.') continue;
    std::string seg = id.substr(start, i - start);
    start = i + 1;
    if (!out.empty() && !seg.empty() && (std::isdigit(static_cast<unsigned char>(seg[0])))) {
      out.back() += "." + seg;
    } else {
      out.push_back(seg);
    }
  }
  return out;
}

std::string join(const std::vector<std::string>& f) {
  std::string s;
  for (const auto& x : f) s += (s.empty() ? "" : ".") + x;
  return s;
}

// The name of a field: "causal" of "causal=tl", "b" of "b2", "p" of "p0.25".
std::string name_of(const std::string& field) {
  const auto eq = field.find('=');
  if (eq != std::string::npos) return field.substr(0, eq);
  std::size_t i = 0;
  while (i < field.size() && std::isalpha(static_cast<unsigned char>(field[i]))) ++i;
  return field.substr(0, i);
}

// Canonical ID of `fields` when it parses into a valid problem; "" otherwise.
std::string canonical_if_valid(const std::vector<std::string>& fields) {
  const auto parsed = parse_case_id(join(fields));
  if (!std::holds_alternative<Case>(parsed)) return "";
  const Case& c = std::get<Case>(parsed);
  if (!validate(c.problem).empty()) return "";
  return format_case_id(c);
}

// Per-batch length lists made to fit B, L and S again after a size changed.
void fit_lengths(std::vector<std::string>& fields) {
  std::int64_t b = 1, l = 1, s = 1;
  for (const auto& f : fields) {
    const std::string n = name_of(f);
    if (f.find('=') != std::string::npos) continue;
    if (n == "b") b = std::stoll(f.substr(1));
    if (n == "l") l = std::stoll(f.substr(1));
    if (n == "s") s = std::stoll(f.substr(1));
  }
  for (auto& f : fields) {
    const std::string n = name_of(f);
    if (n != "qlen" && n != "kvlen") continue;
    const std::int64_t cap = n == "qlen" ? l : s;
    std::vector<std::int64_t> v;
    std::string rest = f.substr(f.find('=') + 1);
    for (std::size_t pos = 0; pos <= rest.size();) {
      const auto u = rest.find('_', pos);
      const std::string tok =
          rest.substr(pos, u == std::string::npos ? std::string::npos : u - pos);
      if (!tok.empty()) v.push_back(std::min<std::int64_t>(std::stoll(tok), cap));
      if (u == std::string::npos) break;
      pos = u + 1;
    }
    v.resize(static_cast<std::size_t>(std::max<std::int64_t>(b, 0)), cap);
    std::string out = n + "=";
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "_" : "") + std::to_string(v[i]);
    f = v.empty() ? "" : out;
  }
  fields.erase(std::remove(fields.begin(), fields.end(), std::string()), fields.end());
}

}  // namespace

CaseSize case_size(const std::string& case_id) {
  const Case c = parse_case_id_or_throw(case_id);
  const Problem& p = c.problem;
  return {problem_work(p), fields_of(format_case_id(c)).size(),
          p.batch + p.heads_q + p.heads_kv + p.len_q + p.len_kv + p.head_dim_qk + p.head_dim_v,
          int(c.data.generator != "normal") + int(c.data.seed != 0)};
}

std::vector<std::string> shrink_candidates(const std::string& case_id) {
  const std::string canonical = format_case_id(parse_case_id_or_throw(case_id));
  const std::vector<std::string> fields = fields_of(canonical);
  std::vector<std::vector<std::string>> raw;

  // Whole features first: each optional field removed (with the fields that go with it).
  static const std::set<std::string> optional = {
      "causal", "win",   "mask", "mbc", "qlen", "kvlen", "packed", "softcap", "scale",
      "p",      "dseed", "doff", "lay", "gap",  "off",   "lse",    "attnw", "bwd"};
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const std::string n = name_of(fields[i]);
    if (!optional.count(n)) continue;
    std::vector<std::string> f;
    for (std::size_t j = 0; j < fields.size(); ++j) {
      const std::string m = name_of(fields[j]);
      const bool goes = j == i || (n == "mask" && m == "mbc") ||
                        (n == "p" && (m == "dseed" || m == "doff")) ||
                        ((n == "qlen" || n == "kvlen") && m == "packed");
      if (!goes) f.push_back(fields[j]);
    }
    raw.push_back(f);
  }
  // Explicit strides go together (all four or none).
  {
    std::vector<std::string> f;
    for (const auto& x : fields) {
      const std::string m = name_of(x);
      if (m != "qst" && m != "kst" && m != "vst" && m != "ost") f.push_back(x);
    }
    if (f.size() != fields.size()) raw.push_back(f);
  }
  // The data: the plain generator, seed 0.
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const std::string n = name_of(fields[i]);
    std::vector<std::string> f = fields;
    if (n == "gen" && fields[i] != "gen=normal") {
      f[i] = "gen=normal";
      raw.push_back(f);
    } else if (n == "seed" && fields[i] != "seed0") {
      f[i] = "seed0";
      raw.push_back(f);
    }
  }
  // Sizes: to 1, by half, by one; query heads also to the next multiple of the KV heads
  // down and to two groups; both head counts halved together (a GQA case stays GQA).
  static const std::set<std::string> sizes = {"b", "hq", "hkv", "l", "s", "dqk", "dv"};
  std::int64_t hkv = 1;
  std::size_t hq_at = fields.size(), hkv_at = fields.size();
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (name_of(fields[i]) == "hkv") {
      hkv = std::stoll(fields[i].substr(3));
      hkv_at = i;
    } else if (name_of(fields[i]) == "hq") {
      hq_at = i;
    }
  }
  if (hq_at < fields.size() && hkv_at < fields.size() && hkv % 2 == 0) {
    const std::int64_t hq = std::stoll(fields[hq_at].substr(2));
    if (hq % 2 == 0) {
      std::vector<std::string> f = fields;
      f[hq_at] = "hq" + std::to_string(hq / 2);
      f[hkv_at] = "hkv" + std::to_string(hkv / 2);
      raw.push_back(f);
    }
  }
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const std::string n = name_of(fields[i]);
    if (!sizes.count(n) || fields[i].find('=') != std::string::npos) continue;
    const std::int64_t v = std::stoll(fields[i].substr(n.size()));
    std::vector<std::int64_t> targets = {1, v / 2, v - 1};
    if (n == "hq") {
      targets.push_back(v - hkv);
      targets.push_back(2 * hkv);
    }
    for (std::int64_t to : targets) {
      if (to < 1 || to >= v) continue;
      std::vector<std::string> f = fields;
      f[i] = n + std::to_string(to);
      if (n == "hq" || n == "hkv") {
        // Keep Hq a multiple of Hkv: lower the other one with it where needed.
        for (auto& g : f) {
          if (n == "hq" && name_of(g) == "hkv" && std::stoll(g.substr(3)) > to)
            g = "hkv" + std::to_string(to);
        }
      }
      if (n == "dqk") {
        for (auto& g : f) {
          if (name_of(g) == "dv" && g.find('=') == std::string::npos &&
              std::stoll(g.substr(2)) == v) {
            g = "dv" + std::to_string(to);  // Dv follows Dqk when they were equal
          }
        }
      }
      fit_lengths(f);
      raw.push_back(f);
    }
  }
  std::vector<std::string> out;
  std::set<std::string> seen = {canonical};
  for (const auto& f : raw) {
    const std::string id = canonical_if_valid(f);
    if (!id.empty() && seen.insert(id).second) out.push_back(id);
  }
  return out;
}

ShrinkResult shrink_case(const std::string& case_id, const StillFails& still_fails,
                         int max_rounds) {
  ShrinkResult r;
  r.case_id = format_case_id(parse_case_id_or_throw(case_id));
  for (; r.rounds < max_rounds; ++r.rounds) {
    const std::vector<std::string> cands = shrink_candidates(r.case_id);
    if (cands.empty()) break;
    const std::vector<bool> fails = still_fails(cands);
    r.tried += cands.size();
    std::size_t pick = cands.size();
    for (std::size_t i = 0; i < cands.size() && i < fails.size(); ++i) {
      if (fails[i] && case_size(cands[i]) < case_size(r.case_id)) {
        pick = i;
        break;
      }
    }
    if (pick == cands.size()) break;
    r.case_id = cands[pick];
    r.path.push_back(r.case_id);
  }
  return r;
}

}  // namespace sdpa::conformance
