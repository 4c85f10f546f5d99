// `sdpa-cts cases export --tier T --out FILE.h5`: every selected case's inputs in the golden
// schema, without outputs: the results-file route (docs/PLUGINS.md, "Results files"). A user
// fills in `o` (and `lse`, `weights` where the case asks) from their framework and runs
// `sdpa-cts cases judge --results FILE.h5`.
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "cli/commands.hpp"
#include "cli/engine_options.hpp"
#include "conformance/engine/data_gen.hpp"
#include "golden/golden_file.hpp"
#include "golden/golden_writer.hpp"
#include "kernels/lowered_problem.hpp"
#include "kernels/registry.hpp"
#include "plugins/host/plugin_set.hpp"

namespace sdpa::cli {
namespace {

struct Options {
  CaseSelection selection;
  std::string out;
  std::int64_t digits = 7;
  // cases fill
  std::string results;
  std::string backend;
  std::vector<std::string> plugins;
};

// `cases fill`: the outputs of a backend this build can run (built in or a plugin) written
// into a results file, as a user's framework would; for checking the route end to end.
int fill(const Options& opt) {
  plugins::load_plugins_here(opt.plugins);
  const Backend& backend = find_backend_or_throw(opt.backend);
  if (backend.capabilities().memory != MemorySpace::host) {
    throw std::invalid_argument("cases fill runs host-memory backends only");
  }
  const Device device = detect_cpu();
  const golden::GoldenFile file(opt.results);
  std::vector<golden::GoldenCase> cases;
  std::vector<std::vector<double>> o, lse, weights, dq, dk, dv, dbias;
  std::vector<bool> ran;
  int filled = 0;
  for (const auto& id : file.case_ids()) {
    golden::GoldenCase g = file.load(id, golden::GoldenFile::Outputs::optional);
    const Problem& p = g.c.problem;
    std::vector<double> co, cl, cw, gq, gk, gv, gb;
    if (backend.supports(p, device).ok()) {
      OutputBuffers out = make_outputs(p);
      const InputPointers in = g.inputs.pointers();
      const Buffers fwd{in.q,
                        in.k,
                        in.v,
                        in.mask,
                        out.o.data(),
                        p.want_lse ? static_cast<float*>(out.lse.data()) : nullptr,
                        p.want_weights ? out.weights.data() : nullptr};
      backend.run(LoweredProblem(p, fwd), device, RunOptions{});
      if (p.backward) {  // the gradients for the file's dO, logical like the file's
        GradientBuffers grads = make_gradient_outputs(p);
        backend.run_backward(
            LoweredProblem(p, fwd,
                           {g.inputs.d_out->data(), grads.dq.data(), grads.dk.data(),
                            grads.dv.data(), grads.dbias ? grads.dbias->data() : nullptr}),
            device, RunOptions{});
        if (grads.dbias) {  // the mask's storage, in its order
          for (std::int64_t x = 0; x < mask_elements(p); ++x)
            gb.push_back(load_as_double(p.dtype, grads.dbias->data(), x));
        }
        const auto cuq = cu_seqlens_q(p), cuk = cu_seqlens_kv(p);
        auto logical = [&](const GuardedBuffer& t, const TensorLayout& lay, std::int64_t heads,
                           std::int64_t rows, std::int64_t cols, bool q_side) {
          std::vector<double> v(static_cast<std::size_t>(p.batch * heads * rows * cols), 0.0);
          for (std::int64_t b = 0; b < p.batch; ++b) {
            const auto ub = static_cast<std::size_t>(b);
            const std::int64_t valid = q_side ? seqlen_q(p, b) : seqlen_kv(p, b);
            const std::int64_t first = p.packed ? (q_side ? cuq[ub] : cuk[ub]) : 0;
            for (std::int64_t h = 0; h < heads; ++h)
              for (std::int64_t i = 0; i < (p.packed ? valid : rows); ++i)
                for (std::int64_t e = 0; e < cols; ++e)
                  v[static_cast<std::size_t>(((b * heads + h) * rows + i) * cols + e)] =
                      load_as_double(p.dtype, t.data(),
                                     element_offset(lay, p.packed, b, h, first + i, e));
          }
          return v;
        };
        gq = logical(grads.dq, p.q, p.heads_q, p.len_q, p.head_dim_qk, true);
        gk = logical(grads.dk, p.k, p.heads_kv, p.len_kv, p.head_dim_qk, false);
        gv = logical(grads.dv, p.v, p.heads_kv, p.len_kv, p.head_dim_v, false);
      }
      // Logical [B, Hq, L, Dv]: padded rows (and rows a packed layout does not store) 0.
      const std::int64_t B = p.batch, H = p.heads_q, L = p.len_q, Dv = p.head_dim_v;
      co.assign(static_cast<std::size_t>(B * H * L * Dv), 0.0);
      const auto cuq = cu_seqlens_q(p);
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t h = 0; h < H; ++h)
          for (std::int64_t i = 0; i < (p.packed ? seqlen_q(p, b) : L); ++i)
            for (std::int64_t d = 0; d < Dv; ++d) {
              co[static_cast<std::size_t>(((b * H + h) * L + i) * Dv + d)] = load_as_double(
                  p.dtype, out.o.data(),
                  element_offset(p.o, p.packed, b, h, p.packed ? cuq[std::size_t(b)] + i : i, d));
            }
      if (p.want_lse) {
        const auto* l = static_cast<const float*>(out.lse.data());
        cl.assign(l, l + B * H * L);
      }
      if (p.want_weights) {
        for (std::int64_t x = 0; x < B * H * L * p.len_kv; ++x) {
          cw.push_back(load_as_double(p.dtype, out.weights.data(), x));
        }
      }
      ++filled;
    }
    ran.push_back(backend.supports(p, device).ok());
    cases.push_back(std::move(g));
    o.push_back(std::move(co));
    lse.push_back(std::move(cl));
    weights.push_back(std::move(cw));
    dq.push_back(std::move(gq));
    dk.push_back(std::move(gk));
    dv.push_back(std::move(gv));
    dbias.push_back(std::move(gb));
  }
  std::vector<golden::CaseToWrite> write;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Problem& p = cases[i].c.problem;
    const bool grads = ran[i] && p.backward;
    write.push_back({&cases[i].c, &cases[i].inputs, ran[i] ? &o[i] : nullptr,
                     ran[i] && p.want_lse ? &lse[i] : nullptr,
                     ran[i] && p.want_weights ? &weights[i] : nullptr, grads ? &dq[i] : nullptr,
                     grads ? &dk[i] : nullptr, grads ? &dv[i] : nullptr,
                     grads && p.bias_grad ? &dbias[i] : nullptr});
  }
  golden::write_golden_file(opt.results,
                            {"sdpa-cts cases fill --backend " + opt.backend, SDPA_CTS_VERSION,
                             file.info().precision_digits, file.info().set},
                            write);
  std::cout << opt.results << ": " << filled << " of " << cases.size() << " cases filled by "
            << opt.backend << " (the others it declines)\n";
  return 0;
}

