#include "conformance/run_record.hpp"

namespace sdpa::conformance {

void set_outcome(CaseRecord& r, const CaseOutcome& o) {
  r.status = o.status;
  r.message = o.message;
  r.max_abs_error = o.max_abs_error;
  r.nmse = o.nmse;
  r.worst_ratio = o.worst_ratio;
  r.worst_where = o.worst_where;
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
  if (f.size() == 1) f.push_back("plain");
  return f;
}

}  // namespace sdpa::conformance
