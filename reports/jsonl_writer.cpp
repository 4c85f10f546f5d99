// results.jsonl: one JSON object per record (docs/REPORTS.md).
#include <cmath>
#include <nlohmann/json.hpp>

#include "reports/report_util.hpp"
#include "reports/reports.hpp"

namespace sdpa {

namespace {

// JSON has no infinity or NaN: those become the strings "inf", "-inf" and "nan".
nlohmann::ordered_json number(double x) {
  if (std::isfinite(x)) return x;
  return report::format_number(x);
}

}  // namespace

std::string jsonl_line(const CaseRecord& r) {
  nlohmann::ordered_json j;
  j["case_id"] = r.case_id;
  j["backend"] = r.backend;
  j["device"] = r.device;
  j["simd_target"] = r.simd_target;
  j["threads"] = r.threads;
  j["status"] = status_name(r.status);
  j["message"] = r.message;
  j["max_abs_error"] = number(r.max_abs_error);
  j["nmse"] = number(r.nmse);
  j["worst_ratio"] = number(r.worst_ratio);
  j["worst_where"] = r.worst_where;
  j["seconds"] = number(r.seconds);
  j["features"] = r.features;
  j["repro"] = r.repro;
  // Invalid UTF-8 (say, from a plugin's error text) becomes U+FFFD instead of throwing.
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string render_jsonl(const RunSummary& run) {
  std::string out;
  for (const auto& r : run.records) {
    out += jsonl_line(r);
    out += '\n';
  }
  return out;
}

}  // namespace sdpa