int run(const Options& opt) {
  std::string name;
  const std::vector<SelectedCase> selected = select_cases(opt.selection, &name);
  if (selected.empty())
    throw std::invalid_argument("no case selected (check --tier, --case and --filter)");
  // Inputs: generated from the ID, or read from the golden file the tier names.
  std::vector<Case> cases;
  std::vector<InputBuffers> inputs;
  cases.reserve(selected.size());
  inputs.reserve(selected.size());
  std::map<std::string, std::unique_ptr<golden::GoldenFile>> files;
  std::set<std::string> seen;  // --case may name a case twice
  std::size_t repeats = 0;
  for (const auto& [id, file] : selected) {
    if (!seen.insert(id).second) {
      ++repeats;
      continue;
    }
    if (file.empty()) {
      cases.push_back(parse_case_id_or_throw(id));
      inputs.push_back(conformance::make_inputs(cases.back()));
    } else {
      auto& f = files[file];
      if (!f) f = std::make_unique<golden::GoldenFile>(file);
      golden::GoldenCase g = f->load(id);
      cases.push_back(g.c);
      inputs.push_back(std::move(g.inputs));
    }
  }
  std::vector<golden::CaseToWrite> write;
  for (std::size_t i = 0; i < cases.size(); ++i) write.push_back({&cases[i], &inputs[i]});
  golden::write_golden_file(opt.out, {"sdpa-cts cases export", SDPA_CTS_VERSION, opt.digits, name},
                            write);
  std::cout << opt.out << ": " << cases.size() << " cases of " << name;
  if (repeats) std::cout << " (" << repeats << " repeated case IDs written once)";
  std::cout << " (inputs only: fill in o, and lse / weights where a case asks for them; dq, dk, "
               "dv for the backward cases, bwd, from their d_out; dbias, in the mask's stored "
               "shape, where a case asks for it)\n";
  return 0;
}

}  // namespace

Command add_cases_export_command(CLI::App& parent) {
  auto opt = std::make_shared<Options>();
  auto* cmd = parent.add_subcommand(
      "export",
      "Write the selected cases' inputs in the golden schema, to be filled in with "
      "the outputs of another implementation and judged with `sdpa-cts cases judge`");
  add_case_selection_options(cmd, &opt->selection);
  cmd->add_option("--out", opt->out, "The HDF5 file to write")->required();
  cmd->add_option("--digits", opt->digits,
                  "precision_digits of the file (of the outputs you will fill in; default 7)")
      ->check(CLI::Range(1, 50));
  return {cmd, [opt] { return run(*opt); }};
}

Command add_cases_fill_command(CLI::App& parent) {
  auto opt = std::make_shared<Options>();
  auto* cmd = parent.add_subcommand(
      "fill",
      "Fill a results file with the outputs of a backend this build can run (to check "
      "the route; your framework fills it the same way)");
  cmd->add_option("--results", opt->results, "The results file to fill")->required();
  cmd->add_option("--backend", opt->backend, "The backend whose outputs to record")->required();
  add_plugin_option(cmd, &opt->plugins);
  return {cmd, [opt] { return fill(*opt); }};
}

}  // namespace sdpa::cli
