// sdpa-cts: the command line of the SDPA reference-and-conformance suite.
//
// Exit codes: 0 success, 1 a case failed or the run found a problem, 2 bad usage or
// invalid input (the message names the field).
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/old_spellings.hpp"

namespace {

using namespace sdpa::cli;

// The groups: commands that work on one kind of thing share its name.
struct Group {
  const char* name;
  const char* description;
};
constexpr Group kGroups[] = {
    {"golden", "Golden files (golden/SCHEMA.md)"},
    {"cases", "Cases as files: the results-file route (docs/PLUGINS.md)"},
    {"bundle", "Certification bundles (docs/CERTIFICATION.md)"},
    {"report", "Report directories (docs/REPORTS.md)"},
};

// The one table of commands, in the order `--help` lists them.
struct Entry {
  const char* group;  // nullptr: a top-level command
  AddCommand add;
};
constexpr Entry kCommands[] = {
    {nullptr, add_run_command},
    {nullptr, add_reference_command},
    {nullptr, add_explain_command},
    {nullptr, add_bench_command},
    {"golden", add_golden_verify_command},
    {"cases", add_cases_export_command},
    {"cases", add_cases_fill_command},
    {"cases", add_cases_judge_command},
    {nullptr, add_certify_command},
    {"bundle", add_bundle_verify_command},
    {"bundle", add_bundle_merge_command},
    {"report", add_report_merge_command},
    {nullptr, add_fuzz_command},
    {nullptr, add_shrink_command},
    {nullptr, add_pairs_command},
    {nullptr, add_probe_command},
};

CLI::App& parent_of(CLI::App& app, const char* group) {
  if (!group) return app;
  for (CLI::App* g : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (g->get_name() == group) return *g;
  }
  for (const Group& g : kGroups) {
    if (std::string(g.name) == group) {
      CLI::App* added = app.add_subcommand(g.name, g.description);
      added->require_subcommand(1);
      return *added;
    }
  }
  throw std::logic_error(std::string("command table: no group '") + group + "'");
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (const std::optional<std::string> renamed = new_spelling(args)) {
    std::cerr << "sdpa-cts: this command is now spelled:\n  " << *renamed
              << "\n(nothing was run)\n";
    return 2;
  }
  CLI::App app{
      "sdpa-cts: reference, kernels and conformance tests for scaled dot-product attention"};
  app.set_version_flag("--version", std::string("sdpa-cts ") + SDPA_CTS_VERSION);
  app.require_subcommand(1);
  std::vector<Command> commands;
  for (const Entry& e : kCommands) commands.push_back(e.add(parent_of(app, e.group)));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    for (const Command& c : commands) {
      if (c.app->parsed()) return c.run();
    }
  } catch (const std::exception& e) {
    std::cerr << "sdpa-cts: error: " << e.what() << "\n";
    return 2;
  }
  return 2;
}
