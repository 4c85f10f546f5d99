#include "conformance/engine/pair_coverage.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>

#include "conformance/engine/case_sampler.hpp"
#include "core/philox.hpp"
#include "core/problem.hpp"
#include "kernels/attended_keys.hpp"
#include "kernels/lowered_problem.hpp"

namespace sdpa::conformance {
namespace {

// The dimensions, in this order (classify_job and the generator index them so).
enum Dim : int {
  kDtype,
  kSimd,
  kThreads,
  kCausal,
  kWindow,
  kMask,
  kDropout,
  kSoftcap,
  kBackward,
  kVarlen,
  kHeads,
  kLayout,
  kRowPitch,
  kStrides,
  kHeadDim,
  kRows,
  kKeys,
  kDims
};

// Labels of a length against ascending cuts: "<c1", "=c1", "c1..c2", "=c2", ">c2".
std::vector<std::string> cut_labels(const std::vector<std::int64_t>& cuts,
                                    const std::string& unit) {
  auto label = [](const char* prefix, const std::string& text) {
    std::string out(prefix);
    out.append(text);
    return out;
  };
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < cuts.size(); ++i) {
    const std::string c = cuts[i] == 0 ? unit : std::to_string(cuts[i]);
    if (i == 0) {
      labels.push_back(label("<", c));
    } else {
      labels.push_back(std::to_string(cuts[i - 1]).append("<..<").append(c));
    }
    labels.push_back(label("=", c));
  }
  labels.push_back(label(">", cuts.back() == 0 ? unit : std::to_string(cuts.back())));
  return labels;
}

int cut_index(std::int64_t n, const std::vector<std::int64_t>& cuts) {
  int i = 0;
  for (std::int64_t c : cuts) {
    if (n < c) return i;
    if (n == c) return i + 1;
    i += 2;
  }
  return i;
}

// A representative length for label `index` of `cuts` (the generator's choice).
std::int64_t length_for(int index, const std::vector<std::int64_t>& cuts) {
  const std::size_t k = static_cast<std::size_t>(index / 2);
  if (k >= cuts.size()) return cuts.back() + cuts.back() / 2 + 3;  // beyond the last
  if (index % 2 == 1) return cuts[k];                              // at
  if (k == 0) return cuts[0] / 2;                                  // below the first (0 for 1)
  return (cuts[k - 1] + cuts[k]) / 2 + 1;                          // between two
}

// The first key block of `backend` for p: its first key cut (the key chunk when that is 0).
std::int64_t first_key_block(const Problem& p, const TilingCuts& lb) {
  std::int64_t k = lb.key_cuts.front();
  if (k == 0 && lb.key_chunk) k = lb.key_chunk(p.len_kv, p.head_dim_qk, p.head_dim_v);
  return k;
}

// The largest key index some query row attends by the structural masks and lengths (causal,
// window, per-batch lengths; a mask tensor is data and not looked at), or -1 when none.
std::int64_t last_attended_key(const Problem& p) {
  const KeyStructure st = key_structure(p);
  std::int64_t last = -1;
  for (std::int64_t b = 0; b < p.batch; ++b) {
    const std::int64_t lb = seqlen_q(p, b), sb = seqlen_kv(p, b);
    for (std::int64_t i = 0; i < lb; ++i) {
      const KeyInterval r = attended_keys(st, i, lb, sb);
      if (r.hi > r.lo) last = std::max(last, r.hi - 1);
    }
  }
  return last;
}

// Whether dropout keeps some key that some query row attends by the structural masks and
// lengths. A generated case whose attended keys are all dropped has an output of zeros
// and the judge calls it MISTRUSTED: it could not tell a right kernel from a wrong one (a
// case where no row attends a key is not: it checks the empty rows).
bool some_attended_key_kept(const Problem& p) {
  if (p.dropout_p <= 0) return true;
  bool attended = false;
  const KeyStructure st = key_structure(p);
  const std::uint32_t threshold = dropout_threshold(p.dropout_p);
  for (std::int64_t b = 0; b < p.batch; ++b) {
    const std::int64_t lb = seqlen_q(p, b), sb = seqlen_kv(p, b);
    for (std::int64_t h = 0; h < p.heads_q; ++h) {
      for (std::int64_t i = 0; i < lb; ++i) {
        const KeyInterval r = attended_keys(st, i, lb, sb);
        for (std::int64_t j = r.lo; j < r.hi; ++j) {
          attended = true;
          if (dropout_keep(p.dropout_seed, p.dropout_offset, threshold, b, h, i, j, p.heads_q,
                           p.len_q, p.len_kv))
            return true;
        }
      }
    }
  }
  return !attended;
}

}  // namespace

