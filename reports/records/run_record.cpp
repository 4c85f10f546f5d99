#include "reports/records/run_record.hpp"

#include <algorithm>
#include <set>

namespace sdpa::conformance {

RunCoverage run_coverage(const RunSummary& run) {
  std::set<std::string> cases, backends, targets;
  for (const auto& r : run.records) {
    cases.insert(r.case_id);
    backends.insert(r.backend);
    targets.insert(r.simd_target.empty() ? "best" : r.simd_target);
  }
  RunCoverage c;
  c.results = run.records.size();
  c.cases = cases.size();
  c.backends = backends.size();
  c.simd_targets.assign(targets.begin(), targets.end());
  return c;
}

StatusCounts count_statuses(const RunSummary& run) {
  StatusCounts c;
  for (const auto& r : run.records) c.add(r.status);
  return c;
}

std::vector<std::string> case_features(const Problem& p) {
  std::vector<std::string> f;
  f.push_back("dtype=" + std::string(dtype_name(p.dtype)));
  if (p.causal == Causal::top_left) f.push_back("causal=tl");
  if (p.causal == Causal::bottom_right) f.push_back("causal=br");
  if (p.window.enabled) f.push_back("window");
  if (p.mask == MaskKind::boolean) f.push_back("mask=bool");
  if (p.mask == MaskKind::additive) f.push_back("mask=add");
  if (p.heads_kv != p.heads_q) f.push_back("gqa");
  if (p.head_dim_v != p.head_dim_qk) f.push_back("dv!=dqk");
  if (p.dropout_p > 0) f.push_back("dropout");
  if (p.softcap > 0) f.push_back("softcap");
  if (p.packed) {
    f.push_back("varlen=packed");
  } else if (!p.seqlens_q.empty() || !p.seqlens_kv.empty()) {
    f.push_back("varlen=padded");
  }
  if (p.len_q == 1) f.push_back("decode");
  if (p.batch * p.heads_q * p.len_q * p.len_kv * p.head_dim_qk == 0) f.push_back("empty");
  if (p.want_lse) f.push_back("lse");
  if (p.want_weights) f.push_back("weights");
  if (p.backward) f.push_back("backward");
  if (p.bias_grad) f.push_back("dbias");
  // Layouts: the default contiguous [B, H, rows, D], the [B, rows, H, D] packing, or
  // anything else (row gaps, base offsets, explicit strides).
  auto same = [&](const Problem& r) {
    auto eq = [](const TensorLayout& a, const TensorLayout& b) {
      return a.stride == b.stride && a.base_offset == b.base_offset;
    };
    return eq(p.q, r.q) && eq(p.k, r.k) && eq(p.v, r.v) && eq(p.o, r.o);
  };
  Problem bhsd = p, bshd = p;
  apply_layout(bhsd, LayoutKind::bhsd, 0, 0);
  apply_layout(bshd, LayoutKind::bshd, 0, 0);
  if (!same(bhsd)) f.push_back(same(bshd) ? "layout=bshd" : "layout=strided");
  if (f.size() == 1) f.push_back("plain");
  return f;
}

const std::vector<std::string>& known_feature_tags() {
  static const std::vector<std::string> tags = {
      "dtype=f64", "dtype=f32",     "dtype=f16",     "dtype=bf16",  "causal=tl",      "causal=br",
      "window",    "mask=bool",     "mask=add",      "gqa",         "dv!=dqk",        "dropout",
      "softcap",   "varlen=padded", "varlen=packed", "decode",      "empty",          "lse",
      "weights",   "backward",      "dbias",         "layout=bshd", "layout=strided", "plain"};
  return tags;
}

JudgedCounts count_judged(const RunSummary& run) {
  JudgedCounts c;
  for (const char* q : {"o", "lse", "weights", "dq", "dk", "dv", "dbias"}) {
    std::int64_t n = 0;
    for (const auto& r : run.records) n += std::count(r.judged.begin(), r.judged.end(), q);
    c.judged.emplace_back(q, n);
  }
  for (const char* q : {"lse", "weights", "dbias"}) {
    std::int64_t n = 0;
    for (const auto& r : run.records)
      n += std::count(r.not_returned.begin(), r.not_returned.end(), q);
    if (n > 0) c.not_returned.emplace_back(q, n);
  }
  return c;
}

std::string judged_line(const JudgedCounts& counts) {
  std::string s = "judged:";
  for (std::size_t i = 0; i < counts.judged.size(); ++i)
    s += (i ? ", " : " ") + counts.judged[i].first + " " + std::to_string(counts.judged[i].second);
  if (!counts.not_returned.empty()) {
    s += "; not returned (so not judged):";
    for (std::size_t i = 0; i < counts.not_returned.size(); ++i)
      s += (i ? ", " : " ") + counts.not_returned[i].first + " " +
           std::to_string(counts.not_returned[i].second);
  }
  return s;
}

}  // namespace sdpa::conformance
