// report.html: one self-contained page (docs/REPORTS.md). Inline CSS and inline SVG only: no
// script, no external resource. The page is also well-formed XML (every element closed, only
// the five XML entities), so an XML parser can check it. Every string from the data goes through
// markup_escape.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

#include "reports/markdown_text.hpp"
#include "reports/records/expectations.hpp"
#include "reports/reports.hpp"
#include "reports/tallies.hpp"
#include "reports/text.hpp"

namespace sdpa::reports {

namespace {

using reports::FeatureCell;

constexpr std::size_t kWorstInHtml = 25;
constexpr std::size_t kRowsPerTable = 500;
constexpr std::size_t kDeclineReasons = 100;
constexpr std::size_t kMessageBytes = 2000;

std::string h(std::string_view s) { return reports::markup_escape(s, false); }
std::string ha(std::string_view s) { return reports::markup_escape(s, true); }

std::string fmt(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", x);
  return buf;
}

// No '<' and no '&' in here: the page must stay well-formed XML.
constexpr const char* kStyle = R"css(
:root { --pass: #1a7f37; --fail: #cf222e; --ns: #8c959f; --other: #bf8700; --xfail: #8250df;
        --ink: #1f2328;
        --muted: #59636e; --line: #d1d9e0; --bg2: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       color: var(--ink); margin: 0 auto; padding: 16px 24px 48px; max-width: 1280px; }
h1 { font-size: 22px; margin: 8px 0 4px; display: flex; align-items: center; gap: 12px; }
h2 { font-size: 17px; margin: 28px 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
                   font-size: 12px; }
pre { margin: 0; white-space: pre-wrap; word-break: break-word; }
.badge { font-size: 13px; font-weight: 600; color: #fff; padding: 2px 10px; border-radius: 12px; }
.badge.ok { background: var(--pass); }
.badge.bad { background: var(--fail); }
.line { color: var(--muted); margin: 4px 0 12px; }
table { border-collapse: collapse; margin: 4px 0; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: var(--bg2); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.meta th { width: 160px; }
td.bad { background: #ffebe9; color: var(--fail); font-weight: 600; }
td.zero { color: var(--ns); }
.scroll { overflow-x: auto; }
table.matrix td { min-width: 96px; text-align: center; font-variant-numeric: tabular-nums; }
table.matrix td.has-fail { background: #ffebe9; }
table.matrix td.has-xfail { background: #fbefff; }
table.matrix td.all-pass { background: #dafbe1; }
table.matrix td.only-ns { background: var(--bg2); color: var(--muted); }
table.matrix td.none { color: var(--line); }
table.matrix th.feature { white-space: nowrap; }
table.matrix svg { display: block; margin: 2px auto; }
.legend { color: var(--muted); font-size: 12px; }
.sw { display: inline-block; width: 10px; height: 10px; margin: 0 4px 0 10px; border-radius: 2px; }
.sw.pass { background: var(--pass); } .sw.fail { background: var(--fail); }
.sw.ns { background: var(--ns); } .sw.other { background: var(--other); }
.sw.xfail { background: var(--xfail); }
.charts { display: flex; flex-wrap: wrap; gap: 16px; }
figure { margin: 0; border: 1px solid var(--line); border-radius: 6px; padding: 8px; }
figcaption { font-size: 12px; color: var(--muted); margin-top: 4px; }
figcaption b { color: var(--ink); }
.status { font-weight: 600; white-space: nowrap; }
.status.FAIL, .status.CRASH, .status.TIMEOUT { color: var(--fail); }
.status.PASS { color: var(--pass); }
.status.QUALITY_WARNING, .status.MISTRUSTED, .status.INVALID, .status.NOT_JUDGED {
  color: var(--other);
}
.status.NOT_SUPPORTED { color: var(--muted); }
.status.XFAIL { color: var(--xfail); }
.case { word-break: break-all; min-width: 240px; }
td code { white-space: nowrap; }
td.case code, td.repro code { white-space: normal; overflow-wrap: anywhere; }
.note { color: var(--muted); font-size: 12px; }
footer { margin-top: 32px; color: var(--muted); font-size: 12px; }
)css";

std::string status_span(Status s) {
  std::string name = status_name(s);
  return "<span class=\"status " + name + "\">" + name + "</span>";
}

// A stacked bar of one matrix cell: pass, fail, not supported, other, XFAIL.
std::string cell_bar(const FeatureCell& c) {
  const double width = 84, height = 8;
  std::string svg =
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"84\" height=\"8\" "
      "viewBox=\"0 0 84 8\" aria-hidden=\"true\">";
  double x = 0;
  auto segment = [&](std::int64_t n, const char* color) {
    if (n == 0) return;
    double w = width * static_cast<double>(n) / static_cast<double>(c.total());
    svg += "<rect x=\"" + fmt(x) + "\" y=\"0\" width=\"" + fmt(w) + "\" height=\"" + fmt(height) +
           "\" fill=\"" + color + "\"/>";
    x += w;
  };
  segment(c.pass, "#1a7f37");
  segment(c.fail, "#cf222e");
  segment(c.not_supported, "#8c959f");
  segment(c.other, "#bf8700");
  segment(c.expected_failure, "#8250df");
  return svg + "</svg>";
}

std::string matrix_cell(const FeatureCell& c) {
  if (c.total() == 0) return "<td class=\"none\">-</td>";
  const char* cls = c.fail > 0               ? "has-fail"
                    : c.expected_failure > 0 ? "has-xfail"
                    : c.pass > 0             ? "all-pass"
                                             : "only-ns";
  std::string title = std::to_string(c.pass) + " pass, " + std::to_string(c.fail) + " fail, " +
                      std::to_string(c.not_supported) + " not supported";
  std::string text = std::to_string(c.pass) + " / " + std::to_string(c.fail) + " / " +
                     std::to_string(c.not_supported);
  if (c.other > 0) {
    title += ", " + std::to_string(c.other) + " invalid, mistrusted or not judged";
    text += " / " + std::to_string(c.other);
  }
  if (c.expected_failure > 0) {
    title += ", " + std::to_string(c.expected_failure) + " expected to fail (XFAIL)";
    text += " (" + std::to_string(c.expected_failure) + " XFAIL)";
  }
  return std::string("<td class=\"") + cls + "\" title=\"" + title + "\">" + cell_bar(c) + text +
         "</td>";
}

// Bar chart of one backend's err/tol bins. Each bar is labelled by its upper edge (the full range
// is in its tooltip).
std::string histogram_svg(const std::string& backend,
                          const std::array<std::int64_t, reports::kRatioBins>& bins) {
  const double W = 380, H = 196, left = 10, right = 10, top = 34, bottom = 36;
  const double plot_w = W - left - right, plot_h = H - top - bottom;
  const double slot = plot_w / reports::kRatioBins, bar = slot * 0.72;
  std::int64_t max = *std::max_element(bins.begin(), bins.end());
  static const char* colors[reports::kRatioBins] = {"#116329", "#1a7f37", "#2da44e", "#4ac26b",
                                                    "#6fdd8b", "#d4a72c", "#cf222e"};
  static const char* edges[reports::kRatioBins] = {"0",       "&lt;1e-4", "&lt;1e-3", "&lt;1e-2",
                                                   "&lt;0.1", "&#8804;1", "&gt;1"};
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt(W) + "\" height=\"" +
                    fmt(H) + "\" viewBox=\"0 0 " + fmt(W) + " " + fmt(H) +
                    "\" role=\"img\" aria-label=\"" + ha("err/tol histogram of " + backend) +
                    "\" font-family=\"system-ui, sans-serif\">";
  double base = top + plot_h;
  // The bound: everything right of this line failed.
  double bound_x = left + slot * (reports::kRatioBins - 1);
  svg += "<line x1=\"" + fmt(bound_x) + "\" y1=\"" + fmt(top - 20) + "\" x2=\"" + fmt(bound_x) +
         "\" y2=\"" + fmt(base) + "\" stroke=\"#cf222e\" stroke-dasharray=\"3 3\"/>";
  svg += "<text x=\"" + fmt(bound_x - 4) + "\" y=\"" + fmt(top - 22) +
         "\" font-size=\"10\" text-anchor=\"end\" fill=\"#cf222e\">bound: err/tol = 1</text>";
  for (std::size_t i = 0; i < reports::kRatioBins; ++i) {
    double x = left + slot * static_cast<double>(i) + (slot - bar) / 2;
    double bh = max > 0 ? plot_h * static_cast<double>(bins[i]) / static_cast<double>(max) : 0;
    if (bins[i] > 0) bh = std::max(bh, 1.5);
    svg += "<rect x=\"" + fmt(x) + "\" y=\"" + fmt(base - bh) + "\" width=\"" + fmt(bar) +
           "\" height=\"" + fmt(bh) + "\" fill=\"" + colors[i] + "\"><title>" +
           h(std::string("err/tol ") + reports::ratio_bin_labels()[i] + ": " +
             std::to_string(bins[i]) + " cases") +
           "</title></rect>";
    svg += "<text x=\"" + fmt(x + bar / 2) + "\" y=\"" + fmt(base - bh - 3) +
           "\" font-size=\"11\" text-anchor=\"middle\" fill=\"#1f2328\">" +
           std::to_string(bins[i]) + "</text>";
    svg += "<text x=\"" + fmt(x + bar / 2) + "\" y=\"" + fmt(base + 14) +
           "\" font-size=\"10\" text-anchor=\"middle\" fill=\"#59636e\">" + edges[i] + "</text>";
  }
  svg += "<line x1=\"" + fmt(left) + "\" y1=\"" + fmt(base) + "\" x2=\"" + fmt(W - right) +
         "\" y2=\"" + fmt(base) + "\" stroke=\"#59636e\"/>";
  svg += "<text x=\"" + fmt(W / 2) + "\" y=\"" + fmt(H - 4) +
         "\" font-size=\"10\" text-anchor=\"middle\" fill=\"#59636e\">worst err/tol per case "
         "(log-scale bins)</text>";
  return svg + "</svg>";
}

std::string repro_cell(const CaseRecord& r) {
  return r.repro.empty() ? "<td></td>" : "<td class=\"repro\"><code>" + h(r.repro) + "</code></td>";
}

// A table of records: status, backend, case, (with `reason`: the reason it is listed as a
// known failure), message, repro.
void records_table(std::string& out, const std::vector<const CaseRecord*>& rows,
                   bool reason = false) {
  out += std::string("<table><tr><th>status</th><th>backend</th><th>case</th>") +
         (reason ? "<th>expected to fail because</th>" : "") +
         "<th>message</th><th>repro</th></tr>\n";
  for (std::size_t i = 0; i < std::min(rows.size(), kRowsPerTable); ++i) {
    const CaseRecord& r = *rows[i];
    out += "<tr><td>" + status_span(r.status) + "</td><td><code>" + h(r.backend) +
           "</code></td><td class=\"case\"><code>" + h(r.case_id) + "</code></td>" +
           (reason ? "<td>" + h(reports::truncate_utf8(r.expected, kMessageBytes)) + "</td>" : "") +
           "<td><pre>" + h(reports::truncate_utf8(r.message, kMessageBytes)) + "</pre></td>" +
           repro_cell(r) + "</tr>\n";
  }
  out += "</table>\n";
  if (rows.size() > kRowsPerTable) {
    out += "<p class=\"note\">" + std::to_string(rows.size() - kRowsPerTable) +
           " more not shown: see results.jsonl.</p>\n";
  }
}

}  // namespace

std::string render_html(const RunSummary& run) {
  auto total = count_statuses(run);
  bool ok = total.failures() == 0;
  std::string o;
  o += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n";
  o += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n";
  o += "<title>" + h("sdpa-cts conformance: " + run.tier + (ok ? " passed" : " failed")) +
       "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
  o += std::string("<h1>sdpa-cts conformance <span class=\"badge ") + (ok ? "ok" : "bad") + "\">" +
       (ok ? "PASSED" : "FAILED") + "</span></h1>\n";
  o += "<p class=\"line\"><code>" + h(summary_line(total)) + "</code></p>\n";

  // Run metadata.
  o += "<table class=\"meta\">\n";
  auto meta = [&](const char* name, const std::string& value) {
    o += std::string("<tr><th>") + name + "</th><td>" + h(value) + "</td></tr>\n";
  };
  meta("tier", run.tier);
  meta("device", run.device);
  // A result is one (case, backend, SIMD target) verdict: say which is which.
  const RunCoverage coverage = run_coverage(run);
  std::string targets;
  for (const auto& t : coverage.simd_targets) targets += (targets.empty() ? "" : ", ") + t;
  meta("results", std::to_string(total.total));
  meta("cases", std::to_string(coverage.cases));
  meta("backends", std::to_string(coverage.backends));
  meta("SIMD targets", targets.empty() ? "-" : targets);
  meta("wall time", reports::format_number(run.seconds, 4) + " s");
  meta("results per second",
       run.seconds > 0 ? reports::format_number(static_cast<double>(total.total) / run.seconds, 4)
                       : "-");
  meta("seed", std::to_string(run.seed));
  meta("started at", run.started_at);
  meta("tolerance table", run.tolerance_version);
  meta("sdpa-cts", run.tool_version);
  o += "</table>\n";

  // Statuses per backend.
  o += "<h2>Statuses per backend</h2>\n";
  auto by_backend = reports::counts_by_backend(run);
  if (by_backend.empty()) {
    o += "<p>No cases ran.</p>\n";
  } else {
    std::vector<Status> cols;
    for (Status s : kAllStatuses) {
      if (s == Status::pass || s == Status::fail || total[s] > 0) cols.push_back(s);
    }
    o += "<table class=\"counts\"><tr><th>backend</th>";
    for (Status s : cols) o += "<th class=\"num\">" + status_span(s) + "</th>";
    o += "<th class=\"num\">total</th></tr>\n";
    auto row = [&](const std::string& name_html, const StatusCounts& c) {
      o += "<tr><th>" + name_html + "</th>";
      for (Status s : cols) {
        const char* cls = c[s] == 0 ? "num zero" : is_failure(s) ? "num bad" : "num";
        o += std::string("<td class=\"") + cls + "\">" + std::to_string(c[s]) + "</td>";
      }
      o += "<td class=\"num\">" + std::to_string(c.total) + "</td></tr>\n";
    };
    for (const auto& [name, c] : by_backend) row("<code>" + h(name) + "</code>", c);
    if (by_backend.size() > 1) row("all", total);
    o += "</table>\n";
  }

  // Backend x feature matrix: a row per feature, a column per backend.
  o += "<h2>Backend &#215; feature matrix</h2>\n";
  auto matrix = reports::feature_matrix(run);
  if (!matrix.empty()) {
    o += "<p class=\"legend\">Each cell: pass / fail / not supported (/ invalid, mistrusted or not "
         "judged)"
         "<span class=\"sw pass\"></span>pass (incl. QUALITY_WARNING)"
         "<span class=\"sw fail\"></span>fail (FAIL, CRASH, TIMEOUT)"
         "<span class=\"sw ns\"></span>not supported"
         "<span class=\"sw other\"></span>invalid, mistrusted or not judged"
         "<span class=\"sw xfail\"></span>XFAIL: a known failure (--expect), shown as "
         "(N XFAIL)</p>\n";
    o += "<div class=\"scroll\"><table class=\"matrix\"><tr><th>feature</th>";
    for (const auto& [backend, cells] : matrix) o += "<th><code>" + h(backend) + "</code></th>";
    o += "</tr>\n";
    for (const auto& feature : reports::feature_columns(run)) {
      o += "<tr><th class=\"feature\"><code>" + h(feature) + "</code></th>";
      for (const auto& [backend, cells] : matrix) {
        auto it = cells.find(feature);
        o += matrix_cell(it == cells.end() ? FeatureCell{} : it->second);
      }
      o += "</tr>\n";
    }
    o += "</table></div>\n";
  } else {
    o += "<p>No cases ran.</p>\n";
  }

  // err/tol histograms.
  o += "<h2>err/tol per backend</h2>\n";
  o += "<p class=\"note\">Worst error/tolerance ratio of each PASS, QUALITY_WARNING and FAIL "
       "case. A correct backend sits well left of the bound.</p>\n";
  auto hists = reports::ratio_histograms(run);
  if (hists.empty()) {
    o += "<p>No measured cases.</p>\n";
  } else {
    o += "<div class=\"charts\">\n";
    for (const auto& [backend, bins] : hists) {
      std::int64_t n = 0;
      for (auto b : bins) n += b;
      double max_ratio = 0;
      bool nan = false;
      for (const auto& r : run.records) {
        if (r.backend != backend || !has_ratio(r.status)) continue;
        if (std::isnan(r.worst_ratio)) nan = true;
        max_ratio = std::max(max_ratio, r.worst_ratio);
      }
      o += "<figure>" + histogram_svg(backend, bins) + "<figcaption><b>" + h(backend) +
           "</b>: " + std::to_string(n) + " measured, max err/tol " +
           (nan ? std::string("nan") : reports::format_number(max_ratio)) +
           "</figcaption></figure>\n";
    }
    o += "</div>\n";
  }

  // The backward: gradients judged per backend, the worst err/tol of each gradient tensor.
  if (const auto grads = reports::gradient_tallies(run); !grads.empty()) {
    o += "<h2>Backward (dQ, dK, dV, d bias)</h2>\n<table><tr><th>backend</th><th "
         "class=\"num\">judged</th>"
         "<th class=\"num\">passed</th><th class=\"num\">worst dq</th><th class=\"num\">worst "
         "dk</th><th class=\"num\">worst dv</th><th class=\"num\">worst dbias</th><th "
         "class=\"num\">nondeterministic</th></tr>\n";
    for (const auto& entry : grads) {
      // Named, not a structured binding: lambdas below capture it (Clang before 16 refuses).
      const std::string& name = entry.first;
      const reports::GradientTally& t = entry.second;
      auto cell = [&](const char* k) {
        const auto it = t.worst.find(k);
        if (it == t.worst.end()) return std::string("<td class=\"num\">-</td>");
        return std::string("<td class=\"num") + (it->second <= 1 ? "" : " bad") + "\">" +
               reports::format_number(it->second, 4) + "</td>";
      };
      o += "<tr><td><code>" + h(name) + "</code></td><td class=\"num\">" +
           std::to_string(t.judged) + "</td><td class=\"num\">" + std::to_string(t.passed) +
           "</td>" + cell("dq") + cell("dk") + cell("dv") + cell("dbias") + "<td class=\"num\">" +
           std::to_string(t.nondeterministic) + "</td></tr>\n";
    }
    o += "</table>\n";
  }

  // Worst cases.
  auto worst = reports::worst_cases(run, kWorstInHtml);
  o += "<h2>Worst cases</h2>\n";
  if (worst.empty()) {
    o += "<p>No measured case with an error.</p>\n";
  } else {
    o += "<table><tr><th class=\"num\">#</th><th class=\"num\">err/tol</th><th>status</th>"
         "<th>backend</th><th>case</th><th>where</th><th class=\"num\">max abs error</th>"
         "<th>repro</th></tr>\n";
    for (std::size_t i = 0; i < worst.size(); ++i) {
      const CaseRecord& r = *worst[i];
      o += "<tr><td class=\"num\">" + std::to_string(i + 1) + "</td><td class=\"num" +
           (r.worst_ratio <= 1 ? "" : " bad") + "\">" + reports::format_number(r.worst_ratio, 4) +
           "</td><td>" + status_span(r.status) + "</td><td><code>" + h(r.backend) +
           "</code></td><td class=\"case\"><code>" + h(r.case_id) + "</code></td><td><code>" +
           h(r.worst_where) + "</code></td><td class=\"num\">" +
           reports::format_number(r.max_abs_error, 4) + "</td>" + repro_cell(r) + "</tr>\n";
    }
    o += "</table>\n";
  }

  // Failures, then the other findings.
  std::vector<const CaseRecord*> failures, findings, known;
  for (const auto& r : run.records) {
    if (is_failure(r.status)) {
      failures.push_back(&r);
    } else if (r.status == Status::expected_failure) {
      known.push_back(&r);
    } else if (r.status != Status::pass && r.status != Status::not_supported) {
      findings.push_back(&r);
    }
  }
  o += "<h2>Failures (" + std::to_string(failures.size()) + ")</h2>\n";
  if (failures.empty()) {
    o += "<p>None.</p>\n";
  } else {
    records_table(o, failures);
  }
  if (!findings.empty()) {
    o += "<h2>Warnings, invalid, mistrusted and not judged cases (" +
         std::to_string(findings.size()) + ")</h2>\n";
    records_table(o, findings);
  }

  // Known failures (--expect): the XFAIL records, then the listed cases that passed.
  if (!known.empty()) {
    o += "<h2>Known failures (" + std::to_string(known.size()) + " XFAIL)</h2>\n";
    o += "<p class=\"note\">Listed in the expectations file " +
         h(run.expectations.empty() ? std::string("(--expect)") : run.expectations) +
         "; they do not fail the run. The message keeps the original status.</p>\n";
    records_table(o, known, true);
  }
  auto passing = unexpectedly_passing(run.records);
  if (!passing.empty()) {
    o += "<h2>Unexpectedly passing (" + std::to_string(passing.size()) + ")</h2>\n";
    o += "<p class=\"note\">Listed as known failures, yet they passed: remove their lines "
         "from the expectations file.</p>\n";
    records_table(o, passing, true);
  }

  // Why backends declined: NOT_SUPPORTED grouped by backend and reason.
  std::map<std::pair<std::string, std::string>, std::int64_t> declines;
  for (const auto& r : run.records) {
    if (r.status == Status::not_supported) ++declines[{r.backend, r.message}];
  }
  if (!declines.empty()) {
    std::vector<std::pair<std::pair<std::string, std::string>, std::int64_t>> rows(declines.begin(),
                                                                                   declines.end());
    std::stable_sort(rows.begin(), rows.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    o += "<h2>Why backends declined (" + std::to_string(total[Status::not_supported]) +
         " NOT_SUPPORTED)</h2>\n";
    o += "<table><tr><th class=\"num\">cases</th><th>backend</th><th>reason</th></tr>\n";
    for (std::size_t i = 0; i < std::min(rows.size(), kDeclineReasons); ++i) {
      o += "<tr><td class=\"num\">" + std::to_string(rows[i].second) + "</td><td><code>" +
           h(rows[i].first.first) + "</code></td><td><pre>" +
           h(reports::truncate_utf8(rows[i].first.second, kMessageBytes)) + "</pre></td></tr>\n";
    }
    o += "</table>\n";
    if (rows.size() > kDeclineReasons) {
      o += "<p class=\"note\">" + std::to_string(rows.size() - kDeclineReasons) +
           " more reasons not shown: see results.jsonl.</p>\n";
    }
  }

  o += "<footer>sdpa-cts " + h(run.tool_version) +
       ". The same run as data: results.jsonl, summary.json, junit.xml (docs/REPORTS.md)."
       "</footer>\n</body>\n</html>\n";
  return o;
}

}  // namespace sdpa::reports