bool ValuePair::operator<(const ValuePair& o) const {
  return std::tie(d1, v1, d2, v2) < std::tie(o.d1, o.v1, o.d2, o.v2);
}
bool ValuePair::operator==(const ValuePair& o) const {
  return std::tie(d1, v1, d2, v2) == std::tie(o.d1, o.v1, o.d2, o.v2);
}

const char* pair_pass_name(PairPass pass) {
  return pass == PairPass::forward ? "forward" : "backward";
}

const TilingCuts& pass_tiling(const Backend& backend, PairPass pass) {
  const Capabilities& caps = backend.capabilities();
  if (pass == PairPass::backward && caps.backward_tiling) return *caps.backward_tiling;
  return caps.tiling;
}

std::vector<PairDimension> pair_dimensions(const Backend& backend, PairPass pass) {
  const TilingCuts& lb = pass_tiling(backend, pass);
  std::vector<std::string> isas;
  for (IsaTarget t : all_isa_targets()) isas.emplace_back(isa_target_name(t));
  return {
      {"dtype", {"f32", "f16", "bf16", "f64"}, true},
      {"simd", isas, false},
      {"threads", {"1", "2+"}, false},
      {"causal", {"none", "tl", "br"}, true},
      {"window", {"off", "on"}, true},
      {"mask", {"none", "bool", "add"}, true},
      // Effective: whether the keys some row attends reach past the first key block, where a
      // keep-mask indexed per block instead of per key would repeat the first block's bits.
      {"dropout", {"off", "in_first_key_block", "past_first_key_block"}, true},
      {"softcap", {"off", "on"}, true},
      // The backward pass (dQ, dK, dV judged too): its kernels are other code than the
      // forward's, with their own edges (masks, dropout's keep-mask, GQA sums, lengths).
      {"backward", {"off", "on"}, true},
      {"varlen", {"none", "padded", "packed"}, true},
      {"heads", {"mha", "gqa", "mqa"}, true},
      {"layout", {"bhsd", "bshd"}, true},
      {"row_pitch", {"dense", "gap_even", "gap_odd"}, true},
      // Explicit strides of views (case_sampler's StrideKind): every tensor's head dimension
      // strided (x[..., ::2]), or K and V stored head-dim major (a transposed view).
      {"strides", {"unit", "head_dim_2", "transposed_kv"}, true},
      {"head_dim", {"x16", "other"}, true},
      {lb.group_rows ? "group_rows" : "query_rows", cut_labels(lb.row_cuts, "block"), true},
      {"keys", cut_labels(lb.key_cuts, "chunk"), true},
  };
}

