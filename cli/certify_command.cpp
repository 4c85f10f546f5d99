// `sdpa-cts certify --backend B [--plugin P] --profile NAME [--device D] --out DIR`: runs a
// certification profile's cases on one backend and writes a bundle others can verify
// (conformance/certification/bundle.hpp, docs/CERTIFICATION.md). Exit code 0: the profile is met
// (for a shard: no required case failed in it); 1: not met; 2: bad usage or input.
#include <omp.h>

#include <filesystem>
#include <iostream>

#include "cli/bundle_verify_hint.hpp"
#include "cli/commands.hpp"
#include "cli/engine_options.hpp"
#include "conformance/certification/bundle.hpp"
#include "conformance/certification/manifest.hpp"
#include "conformance/certification/profile.hpp"
#include "conformance/certification/sha256.hpp"
#include "conformance/judge/tolerance.hpp"
#include "core/build_info.hpp"
#include "kernels/backend_json.hpp"
#include "kernels/registry.hpp"

namespace sdpa::cli {

using namespace sdpa::conformance;
using ojson = nlohmann::ordered_json;

namespace {

struct Options {
  RunRequest request;
  std::string backend;                    // --backend
  std::string profile;                    // --profile
  std::string out;                        // --out
  std::uint64_t seed = 0;                 // --seed (sampling seed; default: the profile's)
  bool seed_given = false;                // whether --seed was given
  std::string shard;                      // --shard K/N
  std::string expect_file;                // --expect FILE
  std::vector<std::string> expect_facts;  // --expect-fact NAME=VERSION
};

// The command line that reproduces this certification.
std::string command_line(const Options& o, std::uint64_t seed) {
  std::string c = "sdpa-cts certify --backend " + o.backend + " --profile " + o.profile +
                  " --device " + o.request.device + " --seed " + std::to_string(seed);
  for (const auto& p : o.request.plugins) c += " --plugin " + p;
  if (!o.request.simd.empty()) c += " --simd " + o.request.simd;
  if (o.request.threads) c += " --threads " + std::to_string(o.request.threads);
  if (!o.request.shard.whole()) c += " --shard " + shard_name(o.request.shard);
  if (!o.expect_file.empty()) c += " --expect " + o.expect_file;
  for (const auto& f : o.expect_facts) c += " --expect-fact " + f;
  return c + " --out " + o.out;
}

int certify(Options opt) {
  finish_run_request(&opt.request, opt.shard, opt.expect_file, opt.expect_facts);
  if (opt.request.simd == "all") {
    throw std::invalid_argument(
        "certify runs one SIMD target (--simd NAME), not all: certify each target apart");
  }
  opt.request.backends = {opt.backend};
  const Profile profile = load_profile(opt.profile);
  const std::uint64_t seed = opt.seed_given ? opt.seed : profile.sample_seed;
  const auto cases = profile_cases(profile, seed);
  const RunResult result = execute_run(opt.request, cases, "profile:" + profile.name);
  const ProfileVerdict verdict = judge_profile(profile, result.summary.records, cases.size());
  print_run_summary(result);

  BundleContents bundle;
  bundle.run = result.summary;
  bundle.run.seed = seed;
  bundle.case_list = case_list_text(cases);
  bundle.profile_text = profile.text;
  if (!opt.request.expected.file.empty()) bundle.expectations = opt.request.expected.text;

  ojson backend;
  backend["name"] = opt.backend;
  const plugins::ProbedPlugin* from = nullptr;
  const plugins::ProbedBackend* described = nullptr;
  for (const auto& p : result.probed)
    for (const auto& b : p.backends)
      if (b.name == opt.backend) from = &p, described = &b;
  if (from) {
    backend["builtin"] = false;
    backend["plugin"] = {{"file", std::filesystem::path(from->path).filename().string()},
                         {"sha256", sha256_file(from->path)},
                         {"name", from->name},
                         {"version", from->version},
                         {"abi", from->abi}};
    const ojson d = ojson::parse(described->description);
    backend["capabilities"] = d.at("capabilities");
    backend["precision"] = d.at("precision");
  } else {
    const ojson d = backend_json(*find_backend(opt.backend));
    backend["builtin"] = true;
    backend["plugin"] = nullptr;
    backend["capabilities"] = d.at("capabilities");
    backend["precision"] = d.at("precision");
  }
  ojson run;
  run["command"] = command_line(opt, seed);
  run["device"] = opt.request.device;
  run["simd"] = opt.request.simd;
  run["jobs"] = opt.request.jobs;
  run["threads"] = opt.request.threads;
  run["omp_max_threads"] = omp_get_max_threads();
  run["timeout_seconds"] = opt.request.timeout;
  run["shard"] = {{"index", opt.request.shard.index}, {"count", opt.request.shard.count}};
  run["started_at"] = result.summary.started_at;
  run["seconds"] = result.summary.seconds;
  CertificationRun cr;
  cr.profile = &profile;
  cr.seed = seed;
  cr.cases = cases.size();
  cr.case_list = bundle.case_list;
  cr.device =
      opt.request.simd.empty() ? result.device : with_isa_target(result.device, opt.request.simd);
  cr.backend = backend;
  cr.run = run;
  cr.expectations = bundle.expectations;
  cr.expectations_file = std::filesystem::path(opt.expect_file).filename().string();
  cr.expectation_entries = opt.request.expected.entries.size();
  bundle.manifest = certification_manifest(cr, verdict, result.summary.records.size());
  write_bundle(opt.out, bundle);

  const bool partial = !opt.request.shard.whole();
  std::cout << "profile " << profile.name << ": " << opt.backend << " on " << result.device.name
            << ": "
            << (partial ? (verdict.reasons.empty() ? "no required case failed in shard "
                                                   : "NOT MET in shard ") +
                              shard_name(opt.request.shard) + " (merge the shards for the verdict)"
                        : (verdict.met ? "MET" : "NOT MET"))
            << " (" << verdict.required_passed << "/" << verdict.required
            << " required cases pass, " << verdict.outside << " outside its features recorded)\n";
  const std::size_t shown = std::min<std::size_t>(verdict.reasons.size(), 20);
  for (std::size_t i = 0; i < shown; ++i) std::cout << "  " << verdict.reasons[i] << "\n";
  if (verdict.reasons.size() > shown) {
    std::cout << "  ... and " << verdict.reasons.size() - shown << " more (manifest.json)\n";
  }
  std::cout << "bundle: " << opt.out
            << " (check it with: " << bundle_verify_command(opt.out, from ? from->path : "")
            << ")\n";
  return verdict.reasons.empty() && (verdict.met || partial) ? 0 : 1;
}

}  // namespace

Command add_certify_command(CLI::App& parent) {
  auto opt = std::make_shared<Options>();
  auto* cmd = parent.add_subcommand(
      "certify", "Run a certification profile on one backend and write a verifiable bundle");
  cmd->add_option("--backend", opt->backend, "The backend to certify (built in or from --plugin)")
      ->required();
  std::string profiles;
  for (const auto& n : builtin_profile_names()) profiles += (profiles.empty() ? "" : ", ") + n;
  cmd->add_option("--profile", opt->profile, "Profile name (" + profiles + ") or profile file")
      ->required();
  cmd->add_option("--out", opt->out,
                  "Directory for the bundle (absent, empty, or an earlier bundle)")
      ->required();
  cmd->add_option("--seed", opt->seed,
                  "Seed of the profile's sampled cases (default: the profile's)")
      ->each([opt](const std::string&) { opt->seed_given = true; });
  add_run_request_options(cmd, &opt->request, &opt->shard, &opt->expect_file, &opt->expect_facts);
  return {cmd, [opt] { return certify(*opt); }};
}

}  // namespace sdpa::cli
