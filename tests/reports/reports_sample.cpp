// Writes sample reports for the checks that need a real tool (xmllint against the JUnit schema,
// a browser): `reports_sample DIR` writes DIR/tricky (every status, characters that need
// escaping) and DIR/realistic (a few thousand plausible records).
#include <exception>
#include <filesystem>
#include <iostream>

#include "reports/reports.hpp"
#include "tests/reports/sample_run.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: reports_sample DIR\n";
    return 2;
  }
  try {
    std::filesystem::path dir = argv[1];
    sdpa::reports::write_reports(sdpa::testing::tricky_run(), (dir / "tricky").string());
    sdpa::reports::write_reports(sdpa::testing::realistic_run(3000), (dir / "realistic").string());
    sdpa::reports::write_reports(sdpa::conformance::RunSummary{}, (dir / "empty").string());
  } catch (const std::exception& e) {
    std::cerr << "reports_sample: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