namespace {

// The value index of each dimension for `c`, the lengths against `lb`.
std::vector<int> classify(const Case& c, const TilingCuts& lb, IsaTarget isa, int threads) {
  const Problem& p = c.problem;
  std::vector<int> v(kDims, 0);
  v[kDtype] = p.dtype == DType::f32    ? 0
              : p.dtype == DType::f16  ? 1
              : p.dtype == DType::bf16 ? 2
                                       : 3;
  v[kSimd] = static_cast<int>(isa);  // IsaTarget values are the table's indices
  v[kThreads] = threads == 1 ? 0 : 1;
  v[kCausal] = static_cast<int>(p.causal);
  v[kWindow] = p.window.enabled ? 1 : 0;
  v[kMask] = static_cast<int>(p.mask);
  v[kDropout] = p.dropout_p <= 0 ? 0 : last_attended_key(p) < first_key_block(p, lb) ? 1 : 2;
  v[kSoftcap] = p.softcap > 0 ? 1 : 0;
  v[kBackward] = p.backward ? 1 : 0;
  v[kVarlen] = p.packed ? 2 : (!p.seqlens_q.empty() || !p.seqlens_kv.empty()) ? 1 : 0;
  v[kHeads] = p.heads_q == p.heads_kv ? 0 : p.heads_kv == 1 ? 2 : 1;
  // Q's row stride against a dense one (D in bhsd, Hq * D in bshd): a gap, and its parity.
  // The layout as the case ID names it (bhsd first, as format_case_id tries them: with
  // L = 0 or 1 the strides alone do not tell them apart); explicit strides by their order.
  auto is_named = [&](LayoutKind kind, std::int64_t dense) {
    Problem t = p;
    apply_layout(t, kind, p.q.stride[2] - dense, p.q.base_offset);
    return t.q.stride == p.q.stride;
  };
  const bool bshd =
      !is_named(LayoutKind::bhsd, p.head_dim_qk) &&
      (is_named(LayoutKind::bshd, p.heads_q * p.head_dim_qk) || p.q.stride[1] < p.q.stride[2]);
  const std::int64_t dense_row = bshd ? p.heads_q * p.head_dim_qk : p.head_dim_qk;
  // The row pitch in units of Q's head-dim stride: a view x[..., ::2] of a dense tensor is
  // dense in this sense, and its gap is the underlying tensor's.
  const std::int64_t step = std::max<std::int64_t>(p.q.stride[3], 1);
  const std::int64_t row = p.q.stride[2] % step == 0 ? p.q.stride[2] / step : p.q.stride[2];
  v[kLayout] = bshd ? 1 : 0;
  v[kRowPitch] = row == dense_row ? 0 : row % 2 == 0 ? 1 : 2;
  // K stored head-dim major (row stride 1, head-dim stride above 1) is the transposed view;
  // any other head-dim stride above 1 the strided one.
  const bool transposed = p.k.stride[2] == 1 && p.k.stride[3] > 1 && p.len_kv > 1;
  bool strided = false;
  for (const TensorLayout* t : {&p.q, &p.k, &p.v, &p.o}) strided = strided || t->stride[3] > 1;
  v[kStrides] = transposed ? 2 : strided ? 1 : 0;
  v[kHeadDim] = p.head_dim_qk % 16 == 0 ? 0 : 1;
  const std::int64_t group = p.heads_q / std::max<std::int64_t>(p.heads_kv, 1);
  v[kRows] = cut_index(lb.group_rows ? group * p.len_q : p.len_q, lb.row_cuts);
  std::vector<std::int64_t> key_cuts = lb.key_cuts;
  for (auto& k : key_cuts) {
    if (k == 0 && lb.key_chunk) k = lb.key_chunk(p.len_kv, p.head_dim_qk, p.head_dim_v);
  }
  v[kKeys] = cut_index(p.len_kv, key_cuts);
  return v;
}

}  // namespace

std::vector<int> classify_job(const Case& c, const Backend& backend, IsaTarget isa, int threads,
                              PairPass pass) {
  return classify(c, pass_tiling(backend, pass), isa, threads);
}

std::string describe_pair(const std::vector<PairDimension>& dims, const ValuePair& p) {
  return dims[p.d1].name + "=" + dims[p.d1].values[p.v1] + " x " + dims[p.d2].name + "=" +
         dims[p.d2].values[p.v2];
}

