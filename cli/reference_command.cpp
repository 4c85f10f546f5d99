// `sdpa-cts reference --case ID`: runs the reference on a case's generated data and prints
// a summary of the result (and its timing, for benchmarking the oracle itself).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/number_checks.hpp"
#include "conformance/engine/data_gen.hpp"
#include "core/case_id.hpp"
#include "reference/sdpa_reference.hpp"

namespace sdpa::cli {

using namespace sdpa::conformance;
namespace {

constexpr const char* kExampleCase =
    "b2.hq4.hkv2.l33.s47.dqk64.dv64.f32.causal=br.lse.seed1.gen=normal";

struct Options {
  std::string case_id = kExampleCase;
  bool json = false;
  std::string precision = "f64";
  int threads = 0;
  int repeat = 1;
};

// FNV-1a over the bytes of the output, a stable fingerprint of the result.
std::uint64_t fingerprint(const std::vector<double>& v) {
  std::uint64_t h = 1469598103934665603ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(v.data());
  for (std::size_t i = 0; i < v.size() * sizeof(double); ++i) {
    h ^= bytes[i];
    h *= 1099511628211ull;
  }
  return h;
}

struct Stats {
  double min = INFINITY, max = -INFINITY, mean_abs = 0;
  std::int64_t nan = 0, neg_inf = 0;
};

Stats stats_of(const std::vector<double>& v) {
  Stats s;
  std::int64_t finite = 0;
  for (double x : v) {
    if (std::isnan(x)) {
      ++s.nan;
      continue;
    }
    if (x == -INFINITY) ++s.neg_inf;
    if (!std::isfinite(x)) continue;
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
    s.mean_abs += std::fabs(x);
    ++finite;
  }
  if (finite) s.mean_abs /= static_cast<double>(finite);
  return s;
}

double forward_flops(const Problem& p) {
  // 4 * B * H * L * S * D (D = (Dqk + Dv) / 2), halved for causal when L = S.
  double f = 2.0 * static_cast<double>(p.batch) * p.heads_q * p.len_q * p.len_kv *
             (p.head_dim_qk + p.head_dim_v);
  if (p.causal != Causal::none) f /= 2;
  return f;
}

int run(const Options& opt) {
  const Case c = parse_case_id_or_throw(opt.case_id);
  if (auto r = validate(c.problem); !r.empty()) {
    std::cerr << "sdpa-cts: INVALID case " << opt.case_id << ": " << r << "\n";
    return 2;
  }
  reference::Precision precision;
  if (opt.precision == "f64") {
    precision = reference::Precision::f64;
  } else if (opt.precision == "binary128") {
    precision = reference::Precision::binary128;
  } else {
    std::cerr << "sdpa-cts: --precision must be f64 or binary128, got '" << opt.precision << "'\n";
    return 2;
  }
  const InputBuffers in = make_inputs(c);
  reference::Result r;
  double best = INFINITY;
  std::vector<double> times;
  for (int k = 0; k < std::max(opt.repeat, 1); ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    r = reference::run_sdpa(c.problem, in.pointers(), precision, opt.threads);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    times.push_back(dt);
    best = std::min(best, dt);
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  const Stats so = stats_of(r.o), sl = stats_of(r.lse);
  const int threads = opt.threads > 0 ? opt.threads : omp_get_max_threads();
  const std::string id = format_case_id(c);
  const double gflops = forward_flops(c.problem) / best * 1e-9;
  if (opt.json) {
    nlohmann::json j;
    j["case"] = id;
    j["precision"] = opt.precision;
    j["threads"] = threads;
    j["seconds_best"] = best;
    j["seconds_median"] = median;
    j["repeat"] = times.size();
    j["gflops"] = gflops;
    j["o"] = {{"elements", r.o.size()},  {"min", so.min}, {"max", so.max},
              {"mean_abs", so.mean_abs}, {"nan", so.nan}, {"fingerprint", fingerprint(r.o)}};
    j["lse"] = {{"rows", r.lse.size()},
                {"min", sl.min},
                {"max", sl.max},
                {"fully_masked_rows", sl.neg_inf},
                {"nan", sl.nan}};
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::cout << "case        " << id << "\n"
            << "precision   " << opt.precision << ", " << threads << " thread(s)\n"
            << "time        best " << best * 1e3 << " ms, median " << median * 1e3 << " ms over "
            << times.size() << " run(s), " << gflops << " GFLOP/s\n"
            << "O           " << r.o.size() << " elements, min " << so.min << ", max " << so.max
            << ", mean |O| " << so.mean_abs << ", NaN " << so.nan << "\n"
            << "LSE         " << r.lse.size() << " rows, min " << sl.min << ", max " << sl.max
            << ", fully masked rows " << sl.neg_inf << "\n"
            << "fingerprint " << std::hex << fingerprint(r.o) << std::dec << "\n";
  return 0;
}

}  // namespace

Command add_reference_command(CLI::App& parent) {
  auto opt = std::make_shared<Options>();
  auto* cmd =
      parent.add_subcommand("reference", "Run the reference on a case and summarise the result");
  cmd->add_option("--case", opt->case_id, "Case ID (docs/CASE_ID.md)")->capture_default_str();
  cmd->add_flag("--json", opt->json, "Print one JSON object");
  cmd->add_option("--precision", opt->precision, "f64 or binary128")->capture_default_str();
  cmd->add_option("--threads", opt->threads, "OpenMP threads (0 = default)")
      ->check(cli::at_least(0));
  cmd->add_option("--repeat", opt->repeat, "Runs to time (best and median are printed)")
      ->check(cli::at_least(1));
  return {cmd, [opt] { return run(*opt); }};
}

}  // namespace sdpa::cli
