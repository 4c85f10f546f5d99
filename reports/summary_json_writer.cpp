// summary.json: the run at a glance (docs/REPORTS.md).
#include <cmath>
#include <nlohmann/json.hpp>

#include "reports/markdown_text.hpp"
#include "reports/records/expectations.hpp"
#include "reports/reports.hpp"
#include "reports/tallies.hpp"
#include "reports/text.hpp"

namespace sdpa::reports {

namespace {

using json = nlohmann::ordered_json;

constexpr std::size_t kWorstInSummary = 10;
constexpr std::size_t kFailuresInSummary = 100;

json number(double x) {
  if (std::isfinite(x)) return x;
  return reports::format_number(x);
}

json counts_json(const StatusCounts& c) {
  json j;
  j["total"] = c.total;
  for (Status s : kAllStatuses) j[status_name(s)] = c[s];
  return j;
}

}  // namespace

std::string render_summary_json(const RunSummary& run) {
  auto counts = count_statuses(run);
  double case_seconds = 0;
  for (const auto& r : run.records) {
    if (std::isfinite(r.seconds)) case_seconds += r.seconds;
  }

  json j;
  j["schema"] = "sdpa-cts.summary";
  j["schema_version"] = 1;
  j["tool_version"] = run.tool_version;
  j["tolerance_version"] = run.tolerance_version;
  j["tier"] = run.tier;
  j["device"] = run.device;
  j["seed"] = run.seed;
  json shard;
  shard["index"] = run.shard_index;
  shard["count"] = run.shard_count;
  j["shard"] = shard;
  j["jobs_total"] = run.jobs_total;
  j["cases_total"] = run.cases_total;
  j["expectations"] = run.expectations;
  j["started_at"] = run.started_at;
  j["seconds"] = number(run.seconds);
  j["case_seconds"] = case_seconds;
  j["cases"] = counts.total;
  j["cases_per_second"] =
      run.seconds > 0 && std::isfinite(run.seconds) ? counts.total / run.seconds : 0.0;
  j["ok"] = counts.failures() == 0;
  j["summary_line"] = summary_line(counts);
  j["counts"] = counts_json(counts);
  // How many records judged each quantity, and asked for outputs not returned.
  const JudgedCounts judged = count_judged(run);
  json per_quantity = json::object(), unreturned = json::object();
  for (const auto& [q, n] : judged.judged) per_quantity[q] = n;
  for (const auto& [q, n] : judged.not_returned) unreturned[q] = n;
  j["judged"] = per_quantity;
  j["not_returned"] = unreturned;

  json backends = json::object();
  for (const auto& [name, c] : reports::counts_by_backend(run)) backends[name] = counts_json(c);
  j["backends"] = backends;

  json hist;
  hist["bins"] = reports::ratio_bin_labels();
  json per_backend = json::object();
  for (const auto& [name, h] : reports::ratio_histograms(run)) per_backend[name] = h;
  hist["backends"] = per_backend;
  j["err_tol_histogram"] = hist;

  json worst = json::array();
  for (const CaseRecord* r : reports::worst_cases(run, kWorstInSummary)) {
    json w;
    w["case_id"] = r->case_id;
    w["backend"] = r->backend;
    w["status"] = status_name(r->status);
    w["worst_ratio"] = number(r->worst_ratio);
    w["worst_where"] = r->worst_where;
    w["max_abs_error"] = number(r->max_abs_error);
    w["repro"] = r->repro;
    worst.push_back(w);
  }
  j["worst_cases"] = worst;

  json failures = json::array();
  for (const auto& r : run.records) {
    if (!is_failure(r.status)) continue;
    if (failures.size() == kFailuresInSummary) break;
    json f;
    f["case_id"] = r.case_id;
    f["backend"] = r.backend;
    f["status"] = status_name(r.status);
    f["message"] = r.message;
    f["repro"] = r.repro;
    failures.push_back(f);
  }
  j["failures"] = failures;

  // Known failures (--expect): the records listed as expected to fail that did fail (XFAIL),
  // and those listed that passed (time to remove their line).
  json expected_failures = json::array();
  for (const auto& r : run.records) {
    if (r.status != Status::expected_failure) continue;
    if (expected_failures.size() == kFailuresInSummary) break;
    json f;
    f["case_id"] = r.case_id;
    f["backend"] = r.backend;
    f["expected"] = r.expected;
    f["message"] = r.message;
    f["repro"] = r.repro;
    expected_failures.push_back(f);
  }
  j["expected_failures"] = expected_failures;
  json passing = json::array();
  for (const CaseRecord* r : unexpectedly_passing(run.records)) {
    if (passing.size() == kFailuresInSummary) break;
    json p;
    p["case_id"] = r->case_id;
    p["backend"] = r->backend;
    p["expected"] = r->expected;
    passing.push_back(p);
  }
  j["unexpectedly_passing"] = passing;
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace sdpa::reports
