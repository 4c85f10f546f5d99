// The command-line options of the run engine's requests (conformance/engine): each adds the
// options that fill one engine struct to a CLI11 command. The engine itself never sees CLI11.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "conformance/engine/case_search.hpp"
#include "conformance/engine/case_selection.hpp"
#include "conformance/engine/command_line_case.hpp"
#include "conformance/engine/conformance_run.hpp"

namespace sdpa::cli {

// The commands speak the engine's vocabulary.
using conformance::CaseSelection;
using conformance::check_command_line_case_fits;
using conformance::execute_run;
using conformance::finish_run_request;
using conformance::parse_command_line_case;
using conformance::print_run_summary;
using conformance::RunRequest;
using conformance::RunResult;
using conformance::SearchOptions;
using conformance::SearchTarget;
using conformance::select_cases;
using conformance::SelectedCase;

// Adds --plugin to `cmd`, collecting into `paths`.
void add_plugin_option(CLI::App* cmd, std::vector<std::string>* paths);

// Adds --tier, --case, --golden, --filter, --seed, --sample and --max-work to `cmd`.
void add_case_selection_options(CLI::App* cmd, CaseSelection* selection);

// Adds --jobs, --threads, --simd, --timeout, --max-case-memory, --no-isolate, --device,
// --plugin, --shard, --expect and --expect-fact (the options `run` and `certify` share) to `cmd`;
// each command adds its own --backend (run_command.cpp, certify_command.cpp: `run` takes several);
// `shard_text`, `expect_file` and `expect_facts` receive --shard, --expect and --expect-fact,
// for finish_run_request.
void add_run_request_options(CLI::App* cmd, RunRequest* request, std::string* shard_text,
                             std::string* expect_file, std::vector<std::string>* expect_facts);

// Adds --backend, --plugin, --device, --simd, --threads, --jobs and --timeout to `cmd`.
void add_search_options(CLI::App* cmd, SearchOptions* o);

}  // namespace sdpa::cli
