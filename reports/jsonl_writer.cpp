// results.jsonl: one JSON object per record (docs/REPORTS.md).
#include "reports/records/record_json.hpp"
#include "reports/reports.hpp"

namespace sdpa::reports {

std::string jsonl_line(const CaseRecord& r) { return record_json_line(r); }

std::string render_jsonl(const RunSummary& run) {
  std::string out;
  for (const auto& r : run.records) {
    out += jsonl_line(r);
    out += '\n';
  }
  return out;
}

}  // namespace sdpa::reports
