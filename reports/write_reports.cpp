// write_reports: every report of a run into one directory, each file atomically.
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <utility>
#include <vector>

#include "reports/atomic_file.hpp"
#include "reports/reports.hpp"

namespace sdpa::reports {

void write_reports(const RunSummary& run, const std::string& dir) {
  namespace fs = std::filesystem;
  // Render everything first: a failure here leaves every old report as it was.
  std::vector<std::pair<const char*, std::string>> files = {
      {kReportFiles[0], render_jsonl(run)},     {kReportFiles[1], render_summary_json(run)},
      {kReportFiles[2], render_junit_xml(run)}, {kReportFiles[3], render_markdown(run)},
      {kReportFiles[4], render_html(run)},
  };
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw std::runtime_error("cannot create the report directory '" + dir +
                             "': " + (ec ? ec.message() : std::string("not a directory")));
  }
  for (const auto& [name, content] : files) {
    write_file_atomically((fs::path(dir) / name).string(), content);
  }
}

}  // namespace sdpa::reports
