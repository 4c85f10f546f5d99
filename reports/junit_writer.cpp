// junit.xml: one <testsuite> per backend, one <testcase> per record (docs/REPORTS.md). Uses only
// what the common JUnit schemas (Jenkins, GitLab, Ant) accept: decimal times without exponent,
// a timestamp without a time zone, no attributes outside the schema.
#include <cctype>
#include <cmath>
#include <map>
#include <vector>

#include "reports/markdown_text.hpp"
#include "reports/reports.hpp"
#include "reports/tallies.hpp"
#include "reports/text.hpp"

namespace sdpa::reports {

namespace {

using reports::markup_escape;

std::string attr(const char* name, std::string_view value) {
  return std::string(" ") + name + "=\"" + markup_escape(value, true) + "\"";
}

// "2024-05-01T12:34:56" when started_at begins with that form, else "".
std::string junit_timestamp(const std::string& started_at) {
  static const char kPattern[] = "dddd-dd-ddTdd:dd:dd";
  if (started_at.size() < sizeof kPattern - 1) return "";
  for (std::size_t i = 0; i + 1 < sizeof kPattern; ++i) {
    char c = started_at[i];
    bool ok =
        kPattern[i] == 'd' ? std::isdigit(static_cast<unsigned char>(c)) != 0 : c == kPattern[i];
    if (!ok) return "";
  }
  return started_at.substr(0, sizeof kPattern - 1);
}

// The case ID, plus the forced SIMD target and thread count when the record has them, so that
// the same case run at several settings gives distinct test names.
std::string testcase_name(const CaseRecord& r) {
  std::string extra;
  if (!r.simd_target.empty()) extra += "simd=" + r.simd_target;
  if (r.threads != 0) {
    if (!extra.empty()) extra += ' ';
    extra += "threads=";
    extra += std::to_string(r.threads);
  }
  return extra.empty() ? r.case_id : r.case_id + " [" + extra + "]";
}

// The body of a <failure> or <system-out>: everything a reader needs to reproduce the case.
std::string details(const CaseRecord& r) {
  std::string s = std::string(status_name(r.status)) + ": " + r.message + "\n";
  if (is_pass(r.status) && !r.expected.empty()) {
    s += "unexpectedly passing: listed as a known failure (" + r.expected + ")\n";
  }
  if (has_ratio(r.status)) {
    s += "worst err/tol: " + reports::format_number(r.worst_ratio, 4);
    if (!r.worst_where.empty()) s += " at " + r.worst_where;
    s += ", max abs error: " + reports::format_number(r.max_abs_error, 4) + "\n";
  }
  if (!r.device.empty()) s += "device: " + r.device + "\n";
  if (!r.features.empty()) {
    s += "features:";
    for (const auto& f : r.features) s += " " + f;
    s += "\n";
  }
  if (!r.repro.empty()) s += "repro: " + r.repro + "\n";
  return s;
}

}  // namespace

std::string render_junit_xml(const RunSummary& run) {
  std::map<std::string, std::vector<const CaseRecord*>> suites;
  for (const auto& r : run.records) suites[r.backend].push_back(&r);
  auto total = count_statuses(run);
  std::string timestamp = junit_timestamp(run.started_at);

  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x += "<testsuites" + attr("name", "sdpa-cts") + attr("tests", std::to_string(total.total)) +
       attr("failures", std::to_string(total.failures())) + attr("errors", "0") +
       attr("time", reports::format_seconds(run.seconds)) + ">\n";
  for (const auto& [backend, records] : suites) {
    StatusCounts c;
    double seconds = 0;
    for (const CaseRecord* r : records) {
      c.add(r->status);
      if (std::isfinite(r->seconds) && r->seconds > 0) seconds += r->seconds;
    }
    std::int64_t skipped = c[Status::not_supported] + c[Status::invalid] + c[Status::mistrusted] +
                           c[Status::expected_failure] + c[Status::not_judged];
    x += "  <testsuite" + attr("name", backend) + attr("tests", std::to_string(c.total)) +
         attr("failures", std::to_string(c.failures())) + attr("errors", "0") +
         attr("skipped", std::to_string(skipped)) + attr("time", reports::format_seconds(seconds));
    if (!timestamp.empty()) x += attr("timestamp", timestamp);
    x += ">\n    <properties>\n";
    auto property = [&](const char* name, const std::string& value) {
      x += "      <property" + attr("name", name) + attr("value", value) + "/>\n";
    };
    property("tool_version", run.tool_version);
    property("tolerance_version", run.tolerance_version);
    property("tier", run.tier);
    property("device", run.device);
    property("seed", std::to_string(run.seed));
    property("started_at", run.started_at);
    x += "    </properties>\n";
    for (const CaseRecord* r : records) {
      x += "    <testcase" + attr("name", testcase_name(*r)) + attr("classname", backend) +
           attr("time", reports::format_seconds(r->seconds));
      const char* status = status_name(r->status);
      switch (r->status) {
        case Status::pass:
          if (r->expected.empty()) {
            x += "/>\n";
            continue;
          }
          x += ">\n";  // listed as a known failure, yet it passed: say so in <system-out>
          break;
        case Status::fail:
        case Status::crash:
        case Status::timeout:
          x += ">\n      <failure" + attr("type", status) + attr("message", r->message) + ">" +
               markup_escape(details(*r)) + "</failure>\n    </testcase>\n";
          continue;
        case Status::not_supported:
        case Status::invalid:
        case Status::mistrusted:
        case Status::not_judged:  // the harness could not judge it here: no verdict on the backend
        case Status::expected_failure:  // a known failure (--expect) is not a regression: the
                                        // message holds "expected failure (ORIGINAL, reason)"
          x += ">\n      <skipped" + attr("message", std::string(status) + ": " + r->message) +
               "/>\n";
          break;
        case Status::quality_warning:
          x += ">\n";
          break;
      }
      // Every other record says what happened and how to reproduce it.
      x += "      <system-out>" + markup_escape(details(*r)) + "</system-out>\n";
      x += "    </testcase>\n";
    }
    x += "  </testsuite>\n";
  }
  x += "</testsuites>\n";
  return x;
}

}  // namespace sdpa::reports
