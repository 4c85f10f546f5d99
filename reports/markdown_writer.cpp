// summary.md: a pull-request comment (docs/REPORTS.md). GitHub-flavoured Markdown; everything
// from the data is escaped or sits in a code span or block.
#include <algorithm>

#include "reports/markdown_text.hpp"
#include "reports/records/expectations.hpp"
#include "reports/reports.hpp"
#include "reports/tallies.hpp"
#include "reports/text.hpp"

namespace sdpa::reports {

namespace {

using reports::md_code;
using reports::md_text;

constexpr std::size_t kWorstInMarkdown = 5;
constexpr std::size_t kWarningsInMarkdown = 10;

std::string results_per_second(const RunSummary& run) {
  if (!(run.seconds > 0)) return "";
  return " (" + reports::format_number(static_cast<double>(run.records.size()) / run.seconds) +
         " results/s)";
}

// "N results (C cases, B backends; SIMD targets: ...)": a result is one (case, backend,
// SIMD target) verdict.
std::string results_text(const RunSummary& run) {
  const RunCoverage c = run_coverage(run);
  std::string targets;
  for (const auto& t : c.simd_targets) targets += (targets.empty() ? "" : ", ") + t;
  return std::to_string(c.results) + " results (" + std::to_string(c.cases) + " cases, " +
         std::to_string(c.backends) + " backends" +
         (targets.empty() ? "" : "; SIMD targets: " + targets) + ")";
}

}  // namespace

std::string render_markdown(const RunSummary& run, const MarkdownLimits& limits) {
  auto total = count_statuses(run);
  bool ok = total.failures() == 0;
  std::string md;
  md += ok ? "## sdpa-cts conformance: \xE2\x9C\x85 passed\n\n"
           : "## sdpa-cts conformance: \xE2\x9D\x8C failed\n\n";
  md += md_code(summary_line(total)) + "\n\n";
  md += "Tier " + md_code(run.tier) + " on " + md_code(run.device) + ": " + results_text(run) +
        " in " + reports::format_number(run.seconds, 3) + " s" + results_per_second(run) +
        ", seed " + std::to_string(run.seed) + ", tolerances " + md_code(run.tolerance_version) +
        ", sdpa-cts " + md_code(run.tool_version) +
        (run.started_at.empty() ? "" : ", started " + md_text(run.started_at)) + ".\n\n";

  // Status table: PASS and FAIL always, other statuses only when they occur.
  std::vector<Status> cols;
  for (Status s : kAllStatuses) {
    if (s == Status::pass || s == Status::fail || total[s] > 0) cols.push_back(s);
  }
  auto by_backend = reports::counts_by_backend(run);
  if (!by_backend.empty()) {
    md += "| backend |";
    for (Status s : cols) md += std::string(" ") + status_name(s) + " |";
    md += " total |\n|---|";
    for (std::size_t i = 0; i <= cols.size(); ++i) md += "--:|";
    md += "\n";
    auto row = [&](const std::string& name, const StatusCounts& c) {
      md += "| ";
      md += name;
      md += " |";
      for (Status s : cols) {
        const char* mark = is_failure(s) && c[s] > 0 ? "**" : "";
        md += ' ';
        md += mark;
        md += std::to_string(c[s]);
        md += mark;
        md += " |";
      }
      md += ' ';
      md += std::to_string(c.total);
      md += " |\n";
    };
    for (const auto& [name, c] : by_backend) row(md_code(name, true), c);
    if (by_backend.size() > 1) row("**all**", total);
    md += "\n";
  } else {
    md += "No cases ran.\n\n";
  }

  // The backward: gradients judged per backend, the worst err/tol of each gradient tensor.
  if (const auto grads = reports::gradient_tallies(run); !grads.empty()) {
    md +=
        "### Backward (dQ, dK, dV, d bias)\n\n| backend | judged | passed | worst dq | worst dk | "
        "worst dv "
        "| worst dbias | nondeterministic |\n|---|--:|--:|--:|--:|--:|--:|--:|\n";
    for (const auto& entry : grads) {
      // Named, not a structured binding: lambdas below capture it (Clang before 16 refuses).
      const std::string& name = entry.first;
      const reports::GradientTally& t = entry.second;
      auto worst = [&](const char* k) {
        const auto it = t.worst.find(k);
        return it == t.worst.end() ? std::string("-") : reports::format_number(it->second);
      };
      md += "| " + md_code(name, true) + " | " + std::to_string(t.judged) + " | " +
            std::to_string(t.passed) + " | " + worst("dq") + " | " + worst("dk") + " | " +
            worst("dv") + " | " + worst("dbias") + " | " + std::to_string(t.nondeterministic) +
            " |\n";
    }
    md += "\n";
  }

  // Failures, each with its message and repro command, as many as the limits allow. The tail
  // (worst cases, warnings) is rendered first so its size can be reserved.
  std::string tail;
  auto worst = reports::worst_cases(run, kWorstInMarkdown);
  if (!worst.empty()) {
    tail += "### Closest to the bound\n\n| err/tol | status | backend | case | where |\n";
    tail += "|--:|---|---|---|---|\n";
    for (const CaseRecord* r : worst) {
      tail += "| " + reports::format_number(r->worst_ratio) + " | " + status_name(r->status) +
              " | " + md_code(r->backend, true) + " | " + md_code(r->case_id, true) + " | " +
              md_code(r->worst_where, true) + " |\n";
    }
    tail += "\n";
  }
  std::vector<const CaseRecord*> warnings;
  for (const auto& r : run.records) {
    bool warn = r.status == Status::quality_warning || r.status == Status::mistrusted ||
                r.status == Status::invalid || r.status == Status::not_judged;
    if (warn) warnings.push_back(&r);
  }
  if (!warnings.empty()) {
    tail += "### Warnings (" + std::to_string(warnings.size()) + ")\n\n";
    for (std::size_t i = 0; i < std::min(warnings.size(), kWarningsInMarkdown); ++i) {
      const CaseRecord& r = *warnings[i];
      tail += std::string("- **") + status_name(r.status) + "** " + md_code(r.backend) + " " +
              md_code(r.case_id) + ": " +
              md_text(reports::truncate_utf8(reports::first_line(r.message), 200)) + "\n";
    }
    if (warnings.size() > kWarningsInMarkdown) {
      tail += "- ... and " + std::to_string(warnings.size() - kWarningsInMarkdown) +
              " more in `results.jsonl`\n";
    }
    tail += "\n";
  }
  // Known failures (--expect): how many, the first few with their reasons, and the listed
  // cases that passed (their lines can go).
  auto known_item = [](const CaseRecord& r) {
    return std::string("- ") + md_code(r.backend) + " " + md_code(r.case_id) + ": " +
           md_text(reports::truncate_utf8(reports::first_line(r.expected), 200)) + "\n";
  };
  auto more = [](std::size_t n, std::size_t shown) {
    return n > shown ? "- ... and " + std::to_string(n - shown) + " more in `results.jsonl`\n"
                     : std::string();
  };
  std::vector<const CaseRecord*> known;
  for (const auto& r : run.records) {
    if (r.status == Status::expected_failure) known.push_back(&r);
  }
  if (!known.empty()) {
    tail += "### Known failures (" + std::to_string(known.size()) + " XFAIL)\n\n";
    for (std::size_t i = 0; i < std::min(known.size(), kWarningsInMarkdown); ++i) {
      tail += known_item(*known[i]);
    }
    tail += more(known.size(), kWarningsInMarkdown) + "\n";
  }
  auto passing = unexpectedly_passing(run.records);
  if (!passing.empty()) {
    tail += "### Unexpectedly passing (" + std::to_string(passing.size()) +
            ")\n\nListed as known failures, yet they passed: remove their lines from the "
            "expectations file.\n\n";
    for (std::size_t i = 0; i < std::min(passing.size(), kWarningsInMarkdown); ++i) {
      tail += known_item(*passing[i]);
    }
    tail += more(passing.size(), kWarningsInMarkdown) + "\n";
  }
  std::string footer =
      "<sub>Full results: `results.jsonl`, `junit.xml`, `report.html` "
      "(docs/REPORTS.md).</sub>\n";

  if (total.failures() > 0) {
    md += "### Failures (" + std::to_string(total.failures()) + ")\n\n";
    std::size_t shown = 0;
    std::size_t budget = limits.max_bytes > md.size() + tail.size() + footer.size() + 200
                             ? limits.max_bytes - tail.size() - footer.size() - 200
                             : 0;
    for (const auto& r : run.records) {
      if (!is_failure(r.status)) continue;
      if (shown == limits.max_failures) break;
      std::string item = std::string("**") + status_name(r.status) + "** " + md_code(r.backend) +
                         " " + md_code(r.case_id) + "\n\n" +
                         reports::md_code_block(
                             reports::truncate_utf8(r.message, limits.max_message_bytes), "text");
      if (!r.repro.empty()) item += reports::md_code_block(r.repro, "sh");
      item += "\n";
      if (md.size() + item.size() > budget) break;
      md += item;
      ++shown;
    }
    if (shown < static_cast<std::size_t>(total.failures())) {
      md += "... " + std::to_string(total.failures() - static_cast<std::int64_t>(shown)) +
            " more failures not shown: see `results.jsonl` or `junit.xml`.\n\n";
    }
  }
  md += tail;
  md += footer;
  return md;
}

}  // namespace sdpa::reports
