// sdpa-cts: the command line of the SDPA reference-and-conformance suite.
//
// Exit codes: 0 success, 1 a case failed or the run found a problem, 2 bad usage or
// invalid input (the message names the field).
#include <iostream>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "sdpa-cts: reference, kernels and conformance tests for scaled dot-product attention"};
  app.set_version_flag("--version", std::string("sdpa-cts ") + SDPA_CTS_VERSION);
  app.require_subcommand(1);
  auto run_run = sdpa::cli::add_run_command(app);
  auto run_reference = sdpa::cli::add_reference_command(app);
  auto run_explain = sdpa::cli::add_explain_command(app);
  auto run_golden = sdpa::cli::add_golden_command(app);
  auto run_bench = sdpa::cli::add_bench_command(app);
  auto run_cases = sdpa::cli::add_cases_command(app);
  auto run_judge = sdpa::cli::add_judge_command(app);
  auto run_certify = sdpa::cli::add_certify_command(app);
  auto run_verify_bundle = sdpa::cli::add_verify_bundle_command(app);
  auto run_fuzz = sdpa::cli::add_fuzz_command(app);
  auto run_shrink = sdpa::cli::add_shrink_command(app);
  auto run_report = sdpa::cli::add_report_command(app);
  auto run_pairs = sdpa::cli::add_pairs_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    if (app.got_subcommand("run")) return run_run();
    if (app.got_subcommand("reference")) return run_reference();
    if (app.got_subcommand("bench")) return run_bench();
    if (app.got_subcommand("explain")) return run_explain();
    if (app.got_subcommand("golden")) return run_golden();
    if (app.got_subcommand("cases")) return run_cases();
    if (app.got_subcommand("judge")) return run_judge();
    if (app.got_subcommand("certify")) return run_certify();
    if (app.got_subcommand("verify-bundle")) return run_verify_bundle();
    if (app.got_subcommand("fuzz")) return run_fuzz();
    if (app.got_subcommand("shrink")) return run_shrink();
    if (app.got_subcommand("report")) return run_report();
    if (app.got_subcommand("pairs")) return run_pairs();
  } catch (const std::exception& e) {
    std::cerr << "sdpa-cts: error: " << e.what() << "\n";
    return 2;
  }
  return 2;
}