namespace {

// Every pair of values of two dimensions for which `keep(d1, d2)` holds.
std::vector<ValuePair> all_pairs(const std::vector<PairDimension>& dims,
                                 bool (*keep)(const PairDimension&, const PairDimension&)) {
  std::vector<ValuePair> out;
  for (int a = 0; a < static_cast<int>(dims.size()); ++a) {
    for (int b = a + 1; b < static_cast<int>(dims.size()); ++b) {
      if (!keep(dims[a], dims[b])) continue;
      for (int x = 0; x < static_cast<int>(dims[a].values.size()); ++x) {
        for (int y = 0; y < static_cast<int>(dims[b].values.size()); ++y)
          out.push_back({a, x, b, y});
      }
    }
  }
  return out;
}

bool both_generated(const PairDimension& a, const PairDimension& b) {
  return a.generated && b.generated;
}
bool any_dims(const PairDimension&, const PairDimension&) { return true; }

void covered_by(const std::vector<int>& v, const std::vector<PairDimension>& dims,
                std::set<ValuePair>& out) {
  for (int a = 0; a < static_cast<int>(dims.size()); ++a) {
    for (int b = a + 1; b < static_cast<int>(dims.size()); ++b) out.insert({a, v[a], b, v[b]});
  }
}

// The case ID for an assignment of the generated dimensions on a backend's length blocks
// (with the LSE output when `lse`).
std::string case_for(const std::vector<int>& a, const TilingCuts& lb, bool lse) {
  const int group = a[kHeads] == 0 ? 1 : a[kHeads] == 1 ? 2 : 4;
  const std::int64_t hq = a[kHeads] == 0 ? 2 : 4;
  const std::int64_t hkv = hq / group;
  const std::int64_t dqk = a[kHeadDim] == 0 ? 32 : 24;
  const std::int64_t rows = length_for(a[kRows], lb.row_cuts);
  std::int64_t l = lb.group_rows ? std::max<std::int64_t>(1, (rows + group - 1) / group) : rows;
  std::int64_t s;
  if (lb.key_cuts.front() == 0) {
    // below, at, beyond one key chunk (256 keys for these lengths)
    s = a[kKeys] == 0 ? 200 : a[kKeys] == 1 ? 256 : 300;
  } else {
    s = length_for(a[kKeys], lb.key_cuts);
  }
  // Top-left causal rows reach key i only: dropout past the first key block needs as many
  // rows as keys, which the row length beyond the last cut (any longer length) allows.
  if (a[kDropout] == 2 && a[kCausal] == 1 && a[kRows] == static_cast<int>(2 * lb.row_cuts.size()))
    l = std::max(l, s);
  const std::int64_t batch = a[kVarlen] == 0 ? 2 : 3;
  std::string id = "b";
  id += std::to_string(batch) + ".hq" + std::to_string(hq) + ".hkv" + std::to_string(hkv) + ".l" +
        std::to_string(l) + ".s" + std::to_string(s) + ".dqk" + std::to_string(dqk);
  static const char* kDtypes[] = {"f32", "f16", "bf16", "f64"};
  id += std::string(".") + kDtypes[a[kDtype]];
  if (a[kLayout] == 1) id += ".lay=bshd";
  if (a[kRowPitch] == 1) id += ".gap=2";
  if (a[kRowPitch] == 2) id += ".gap=3";
  if (a[kCausal] == 1) id += ".causal=tl";
  if (a[kCausal] == 2) id += ".causal=br";
  if (a[kWindow] == 1) id += ".win=" + std::to_string(std::max<std::int64_t>(1, s / 4)) + "_2_br";
  if (a[kMask] == 1) id += ".mask=bool";
  if (a[kMask] == 2) id += ".mask=add";
  if (a[kVarlen] != 0) {
    id += ".qlen=" + std::to_string(l) + "_" + std::to_string(std::min<std::int64_t>(1, l)) +
          "_0.kvlen=0_" + std::to_string(s) + "_" +
          std::to_string(std::max<std::int64_t>(1, s / 2));
    if (a[kVarlen] == 2) id += ".packed";
  }
  if (a[kSoftcap] == 1) id += ".softcap=20";
  if (a[kDropout] != 0) id += ".p0.3.dseed3.doff7";  // the keys reached follow the lengths
  if (lse || a[kBackward] == 1) id += ".lse";
  if (a[kBackward] == 1) id += ".bwd";
  id += ".seed60.gen=normal";
  return id;
}

// The case for `a` (its lengths on the cuts `lb`) when it is valid, `backend` runs it and the
// restriction admits it; else nullopt.
std::optional<Case> runnable(const std::vector<int>& a, const Backend& backend,
                             const TilingCuts& lb, const Device& device,
                             const PairRestriction& restriction) {
  auto parsed = parse_case_id(case_for(a, lb, restriction.lse));
  if (!std::holds_alternative<Case>(parsed)) return std::nullopt;
  Case c = std::get<Case>(parsed);
  if (a[kStrides] != 0) {
    // Strides are set on the parsed problem (the ID then names them explicitly).
    apply_stride_kind(c.problem,
                      a[kStrides] == 1 ? StrideKind::head_dim_2 : StrideKind::transposed);
    auto reparsed = parse_case_id(format_case_id(c));
    if (!std::holds_alternative<Case>(reparsed)) return std::nullopt;
    c = std::get<Case>(reparsed);
  }
  if (!validate(c.problem).empty() || !backend.supports(c.problem, device).ok() ||
      !some_attended_key_kept(c.problem))
    return std::nullopt;
  if (restriction.admit && !restriction.admit(c)) return std::nullopt;
  return c;
}

// allowed[d][v]: whether value v of dimension d is allowed by `restriction`.
std::vector<std::vector<bool>> allowed_values(const std::vector<PairDimension>& dims,
                                              const PairRestriction& restriction) {
  std::vector<std::vector<bool>> allowed;
  for (const auto& dim : dims) allowed.emplace_back(dim.values.size(), true);
  for (const auto& entry : restriction.values) {
    const std::string& name = entry.first;  // not a structured binding: Clang 14 cannot capture one
    const auto& values = entry.second;
    const auto d = std::find_if(dims.begin(), dims.end(),
                                [&](const PairDimension& x) { return x.name == name; });
    if (d == dims.end()) {
      throw std::invalid_argument("pair restriction: unknown dimension '" + name + "'");
    }
    for (const auto& v : values) {
      if (std::find(d->values.begin(), d->values.end(), v) == d->values.end()) {
        throw std::invalid_argument("pair restriction: dimension '" + name + "' has no value '" +
                                    v + "'");
      }
    }
    auto& row = allowed[static_cast<std::size_t>(d - dims.begin())];
    for (std::size_t v = 0; v < row.size(); ++v) row[v] = values.count(d->values[v]) > 0;
  }
  return allowed;
}

// Adds to `ids` (and `seen`) the cases that cover the pairs of `pass` on `backend` that the
// cases in `ids` leave uncovered; returns the pairs no runnable case can have.
std::vector<ValuePair> cover_pass(const Backend* backend, PairPass pass, const Device& device,
                                  const PairRestriction& restriction, std::vector<std::string>& ids,
                                  std::set<std::string>& seen) {
  const auto dims = pair_dimensions(*backend, pass);
  const TilingCuts& lb = pass_tiling(*backend, pass);
  auto allowed = allowed_values(dims, restriction);
  if (pass == PairPass::backward) {
    // The backward's pairs are those of backward cases: none where the backend has no
    // backward or the restriction does not allow it.
    if (!backend->capabilities().backward || !allowed[kBackward][1]) return {};
    allowed[kBackward][0] = false;
  }
  auto is_allowed = [&](int d, int v) {
    return allowed[static_cast<std::size_t>(d)][static_cast<std::size_t>(v)];
  };
  std::set<ValuePair> uncovered;
  for (const auto& p : all_pairs(dims, both_generated)) {
    if (is_allowed(p.d1, p.v1) && is_allowed(p.d2, p.v2)) uncovered.insert(p);
  }
  // Every case starts from the first allowed value of each dimension (0 unrestricted). When
  // that case does not run or is not admitted (a length that makes it "empty" where the
  // restriction wants none), from the first one-value change that is: otherwise every
  // change the greedy step below tries would look equally useless until it reached the
  // dimension at fault, and the cases would cover few pairs each.
  std::vector<int> start(kDims, 0);
  for (int d = 0; d < kDims; ++d) {
    while (start[d] + 1 < static_cast<int>(dims[d].values.size()) && !is_allowed(d, start[d]))
      ++start[d];
  }
  for (int d = 0; d < kDims && !runnable(start, *backend, lb, device, restriction); ++d) {
    for (int v = 0; v < static_cast<int>(dims[d].values.size()); ++v) {
      std::vector<int> s = start;
      s[d] = v;
      if (!dims[d].generated || v == start[d] || !is_allowed(d, v) ||
          !runnable(s, *backend, lb, device, restriction))
        continue;
      start = s;
      break;
    }
  }
  // What the cases chosen so far (for earlier backends and passes) cover on this one.
  auto cover = [&](const Case& c) {
    std::set<ValuePair> got;
    covered_by(classify(c, lb, device.cpu.isa, 1), dims, got);
    for (const auto& p : got) uncovered.erase(p);
  };
  for (const auto& id : ids) {
    const Case c = parse_case_id_or_throw(id);
    if (pass == PairPass::backward && !c.problem.backward) continue;
    if (backend->supports(c.problem, device).ok()) cover(c);
  }
  std::vector<ValuePair> impossible;
  while (!uncovered.empty()) {
    const ValuePair target = *uncovered.begin();
    // Greedy (AETG-like): each free dimension takes the value that makes the case cover
    // the most uncovered pairs, among the values that keep it runnable (and, with
    // keep_target, covering the target: effective values, such as the keys dropout reaches
    // or the rows of a GQA group, follow the other dimensions too).
    bool keep_target = false;
    auto gain = [&](const std::vector<int>& x) -> int {
      const auto c = runnable(x, *backend, lb, device, restriction);
      if (!c) return -1;
      std::set<ValuePair> got;
      covered_by(classify(*c, lb, device.cpu.isa, 1), dims, got);
      if (keep_target && !got.count(target)) return -1;
      int n = 0;
      for (const auto& p : got) n += uncovered.count(p) ? 1 : 0;
      return n;
    };
    auto greedy = [&](std::vector<int> a) {
      int best = gain(a);
      for (int d = 0; d < kDims; ++d) {
        if (!dims[d].generated || d == target.d1 || d == target.d2) continue;
        for (int v = 0; v < static_cast<int>(dims[d].values.size()); ++v) {
          if (v == a[d] || !is_allowed(d, v)) continue;
          std::vector<int> b = a;
          b[d] = v;
          const int g = gain(b);
          if (g > best) {
            best = g;
            a = b;
          }
        }
      }
      return best < 0 ? std::nullopt : runnable(a, *backend, lb, device, restriction);
    };
    auto covers_target = [&](const std::optional<Case>& c, std::set<ValuePair>& got) {
      got.clear();
      if (c) covered_by(classify(*c, lb, device.cpu.isa, 1), dims, got);
      return c && got.count(target) > 0;
    };
    std::vector<int> a = start;
    a[target.d1] = target.v1;
    a[target.d2] = target.v2;
    std::set<ValuePair> got;
    std::optional<Case> c = greedy(a);
    // Effective values (the keys dropout reaches) depend on the lengths together: when the
    // greedy pass misses the target, it starts again, keeping the target, from every pair
    // of row and key lengths, so that a pair is "not possible" only when no such start
    // builds it.
    keep_target = true;
    for (int r = 0; !covers_target(c, got) && r < static_cast<int>(dims[kRows].values.size());
         ++r) {
      for (int k = 0; k < static_cast<int>(dims[kKeys].values.size()); ++k) {
        std::vector<int> b = a;
        if (target.d1 != kRows && target.d2 != kRows) b[kRows] = r;
        if (target.d1 != kKeys && target.d2 != kKeys) b[kKeys] = k;
        if (!is_allowed(kRows, b[kRows]) || !is_allowed(kKeys, b[kKeys])) continue;
        c = greedy(b);
        if (covers_target(c, got)) break;
      }
    }
    if (!covers_target(c, got)) {
      impossible.push_back(target);
      uncovered.erase(target);
      continue;
    }
    const std::string id = format_case_id(*c);
    if (seen.insert(id).second) ids.push_back(id);
    for (const auto& p : got) uncovered.erase(p);
  }
  return impossible;
}

}  // namespace

