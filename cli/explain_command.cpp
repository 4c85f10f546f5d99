// `sdpa-cts explain --case ID... | --mha SPEC... | --sample N [--seed S] [--policy suite|pytorch]
// [--device D] [--backends B,...] [--json]`: which backend the dispatcher picks and, for every
// other one, why not; under the suite policy also what PyTorch picks and why this policy
// departs from it (docs/DISPATCH.md). Repeated --case or --mha options are answered in order,
// one explanation (one JSON line with --json) each, in one process.
//
// Exit codes: 0 a backend was selected (for --mha: the call has a path that runs), 1 none
// can run (the reasons are printed), 2 bad input (case ID, spec, device, backend name); with
// several cases or specs, the largest of theirs.
#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/engine_options.hpp"
#include "cli/number_checks.hpp"
#include "conformance/engine/case_sampler.hpp"
#include "core/case_id.hpp"
#include "core/device.hpp"
#include "dispatcher/dispatcher.hpp"
#include "dispatcher/explain_json.hpp"
#include "dispatcher/mha_path.hpp"
#include "dispatcher/pytorch_model.hpp"
#include "plugins/host/plugin_set.hpp"

namespace sdpa::cli {
namespace {

using nlohmann::json;
namespace d = sdpa::dispatcher;

struct Options {
  std::vector<std::string> case_ids;  // --case, repeatable
  std::vector<std::string> mhas;      // --mha, repeatable
  std::int64_t sample = 0;            // --sample N: N sampled problems, one line each
  std::uint64_t seed = 1;             // --seed S of the sample
  std::string policy = "suite";
  std::string device = "auto";
  std::string backends;
  bool set_priority = false;
  bool no_rules = false;
  bool deterministic = false;
  bool json = false;
  std::vector<std::string> plugins;  // --plugin files
};

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// The policy the options ask for, on top of the process default (SDPA_CTS_BACKENDS).
d::Policy make_policy(const Options& o) {
  d::Policy p = d::current_policy();
  p.model = d::parse_policy_model(o.policy);
  if (p.model == d::PolicyModel::pytorch && (p.enabled || !p.priority.empty())) {
    // SDPA_CTS_BACKENDS names this build's backends; PyTorch's own are chosen with --backends.
    p.enabled.reset();
    p.priority.clear();
  }
  if (!o.backends.empty()) {
    std::vector<std::string> names;
    std::stringstream ss(o.backends);
    for (std::string n; std::getline(ss, n, ',');) {
      if (n.empty())
        throw std::invalid_argument("--backends: empty backend name in '" + o.backends + "'");
      const auto& candidates = d::policy_backends(p);
      if (std::none_of(candidates.begin(), candidates.end(),
                       [&](const Backend* b) { return b->name() == n; })) {
        std::vector<std::string> known;
        for (const Backend* b : candidates) known.emplace_back(b->name());
        throw std::invalid_argument("--backends: unknown backend '" + n +
                                    "' (known: " + join(known, ", ") + ")");
      }
      names.push_back(n);
    }
    d::ScopedBackends scope(p);
    d::ScopedBackends narrowed(names, o.set_priority);
    p = d::current_policy();
  } else if (o.set_priority) {
    throw std::invalid_argument("--priority needs --backends");
  }
  if (o.no_rules) p.heuristics = false;
  if (o.deterministic) p.require_deterministic = true;
  return p;
}

std::string describe_policy(const d::Policy& p) {
  std::string s = p.model == d::PolicyModel::pytorch
                      ? std::string("pytorch (PyTorch ") + d::kModelledPytorch + "'s picker); "
                      : std::string("suite; ");
  s += p.enabled ? "enabled: " + (p.enabled->empty() ? std::string("none") : join(*p.enabled, ", "))
                 : std::string("all backends enabled");
  if (!p.priority.empty()) {
    s += "; explicit priority " + join(p.priority, " > ");
  } else if (p.model == d::PolicyModel::pytorch) {
    s += p.heuristics ? "; PyTorch's order with cudnn_preferred" : "; PyTorch's order, rules off";
  } else {
    s += p.heuristics ? "; registry order with the named rules" : "; registry order, rules off";
  }
  if (p.require_deterministic) s += "; determinism required";
  return s;
}

void print_explanation(std::ostream& out, const d::Explanation& e) {
  if (!e.rules.empty()) {
    for (std::size_t i = 0; i < e.rules.size(); ++i) {
      out << (i ? "          " : "rules     ") << e.rules[i].name << ": " << e.rules[i].why
          << " (promotes " << join(e.rules[i].promoted, ", ") << ")\n";
    }
  } else {
    out << "rules     none fired\n";
  }
  out << "order     " << (e.order.empty() ? std::string("(nothing enabled)") : join(e.order, " > "))
      << " (" << e.order_source << (e.rules.empty() ? "" : ", reordered by the rules") << ")\n";
  for (const auto& f : e.front_end) out << "front end " << f << "\n";
  if (e.outcome == d::Outcome::invalid_problem || e.outcome == d::Outcome::not_expressible) {
    out << "chosen    none: " << e.message << "\n";
    return;
  }
  std::string chosen_why;
  for (const auto& b : e.backends) {
    if (b.verdict == d::Verdict::chosen) chosen_why = b.reasons.empty() ? "" : b.reasons[0];
  }
  if (e.outcome == d::Outcome::selected) {
    out << "chosen    " << e.chosen << " (" << chosen_why << ")\n";
    for (const auto& r : e.raises)
      out << "raises    PyTorch selects it and then raises: " << r << "\n";
  } else {
    out << "chosen    none (" << d::outcome_name(e.outcome) << ")\n";
  }
  if (e.pytorch) {
    out << "pytorch   PyTorch " << d::kModelledPytorch << " picks "
        << (e.pytorch->backend.empty() ? e.pytorch->choice
                                       : e.pytorch->backend + " (" + e.pytorch->choice + ")")
        << (e.pytorch->departs ? "; this policy departs from it:" : "; this policy agrees") << "\n";
    for (const auto& w : e.pytorch->why) out << "          - " << w << "\n";
  }
  out << "why not the others:\n";
  std::size_t width = 0;
  for (const auto& b : e.backends) width = std::max(width, b.name.size());
  for (const auto& b : e.backends) {
    if (b.verdict == d::Verdict::chosen) continue;
    const std::string pad(width - b.name.size() + 2, ' ');
    out << "  " << b.name << pad << d::verdict_name(b.verdict);
    if (b.reasons.size() == 1 && b.verdict != d::Verdict::rejected) {
      out << ": " << b.reasons[0] << "\n";
      continue;
    }
    out << ":\n";
    for (const auto& r : b.reasons) out << "  " << std::string(width + 2, ' ') << "- " << r << "\n";
  }
}

int run_case(const Options& o, const std::string& case_id, const Device& dev,
             const d::Policy& policy) {
  const auto parsed = parse_case_id(case_id);
  if (const auto* err = std::get_if<CaseIdError>(&parsed)) {
    std::cerr << "sdpa-cts: " << err->message << "\n";
    return 2;
  }
  const Case& c = std::get<Case>(parsed);
  if (auto r = validate(c.problem); !r.empty()) {
    std::cerr << "sdpa-cts: INVALID case " << case_id << ": " << r << "\n";
    return 2;
  }
  const d::Explanation e = d::explain(c.problem, dev, policy);
  if (o.json) {
    json j = d::explanation_json(e);
    j["case"] = format_case_id(c);
    j["device"] = {{"name", dev.name}, {"description", describe_device(dev)}};
    j["policy"] = d::policy_json(policy);
    if (policy.model == d::PolicyModel::pytorch)
      j["torch_call"] = d::torch_call_json(d::torch_call(c.problem));
    std::cout << j.dump() << "\n";
  } else {
    std::cout << "case      " << format_case_id(c) << "\n"
              << "device    " << describe_device(dev) << "\n"
              << "policy    " << describe_policy(policy) << "\n";
    print_explanation(std::cout, e);
  }
  if (e.outcome != d::Outcome::selected || !e.raises.empty()) {
    std::cerr << "sdpa-cts: " << e.message << "\n";
    return 1;
  }
  return 0;
}

// --sample N: one line per sampled problem (a JSON object with --json), exit 0 unless the
// input is bad. The problems are the sampler's (seed S), as `run --sample N --seed S` draws.
int run_sample(const Options& o, const Device& dev, const d::Policy& policy) {
  for (std::int64_t i = 0; i < o.sample; ++i) {
    const Case c =
        conformance::sample_case(conformance::sample_seed(o.seed, static_cast<std::uint64_t>(i)));
    const d::Explanation e = d::explain(c.problem, dev, policy);
    const std::string id = format_case_id(c);
    if (o.json) {
      json j = d::explanation_json(e);
      j["case"] = id;
      j["device"] = dev.name;
      if (policy.model == d::PolicyModel::pytorch) {
        j["torch_call"] = d::torch_call_json(d::torch_call(c.problem));
      }
      std::cout << j.dump() << "\n";
    } else {
      std::cout << id << "  " << (e.chosen.empty() ? d::outcome_name(e.outcome) : e.chosen);
      if (!e.pytorch_choice.empty()) std::cout << " (" << e.pytorch_choice << ")";
      if (e.pytorch)
        std::cout << "  pytorch: " << e.pytorch->choice << (e.pytorch->departs ? " (departs)" : "");
      std::cout << "\n";
    }
  }
  return 0;
}

int run_mha(const Options& o, const std::string& spec, const Device& dev, const d::Policy& policy) {
  const auto parsed = reference::parse_mha_spec(spec);
  if (const auto* err = std::get_if<std::string>(&parsed)) {
    std::cerr << "sdpa-cts: " << *err << "\n";
    return 2;
  }
  const d::MhaCall& call = std::get<d::MhaCall>(parsed);
  const d::MhaPath path = d::pick_mha_path(call, dev, policy);
  const std::string nw =
      call.mha.need_weights ? (call.need_weights_explicit ? "1" : "1 (PyTorch's default)") : "0";
  const std::string sdpa_id = format_case_id(Case{path.sdpa_problem, DataRecipe{}});
  const bool runs = path.route != d::MhaRoute::error &&
                    (!path.reaches_sdpa || path.sdpa.outcome == d::Outcome::selected);
  if (o.json) {
    json j;
    j["mha"] = reference::format_mha_spec(call);
    j["device"] = {{"name", dev.name}, {"description", describe_device(dev)}};
    j["policy"] = d::policy_json(policy);
    j["need_weights"] = call.mha.need_weights;
    j["need_weights_default"] = !call.need_weights_explicit;
    j["fast_path"] = path.fast_path;
    j["why_not_fast_path"] = path.why_not_fast_path;
    j["checks"] = json::array();
    for (const auto& k : path.checks) {
      j["checks"].push_back(
          {{"condition", k.condition}, {"passed", k.passed}, {"reason", k.passed ? "" : k.reason}});
    }
    j["route"] = d::route_name(path.route);
    j["route_reason"] = path.route_reason;
    j["reaches_sdpa"] = path.reaches_sdpa;
    j["sdpa_problem"] = sdpa_id;
    if (path.route != d::MhaRoute::error) j["sdpa"] = d::explanation_json(path.sdpa);
    std::cout << j.dump() << "\n";
  } else {
    std::cout << "mha       " << reference::format_mha_spec(call) << "\n"
              << "device    " << describe_device(dev) << "\n"
              << "policy    " << describe_policy(policy) << "\n"
              << "need_weights " << nw << "\n"
              << "fast path " << (path.fast_path ? "yes" : "no: " + path.why_not_fast_path) << "\n"
              << "checks   ";
    for (const auto& k : path.checks) {
      std::cout << " " << (k.passed ? "ok" : "FAIL") << "(" << k.condition << ")";
    }
    std::cout << "\nroute     " << d::route_name(path.route) << ": " << path.route_reason << "\n";
    if (path.route != d::MhaRoute::error) {
      std::cout << (path.reaches_sdpa ? "sdpa call " : "suite     ") << sdpa_id
                << (path.reaches_sdpa
                        ? ""
                        : " (the equivalent SDPA problem; PyTorch runs no SDPA kernel)")
                << "\n";
      print_explanation(std::cout, path.sdpa);
    }
  }
  if (!runs) {
    std::cerr << "sdpa-cts: "
              << (path.route == d::MhaRoute::error ? path.route_reason : path.sdpa.message) << "\n";
    return 1;
  }
  return 0;
}

int run(const Options& o) {
  plugins::load_plugins_here(o.plugins);  // after a probe in a child process each
  if (int(!o.case_ids.empty()) + int(!o.mhas.empty()) + int(o.sample > 0) != 1) {
    std::cerr << "sdpa-cts: explain needs exactly one of --case, --mha and --sample\n";
    return 2;
  }
  const auto dev = parse_device(o.device);
  if (const auto* err = std::get_if<std::string>(&dev)) {
    std::cerr << "sdpa-cts: --device: " << *err << "\n";
    return 2;
  }
  d::Policy policy;
  try {
    policy = make_policy(o);
  } catch (const std::invalid_argument& e) {
    std::cerr << "sdpa-cts: " << e.what() << "\n";
    return 2;
  }
  const Device& device = std::get<Device>(dev);
  if (o.sample > 0) return run_sample(o, device, policy);
  int worst = 0;
  for (const auto& id : o.case_ids) worst = std::max(worst, run_case(o, id, device, policy));
  for (const auto& spec : o.mhas) worst = std::max(worst, run_mha(o, spec, device, policy));
  return worst;
}

}  // namespace

Command add_explain_command(CLI::App& parent) {
  auto opt = std::make_shared<Options>();
  auto* cmd = parent.add_subcommand(
      "explain",
      "Show which backend the dispatcher picks for a case or an MHA call, and why not the others");
  cmd->add_option("--case", opt->case_ids, "Case ID (docs/CASE_ID.md); repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--mha", opt->mhas,
                  "nn.MultiheadAttention call spec, e.g. e64.h4.b2.l5.s5.need_weights=0 "
                  "(docs/DISPATCH.md); repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--sample", opt->sample,
                  "Explain N problems drawn by the sampler, one line (or JSON object) each")
      ->check(cli::at_least(1));
  cmd->add_option("--seed", opt->seed, "Seed of --sample")->capture_default_str();
  cmd->add_option("--policy", opt->policy,
                  "suite (this build's backends and rules) or pytorch (PyTorch's own picker)")
      ->check(CLI::IsMember({"suite", "pytorch"}))
      ->capture_default_str();
  cmd->add_option("--device", opt->device,
                  "cpu, auto, a simulated device (cpu-avx2, sm80, ...) with :key=value overrides")
      ->capture_default_str();
  cmd->add_option("--backends", opt->backends,
                  "Enable exactly these backends (comma-separated), like a scoped guard");
  cmd->add_flag("--priority", opt->set_priority, "Make the --backends order the priority");
  cmd->add_flag("--no-rules", opt->no_rules, "Do not apply the named ordering rules");
  cmd->add_flag("--deterministic", opt->deterministic,
                "Only backends that declare a deterministic forward pass");
  cmd->add_flag("--json", opt->json, "Print one JSON object");
  add_plugin_option(cmd, &opt->plugins);
  return {cmd, [opt] { return run(*opt); }};
}

}  // namespace sdpa::cli
