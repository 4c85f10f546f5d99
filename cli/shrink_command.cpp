// `sdpa-cts shrink --backend B --case ID [--plugin P] [--device D] [--simd T] [--threads N]
// [--jobs N] [--timeout S]`: reduces a failing case toward the smallest case ID that still
// fails the same way (same status) on the backend, and prints it as a repro command and a
// tier line (docs/FUZZING.md).
//
// Exit codes: 0 a failing case was shrunk (or was already minimal), 1 the case does not
// fail, 2 bad input.
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/engine_options.hpp"
#include "conformance/engine/case_memory.hpp"
#include "core/case_id.hpp"
#include "core/verdict.hpp"

namespace sdpa::cli {
namespace {

struct Options {
  SearchOptions search;
  std::string case_id;
};

int run(const Options& o) {
  try {
    const SearchTarget target(o.search);
    const Case c = parse_command_line_case(o.case_id);
    const std::string id = format_case_id(c);
    check_command_line_case_fits(id, c, false, conformance::case_memory_limit(0, o.search.jobs));
    const auto first = target.run({id});
    const conformance::Status status = first.at(0).status;
    if (!conformance::is_failure(status)) {
      std::cerr << "sdpa-cts: " << id << " does not fail on " << o.search.backend << " (status "
                << conformance::status_name(status) << "): nothing to shrink\n";
      return 1;
    }
    std::cout << "shrinking " << conformance::status_name(status) << " " << id << "\n";
    const conformance::ShrinkResult r = target.shrink(id, status);
    for (const auto& step : r.path)
      std::cout << "  still " << conformance::status_name(status) << ": " << step << "\n";
    std::cout << "smallest " << conformance::status_name(status) << " " << r.case_id << " ("
              << r.path.size() << " steps, " << r.tried << " candidates run in " << r.rounds
              << " rounds)\n"
              << "  repro: " << target.repro(r.case_id) << "\n"
              << "  tier line: " << r.case_id << "\n";
    return 0;
  } catch (const std::invalid_argument& e) {
    std::cerr << "sdpa-cts: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace

Command add_shrink_command(CLI::App& parent) {
  auto opt = std::make_shared<Options>();
  auto* cmd = parent.add_subcommand(
      "shrink", "Reduce a failing case to the smallest case ID that still fails the same way");
  cmd->add_option("--case", opt->case_id, "The failing case ID")->required();
  add_search_options(cmd, &opt->search);
  return {cmd, [opt] { return run(*opt); }};
}

}  // namespace sdpa::cli