CoveringSet generate_covering_set(const std::vector<const Backend*>& backends, const Device& device,
                                  const PairRestriction& restriction) {
  CoveringSet out;
  std::vector<std::string> ids;
  std::set<std::string> seen;
  // The forward's pairs on every backend first, then the backward's: the forward's cases do
  // not depend on the backward's.
  for (const Backend* backend : backends)
    out.impossible.push_back(
        cover_pass(backend, PairPass::forward, device, restriction, ids, seen));
  out.backward_from = ids.size();
  for (const Backend* backend : backends)
    out.backward_impossible.push_back(
        cover_pass(backend, PairPass::backward, device, restriction, ids, seen));
  out.case_ids = std::move(ids);
  return out;
}

CoveringSet generate_covering_set(const std::vector<const Backend*>& backends,
                                  const Device& device) {
  return generate_covering_set(backends, device, PairRestriction{});
}

bool pair_allowed(const std::vector<PairDimension>& dims, const PairRestriction& restriction,
                  const ValuePair& p) {
  const auto allowed = allowed_values(dims, restriction);
  return allowed[static_cast<std::size_t>(p.d1)][static_cast<std::size_t>(p.v1)] &&
         allowed[static_cast<std::size_t>(p.d2)][static_cast<std::size_t>(p.v2)];
}

