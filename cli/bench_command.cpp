// `sdpa-cts bench --backend B --case ID [--threads N] [--repeat N] [--warmup N] [--simd T]`:
// times one backend on one case's generated data and prints one JSON line: the best and
// median seconds over --repeat runs (after --warmup untimed runs), GFLOP/s with forward
// FLOPs = 4 * B * Hq * L * S * D (D = (Dqk + Dv) / 2, halved when causal), and the bytes of
// K and V read per second (the figure of merit of decode shapes, L = 1). cpu_seconds_best
// (process CPU time of the fastest run, all threads) shows whether the cores were shared;
// Linux adds the CPU time of threads running on other cores at scheduler ticks (a few ms),
// so for runs that short it under-counts them and means little.
//
// A backward case (`bwd`) also times the backward pass alone (run_backward after one forward
// run has written O and the LSE): backward_seconds_best / _median, backward_gflops_* with the
// backward's FLOPs counted as 2.5 times the forward's (FlashAttention's convention: five
// matrix products against the forward's two), and backward_over_forward, the ratio of the
// best backward time to the best forward time.
//
// Exit codes: 0 timed; 2 bad usage: unknown backend or SIMD target, invalid case ID or
// problem, or a problem the backend declines (every reason is printed).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "cli/commands.hpp"
#include "cli/engine_options.hpp"
#include "cli/number_checks.hpp"
#include "conformance/engine/data_gen.hpp"
#include "conformance/judge/memory_space.hpp"
#include "core/case_buffers.hpp"
#include "core/case_id.hpp"
#include "core/device.hpp"
#include "core/guarded_buffer.hpp"
#include "kernels/lowered_problem.hpp"
#include "kernels/registry.hpp"
#include "plugins/host/plugin_set.hpp"

