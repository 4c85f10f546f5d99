// The reports of a conformance run (docs/REPORTS.md): JSONL per case, a summary JSON, JUnit
// XML, a Markdown summary for pull-request comments and a self-contained HTML page. Each
// render_* function turns a RunSummary into the text of one file; write_reports writes all of
// them, each atomically.
#pragma once

#include <array>
#include <cstddef>
#include <string>

#include "reports/records/run_record.hpp"

namespace sdpa::reports {

// Reports are written in the conformance vocabulary (records, statuses, tallies).
using namespace sdpa::conformance;

// The file names write_reports writes, in the order it writes them.
inline constexpr std::array<const char*, 5> kReportFiles = {
    "results.jsonl", "summary.json", "junit.xml", "summary.md", "report.html"};

// One JSON object (one line, no newline) for a record: the results.jsonl line.
std::string jsonl_line(const CaseRecord& record);

// results.jsonl: one jsonl_line per record, in run order, each ending with '\n'.
std::string render_jsonl(const RunSummary& run);

// summary.json: the run, counts per status and per backend, the err/tol histogram and the worst
// cases (pretty-printed, ends with '\n').
std::string render_summary_json(const RunSummary& run);

// junit.xml: one <testsuite> per backend, one <testcase> per record.
std::string render_junit_xml(const RunSummary& run);

// How long summary.md may get (GitHub caps comments at 65536 characters).
struct MarkdownLimits {
  std::size_t max_failures = 20;        // failures shown with their message and repro
  std::size_t max_message_bytes = 600;  // each message is cut after this many bytes
  std::size_t max_bytes = 60000;        // the whole document stays under this
};

// summary.md: the verdict, a status table per backend, failures with their repro commands.
std::string render_markdown(const RunSummary& run, const MarkdownLimits& limits = {});

// report.html: one self-contained page (inline CSS and SVG, no scripts, no external resources).
std::string render_html(const RunSummary& run);

// Creates `dir` (and its parents) if needed and writes every file of kReportFiles into it, each
// atomically (write_file_atomically). Every report is rendered before the first is written.
// Throws std::runtime_error naming the directory or file that could not be written; reports
// already written stay complete, the others keep their previous content.
void write_reports(const RunSummary& run, const std::string& dir);

}  // namespace sdpa::reports