std::vector<std::string> isolated_pair_cases(const Backend& backend, const Device& device,
                                             const PairRestriction& restriction) {
  const auto dims = pair_dimensions(backend);
  const auto allowed = allowed_values(dims, restriction);
  // The base case: the first allowed value of each dimension (a feature off), the head dim
  // a multiple of 16, the lengths beyond the backend's last row and key blocks.
  std::vector<int> base(kDims, 0);
  for (int d = 0; d < kDims; ++d) {
    const auto& row = allowed[static_cast<std::size_t>(d)];
    base[d] = static_cast<int>(std::find(row.begin(), row.end(), true) - row.begin());
    if (base[d] == static_cast<int>(row.size())) return {};  // a dimension without a value
  }
  base[kRows] = static_cast<int>(dims[kRows].values.size()) - 1;
  base[kKeys] = static_cast<int>(dims[kKeys].values.size()) - 1;
  // The features: every allowed value of a feature dimension but its first.
  std::vector<std::pair<int, int>> features;
  for (int d = kCausal; d <= kStrides; ++d) {
    if (!dims[d].generated) continue;
    for (int v = base[d] + 1; v < static_cast<int>(dims[d].values.size()); ++v) {
      if (allowed[static_cast<std::size_t>(d)][static_cast<std::size_t>(v)])
        features.emplace_back(d, v);
    }
  }
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](const std::vector<int>& a) {
    if (const auto c = runnable(a, backend, backend.capabilities().tiling, device, restriction)) {
      const std::string id = format_case_id(*c);
      if (seen.insert(id).second) out.push_back(id);
    }
  };
  // Each feature alone on every element type; each two features of two dimensions together.
  for (int t = 0; t < static_cast<int>(dims[kDtype].values.size()); ++t) {
    if (!allowed[kDtype][static_cast<std::size_t>(t)]) continue;
    for (const auto& [d, v] : features) {
      std::vector<int> a = base;
      a[kDtype] = t;
      a[d] = v;
      add(a);
    }
  }
  for (std::size_t i = 0; i < features.size(); ++i) {
    for (std::size_t j = i + 1; j < features.size(); ++j) {
      if (features[i].first == features[j].first) continue;
      std::vector<int> a = base;
      a[features[i].first] = features[i].second;
      a[features[j].first] = features[j].second;
      add(a);
    }
  }
  return out;
}