namespace sdpa::cli {

using namespace sdpa::conformance;
namespace {

struct Options {
  std::string backend;
  std::string case_id;
  int threads = 0;
  int repeat = 5;
  int warmup = 1;
  std::string simd;
  std::string device = "cpu";
  std::vector<std::string> plugins;  // --plugin files
};

double forward_flops(const Problem& p) {
  double f = 2.0 * static_cast<double>(p.batch) * static_cast<double>(p.heads_q) *
             static_cast<double>(p.len_q) * static_cast<double>(p.len_kv) *
             static_cast<double>(p.head_dim_qk + p.head_dim_v);
  if (p.causal != Causal::none) f /= 2;
  return f;
}

// Bytes of K and V the problem reads (valid keys of every batch element, each KV head once).
double kv_bytes(const Problem& p) {
  double keys = 0;
  for (std::int64_t b = 0; b < p.batch; ++b) keys += static_cast<double>(seqlen_kv(p, b));
  return keys * static_cast<double>(p.heads_kv) *
         static_cast<double>(p.head_dim_qk + p.head_dim_v) *
         static_cast<double>(dtype_size(p.dtype));
}

// CPU time of the whole process (all threads): on a shared machine, wall time over CPU time
// tells how much of the run the cores were actually ours.
double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

int fail(const std::string& message) {
  std::cerr << "sdpa-cts bench: " << message << "\n";
  return 2;
}

int run(const Options& opt) {
  plugins::load_plugins_here(opt.plugins);  // after a probe in a child process each
  const Backend* backend = find_backend(opt.backend);
  if (!backend) {
    return fail("unknown backend '" + opt.backend + "' (known: " + backend_registry().names() +
                ")");
  }
  const auto parsed = parse_case_id(opt.case_id);
  if (const auto* e = std::get_if<CaseIdError>(&parsed)) return fail(e->message);
  const Case c = std::get<Case>(parsed);
  const Problem& p = c.problem;
  if (auto r = validate(p); !r.empty()) return fail("INVALID case " + opt.case_id + ": " + r);
  Device device;
  try {
    device = runnable_device(parse_device_or_throw(opt.device));
  } catch (const std::invalid_argument& e) {
    return fail(std::string("--device: ") + e.what());
  }
  try {
    device = with_isa_target(device, opt.simd);
  } catch (const std::invalid_argument& e) {
    return fail(std::string("--simd: ") + e.what());
  }
  if (Support s = backend->supports(p, device); !s.ok()) {
    std::string why;
    for (const auto& r : s.all_reasons()) why += "\n  - " + r;
    return fail(std::string(backend->name()) + " does not support " + opt.case_id + ":" + why);
  }

  InputBuffers in = make_inputs(c);
  OutputBuffers out = make_outputs(p);
  // A backend on another memory space (a GPU) gets copies there, made before the timing:
  // the times are the backend's run() alone (which returns when its work is done).
  std::unique_ptr<conformance::PlacedBuffers> placed;
  try {
    placed =
        std::make_unique<conformance::PlacedBuffers>(backend->run_memory_space(device), p, in, out);
  } catch (const std::runtime_error& e) {
    return fail(std::string(backend->name()) + ": " + e.what());
  }
  const Buffers& buf = placed->get();
  const RunOptions ro{opt.threads};
  // (wall seconds, process CPU seconds) of --repeat timed calls after --warmup untimed ones.
  auto time_runs = [&](const auto& call) {
    for (int k = 0; k < opt.warmup; ++k) call();
    std::vector<std::pair<double, double>> runs;
    for (int k = 0; k < opt.repeat; ++k) {
      const double c0 = process_cpu_seconds();
      const auto t0 = std::chrono::steady_clock::now();
      call();
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      runs.emplace_back(wall, process_cpu_seconds() - c0);
    }
    std::sort(runs.begin(), runs.end());
    return runs;
  };
  const auto runs = time_runs([&] { backend->run(LoweredProblem(p, buf), device, ro); });
  const double best = runs.front().first, median = runs[runs.size() / 2].first;
  const double flops = forward_flops(p), bytes = kv_bytes(p);
  const std::string simd =
      device.kind == DeviceKind::cpu ? std::string(isa_target_name(device.cpu.isa)) : "";
  nlohmann::json j;
  j["backend"] = backend->name();
  j["case"] = format_case_id(c);
  j["threads"] = opt.threads > 0 ? opt.threads : omp_get_max_threads();
  j["simd"] = simd;
  // Times on the host emulator measure the emulator, not a GPU: marked so that no one reads
  // them as GPU figures.
  if (device.kind == DeviceKind::cuda && device.cuda.emulated) j["emulated"] = true;
  j["repeat"] = runs.size();
  j["seconds_best"] = best;
  j["seconds_median"] = median;
  j["cpu_seconds_best"] = runs.front().second;  // of the fastest run, all threads together
  j["gflops_best"] = flops / best * 1e-9;
  j["gflops_median"] = flops / median * 1e-9;
  j["kv_bytes"] = bytes;
  j["kv_gbytes_per_s_best"] = bytes / best * 1e-9;
  j["kv_gbytes_per_s_median"] = bytes / median * 1e-9;
  if (p.backward) {
    // Host memory only: the backends with a backward are CPU ones (O and the LSE in `buf`
    // are the last forward run's).
    if (backend->run_memory_space(device) != MemorySpace::host) {
      return fail(std::string(backend->name()) + ": the backward is timed in host memory only");
    }
    GradientBuffers g = make_gradient_outputs(p);
    const GradientPointers grads{in.d_out->data(), g.dq.data(), g.dk.data(), g.dv.data()};
    const auto back =
        time_runs([&] { backend->run_backward(LoweredProblem(p, buf, grads), device, ro); });
    const double bbest = back.front().first, bmedian = back[back.size() / 2].first;
    j["backward_seconds_best"] = bbest;
    j["backward_seconds_median"] = bmedian;
    j["backward_gflops_best"] = 2.5 * flops / bbest * 1e-9;
    j["backward_gflops_median"] = 2.5 * flops / bmedian * 1e-9;
    j["backward_over_forward"] = bbest / best;
  }
  std::cout << j.dump() << "\n";
  return 0;
}

}  // namespace

Command add_bench_command(CLI::App& parent) {
  auto opt = std::make_shared<Options>();
  auto* cmd = parent.add_subcommand("bench", "Time a backend on a case (one JSON line)");
  cmd->add_option("--backend", opt->backend, "Backend name, e.g. cpu.mem_efficient")->required();
  cmd->add_option("--case", opt->case_id, "Case ID (docs/CASE_ID.md)")->required();
  cmd->add_option("--threads", opt->threads, "OpenMP threads (0 = default)")
      ->check(cli::at_least(0));
  cmd->add_option("--repeat", opt->repeat, "Timed runs (best and median are printed)")
      ->check(cli::at_least(1))
      ->capture_default_str();
  cmd->add_option("--warmup", opt->warmup, "Untimed runs first")
      ->check(cli::at_least(0))
      ->capture_default_str();
  cmd->add_option("--simd", opt->simd, "Force a SIMD target: " + isa_target_list());
  cmd->add_option(
         "--device", opt->device,
         "cpu (detected), cuda (the GPU, in a build with CUDA), auto, a simulated CPU this "
         "one can run, or smNN:emulate=1 (the fused CUDA kernels on the host emulator: "
         "figures marked emulated), with :key=value overrides")
      ->capture_default_str();
  add_plugin_option(cmd, &opt->plugins);
  return {cmd, [opt] { return run(*opt); }};
}

}  // namespace sdpa::cli
