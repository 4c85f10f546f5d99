#include "core/verdict.hpp"

namespace sdpa::conformance {

const char* status_name(Status s) {
  switch (s) {
    case Status::pass:
      return "PASS";
    case Status::fail:
      return "FAIL";
    case Status::not_supported:
      return "NOT_SUPPORTED";
    case Status::invalid:
      return "INVALID";
    case Status::mistrusted:
      return "MISTRUSTED";
    case Status::crash:
      return "CRASH";
    case Status::timeout:
      return "TIMEOUT";
    case Status::quality_warning:
      return "QUALITY_WARNING";
    case Status::expected_failure:
      return "XFAIL";
    case Status::not_judged:
      return "NOT_JUDGED";
  }
  return "?";
}

std::optional<Status> parse_status_name(std::string_view name) {
  for (Status s : kAllStatuses) {
    if (name == status_name(s)) return s;
  }
  return std::nullopt;
}

const char* status_key(Status s) {
  switch (s) {
    case Status::pass:
      return "passed";
    case Status::fail:
      return "failed";
    case Status::not_supported:
      return "not_supported";
    case Status::invalid:
      return "invalid";
    case Status::mistrusted:
      return "mistrusted";
    case Status::crash:
      return "crash";
    case Status::timeout:
      return "timeout";
    case Status::quality_warning:
      return "quality_warning";
    case Status::expected_failure:
      return "expected_failure";
    case Status::not_judged:
      return "not_judged";
  }
  return "unknown";
}

bool is_failure(Status s) {
  return s == Status::fail || s == Status::crash || s == Status::timeout;
}

bool is_pass(Status s) { return s == Status::pass || s == Status::quality_warning; }

bool has_ratio(Status s) { return is_pass(s) || s == Status::fail; }

std::int64_t StatusCounts::failures() const {
  std::int64_t f = 0;
  for (Status s : kAllStatuses) f += is_failure(s) ? (*this)[s] : 0;
  return f;
}

void StatusCounts::add(Status s) {
  const auto i = static_cast<std::size_t>(s);
  if (i < n.size()) ++n[i];
  ++total;
}

std::string summary_line(const StatusCounts& counts) {
  std::string line;
  for (Status s : kAllStatuses) {
    if (!line.empty()) line += ' ';
    line += std::string(status_key(s)) + ": " + std::to_string(counts[s]);
  }
  return line;
}

}  // namespace sdpa::conformance