std::string impossible_reason(const Backend& backend, const std::vector<PairDimension>& dims,
                              const ValuePair& p, PairPass pass) {
  if (pass == PairPass::backward && !backend.capabilities().backward)
    return "the backend has no backward pass";
  const std::pair<int, int> values[] = {{p.d1, p.v1}, {p.d2, p.v2}};
  auto has = [&](int d, int v) { return (p.d1 == d && p.v1 == v) || (p.d2 == d && p.v2 == v); };
  static const DType kTypes[] = {DType::f32, DType::f16, DType::bf16, DType::f64};
  for (const auto& [d, v] : values) {
    if (d != kDtype) continue;
    const auto& dtypes = backend.capabilities().dtypes;
    if (std::find(dtypes.begin(), dtypes.end(), kTypes[v]) == dtypes.end())
      return "the backend does not take " + dims[kDtype].values[static_cast<std::size_t>(v)];
  }
  if (backend.capabilities().last_dim_contiguous && (has(kStrides, 1) || has(kStrides, 2)))
    return "the backend requires head-dim stride 1";
  if (has(kBackward, 1) && !backend.capabilities().backward)
    return "the backend has no backward pass";
  if (has(kMask, 1) && has(kVarlen, 2)) return "a mask tensor cannot be packed";
  if (has(kMask, 2) && has(kVarlen, 2)) return "a mask tensor cannot be packed";
  if (has(kDropout, 2)) {
    for (const auto& [d, v] : values) {
      // Keys at or below the first key block (labels "<c1" and "=c1"): no key lies past it.
      if (d == kKeys && v <= 1) return "S is at most the first key block: no key lies past it";
      if (d == kRows && v == 0 && pass_tiling(backend, pass).row_cuts.front() == 1)
        return "L = 0: no query row attends a key";
    }
  }
  return "";
}

