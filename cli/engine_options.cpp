#include "cli/engine_options.hpp"

#include <cstdlib>

#include "cli/number_checks.hpp"
#include "conformance/engine/byte_size.hpp"
#include "conformance/engine/case_memory.hpp"
#include "conformance/engine/case_sampler.hpp"

namespace sdpa::cli {

void add_plugin_option(CLI::App* cmd, std::vector<std::string>* paths) {
  cmd->add_option("--plugin", *paths,
                  "Load backends from this sdpa-cts plugin (a shared library; repeatable; "
                  "SDPA_CTS_PLUGINS adds more, separated by ':')");
}

void add_case_selection_options(CLI::App* cmd, CaseSelection* s) {
  cmd->add_option("--tier", s->tier, "Tier name (smoke, ci, nightly) or tier file; default smoke");
  cmd->add_option("--case", s->cases, "Case ID instead of a tier (repeatable)");
  cmd->add_option("--golden", s->golden, "Golden HDF5 file: its cases (with --case: that case)");
  cmd->add_option("--filter", s->filter, "Keep cases whose ID matches this regular expression");
  cmd->add_option("--seed", s->seed,
                  "Re-seed the data of generated cases (0 = as written); with --sample, the "
                  "sampler's seed (default 0)");
  cmd->add_option("--sample", s->sample,
                  "N cases drawn by the problem sampler (every family, every generator) "
                  "instead of a tier")
      ->check(cli::at_least(1));
  cmd->add_option("--max-work", s->max_work,
                  "Work budget of a sampled case, B*Hq*L*S*max(Dqk,Dv) (default " +
                      std::to_string(conformance::SamplerOptions{}.max_work) + ")")
      ->check(cli::at_least(1));
}

void add_run_request_options(CLI::App* cmd, RunRequest* request, std::string* shard_text,
                             std::string* expect_file, std::vector<std::string>* expect_facts) {
  cmd->add_option("--device", request->device,
                  "cpu (detected), cuda (the GPU, in a build with CUDA), auto, or a simulated CPU "
                  "this one can run (cpu-scalar, cpu-avx2, ...), with :key=value overrides "
                  "(cores=N, isa=TARGET), or smNN:emulate=1 (the fused CUDA kernels on the "
                  "host emulator)")
      ->capture_default_str();
  cmd->add_option("--jobs", request->jobs, "Worker processes at once")->check(cli::at_least(1));
  cmd->add_option("--threads", request->threads, "OpenMP threads per backend run (0 = default)")
      ->check(cli::at_least(0));
  cmd->add_option("--simd", request->simd, "SIMD target: " + isa_target_list() + ", or all");
  cmd->add_option("--timeout", request->timeout, "Per-case timeout in seconds")
      ->check(cli::greater_than_zero());
  cmd->add_option_function<std::string>(
         "--max-case-memory",
         [request](const std::string& text) {
           try {
             request->max_case_memory = conformance::parse_byte_size(text);
           } catch (const std::invalid_argument& e) {
             throw CLI::ValidationError("--max-case-memory", e.what());
           }
         },
         "Host memory the harness may use for one case (512M, 8G, ...); a case that needs more "
         "is NOT_JUDGED, or refused when named by --case. Default: half the physical memory (" +
             conformance::format_byte_size(conformance::physical_memory_bytes() / 2) +
             " here) divided by --jobs")
      ->type_name("SIZE");
  cmd->add_flag("--no-isolate", request->no_isolate, "Run cases in this process (for a debugger)");
  add_plugin_option(cmd, &request->plugins);
  cmd->add_option("--shard", *shard_text,
                  "Run shard K of N (K/N, 0-based): every N-th job; default: "
                  "TEST_SHARD_INDEX/TEST_TOTAL_SHARDS when set (docs/SCALE-OUT.md)");
  cmd->add_option("--expect", *expect_file,
                  "Known failures: a listed FAIL becomes XFAIL and does not fail the run; an "
                  "entry may hold on some hosts only, '[when cpu:FLAG isa:TARGET NAME>=VERSION]' "
                  "(docs/CERTIFICATION.md)");
  cmd->add_option("--expect-fact", *expect_facts,
                  "NAME=VERSION: a library version that --expect conditions such as "
                  "'[when NAME>=2.15]' compare with (repeatable)")
      ->type_name("NAME=VERSION");
}

void add_search_options(CLI::App* cmd, SearchOptions* o) {
  cmd->add_option("--backend", o->backend, "The backend (built in, or from a --plugin)")
      ->required();
  add_plugin_option(cmd, &o->plugins);
  cmd->add_option(
         "--device", o->device,
         "cpu, cuda (the GPU, in a build with CUDA), auto, or a simulated CPU this machine can "
         "run, or smNN:emulate=1 (the fused CUDA kernels on the host emulator)")
      ->capture_default_str();
  cmd->add_option("--simd", o->simd, "SIMD target: " + isa_target_list());
  cmd->add_option("--threads", o->threads, "OpenMP threads per run (0 = default)")
      ->check(cli::at_least(0));
  cmd->add_option("--jobs", o->jobs, "Worker processes at once")
      ->check(cli::at_least(1))
      ->capture_default_str();
  cmd->add_option("--timeout", o->timeout, "Seconds per case before it is a TIMEOUT")
      ->check(cli::greater_than_zero())
      ->capture_default_str();
}

}  // namespace sdpa::cli