std::vector<CoverageJob> accepted_jobs(const std::vector<std::string>& case_ids,
                                       const Backend& backend, const Device& device,
                                       const std::vector<IsaTarget>& isas, int threads) {
  std::vector<CoverageJob> out;
  for (const auto& id : case_ids) {
    const Case c = parse_case_id_or_throw(id);
    if (!validate(c.problem).empty()) continue;
    for (IsaTarget isa : isas) {
      if (backend.supports(c.problem, with_isa_target(device, isa_target_name(isa))).ok())
        out.push_back({id, std::string(backend.name()), isa, threads});
    }
  }
  return out;
}

PairCoverage pair_coverage(const Backend& backend, const std::vector<CoverageJob>& jobs,
                           const std::vector<ValuePair>& impossible_generated, PairPass pass) {
  PairCoverage out;
  out.backend = std::string(backend.name());
  out.pass = pass;
  out.dimensions = pair_dimensions(backend, pass);
  const auto& dims = out.dimensions;
  std::set<ValuePair> got;
  std::set<IsaTarget> isas;
  for (const auto& job : jobs) {
    if (job.backend != out.backend) continue;
    const Case c = parse_case_id_or_throw(job.case_id);
    if (pass == PairPass::backward && !c.problem.backward) continue;
    ++out.jobs;
    isas.insert(job.isa);
    covered_by(classify_job(c, backend, job.isa, job.threads, pass), dims, got);
  }
  // A value of a generated dimension is possible when some possible pair holds it; a pair
  // with SIMD or threads is possible when its other value is (and the target is run).
  const std::set<ValuePair> impossible(impossible_generated.begin(), impossible_generated.end());
  std::set<std::pair<int, int>> possible_values;
  auto in_pass = [&](const ValuePair& p) {
    // A job with the backward off does not run the backward: no pair of the backward pass.
    return pass == PairPass::forward ||
           !((p.d1 == kBackward && p.v1 == 0) || (p.d2 == kBackward && p.v2 == 0));
  };
  for (const auto& p : all_pairs(dims, both_generated)) {
    if (impossible.count(p) || !in_pass(p)) continue;
    possible_values.insert({p.d1, p.v1});
    possible_values.insert({p.d2, p.v2});
  }
  auto isa_run = [&](int v) {
    return isas.count(all_isa_targets()[static_cast<std::size_t>(v)]) > 0;
  };
  for (const auto& p : all_pairs(dims, any_dims)) {
    if (!in_pass(p)) continue;
    // A SIMD target this machine lacks is not part of the run: its pairs are not counted.
    if ((p.d1 == kSimd && !isa_run(p.v1)) || (p.d2 == kSimd && !isa_run(p.v2))) {
      ++out.not_run;
      continue;
    }
    bool possible =
        !impossible.count(p) && (pass == PairPass::forward || backend.capabilities().backward);
    for (auto [d, v] : {std::pair{p.d1, p.v1}, std::pair{p.d2, p.v2}}) {
      if (dims[d].generated && !possible_values.count({d, v})) possible = false;
    }
    // Not possible only with a reason; a value impossible with every partner (the backend's
    // dtypes) has one.
    std::string reason = possible ? "" : impossible_reason(backend, dims, p, pass);
    if (got.count(p)) {
      out.covered.push_back(p);
    } else if (!reason.empty()) {
      out.impossible.push_back(p);
      out.impossible_reasons.push_back(std::move(reason));
    } else {
      out.uncovered.push_back(p);
    }
  }
  return out;
}

}  // namespace sdpa::conformance
