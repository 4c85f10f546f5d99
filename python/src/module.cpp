// sdpa_cts._core: the suite's C++ libraries as a Python extension (nanobind). The Python layer
// (python/sdpa_cts/) gives the public API; this module is its engine: case selection, the
// reference, a Python function run as a backend through the suite's own job runner and judge,
// and the reports of `sdpa-cts run`.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <omp.h>

#include <chrono>
#include <ctime>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "conformance/certification/bundle.hpp"
#include "conformance/certification/manifest.hpp"
#include "conformance/certification/profile.hpp"
#include "conformance/engine/case_selection.hpp"
#include "conformance/engine/data_gen.hpp"
#include "conformance/engine/runner.hpp"
#include "conformance/judge/tolerance.hpp"
#include "core/device.hpp"
#include "golden/golden_file.hpp"
#include "golden/results_backend.hpp"
#include "kernels/backend_json.hpp"
#include "python/src/arrays.hpp"
#include "python/src/python_backend.hpp"
#include "reference/sdpa_reference.hpp"
#include "reports/records/expectations.hpp"
#include "reports/reports.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace sdpa::python {
namespace {

using namespace sdpa::conformance;

DType dtype_or_throw(const std::string& name);

// The case's own inputs (generated from its ID, or read from its golden file), made once.
const InputBuffers& own_inputs(PyCase& c) {
  if (!c.owned) {
    if (c.golden.empty()) {
      c.owned = std::make_shared<InputBuffers>(make_inputs(c.c));
    } else {
      golden::GoldenCase g = golden::GoldenFile(c.golden).load(c.id);
      c.owned = std::make_shared<InputBuffers>(std::move(g.inputs));
    }
  }
  return *c.owned;
}

// The case's inputs: the run's buffers while it is being judged, else its own.
nb::dict case_inputs(nb::handle self) {
  PyCase& c = nb::cast<PyCase&>(self);
  const Problem& p = problem_of(c);
  InputPointers in;
  const void* d_out = nullptr;
  if (c.live) {
    in.q = c.live->q;
    in.k = c.live->k;
    in.v = c.live->v;
    in.mask = c.live->mask;
    d_out = c.live_d_out;
  } else {
    const InputBuffers& own = own_inputs(c);
    in = own.pointers();
    if (own.d_out) d_out = own.d_out->data();
  }
  nb::dict d;
  d["q"] = numpy_view(in.q, p.dtype, q_view(p), self);
  d["k"] = numpy_view(in.k, p.dtype, k_view(p), self);
  d["v"] = numpy_view(in.v, p.dtype, v_view(p), self);
  if (p.mask == MaskKind::boolean) {
    d["mask"] = numpy_view_u8(in.mask, mask_view(p), self);
  } else if (p.mask == MaskKind::additive) {
    d["mask"] = numpy_view(in.mask, p.dtype, mask_view(p), self);
  }
  if (p.backward && d_out) d["d_out"] = numpy_view(d_out, p.dtype, o_view(p), self);
  return d;
}

const char* causal_name(Causal c) {
  return c == Causal::top_left ? "tl" : c == Causal::bottom_right ? "br" : "none";
}

// The case's parameters, as a framework call needs them.
nb::dict case_params(const PyCase& c) {
  const Problem& p = problem_of(c);
  nb::dict d;
  d["batch"] = p.batch;
  d["heads_q"] = p.heads_q;
  d["heads_kv"] = p.heads_kv;
  d["len_q"] = p.len_q;
  d["len_kv"] = p.len_kv;
  d["head_dim_qk"] = p.head_dim_qk;
  d["head_dim_v"] = p.head_dim_v;
  d["dtype"] = std::string(dtype_name(p.dtype));
  d["scale"] = effective_scale(p);
  d["scale_is_default"] = !p.scale.has_value();
  d["causal"] = causal_name(p.causal);
  if (p.window.enabled) {
    d["window"] = nb::make_tuple(p.window.left, p.window.right,
                                 p.window.align == Align::top_left ? "tl" : "br");
  } else {
    d["window"] = nb::none();
  }
  d["mask"] = p.mask == MaskKind::boolean ? "bool" : p.mask == MaskKind::additive ? "add" : "none";
  d["softcap"] = p.softcap;
  d["dropout_p"] = p.dropout_p;
  d["dropout_seed"] = p.dropout_seed;
  d["dropout_offset"] = p.dropout_offset;
  d["seqlens_q"] = p.seqlens_q.empty() ? nb::object(nb::none()) : nb::cast(p.seqlens_q);
  d["seqlens_kv"] = p.seqlens_kv.empty() ? nb::object(nb::none()) : nb::cast(p.seqlens_kv);
  d["cu_seqlens_q"] = nb::cast(cu_seqlens_q(p));
  d["cu_seqlens_kv"] = nb::cast(cu_seqlens_kv(p));
  d["packed"] = p.packed;
  d["want_lse"] = p.want_lse;
  d["want_weights"] = p.want_weights;
  d["backward"] = p.backward;
  return d;
}

std::vector<PyCase> select_cases_py(const std::string& tier, int sample, std::uint64_t seed,
                                    const std::vector<std::string>& ids,
                                    const std::vector<std::string>& golden,
                                    const std::string& filter) {
  CaseSelection s;
  s.tier = tier;
  s.sample = sample;
  s.seed = seed;
  s.cases = ids;
  s.golden = golden;
  s.filter = filter;
  std::string name;
  std::vector<PyCase> out;
  for (const auto& [id, file] : select_cases(s, &name)) {
    PyCase c;
    c.id = id;
    c.golden = file;
    c.c = parse_case_id_or_throw(id);
    out.push_back(std::move(c));
  }
  return out;
}

nb::object f64_array(std::vector<double> v, std::vector<std::size_t> shape) {
  auto* owned = new std::vector<double>(std::move(v));
  nb::capsule free(owned, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
  nb::ndarray<nb::numpy, double> a(owned->data(), shape.size(), shape.data(), free);
  return nb::cast(a);
}

nb::dict reference_outputs(nb::handle self) {
  PyCase& c = nb::cast<PyCase&>(self);
  const InputBuffers& own = own_inputs(c);  // also while it is being judged: the same values
  const Problem& p = c.c.problem;
  Problem pr = p;
  pr.want_lse = true;
  reference::Result r;
  {
    nb::gil_scoped_release release;
    r = reference::run_sdpa(pr, own.pointers(), reference::Precision::f64);
  }
  const auto B = static_cast<std::size_t>(p.batch), H = static_cast<std::size_t>(p.heads_q),
             L = static_cast<std::size_t>(p.len_q), S = static_cast<std::size_t>(p.len_kv),
             Dv = static_cast<std::size_t>(p.head_dim_v);
  nb::dict d;
  d["o"] = f64_array(std::move(r.o), {B, H, L, Dv});
  d["lse"] = f64_array(std::move(r.lse), {B, H, L});
  if (p.want_weights) d["weights"] = f64_array(std::move(r.weights), {B, H, L, S});
  return d;
}

PyContract make_contract(const std::string& accumulate, const std::string& p_type,
                         const std::string& ds_type, bool online_softmax, std::int64_t key_block,
                         int mma_block, int mma_extra_bits, const std::vector<std::string>& dtypes,
                         const nb::dict& flags) {
  PyContract c;
  c.precision.accumulate = dtype_or_throw(accumulate);
  if (p_type == "input") {
    c.p_type_is_input = true;
  } else {
    c.precision.p_type = p_type.empty() ? c.precision.accumulate : dtype_or_throw(p_type);
  }
  if (ds_type == "input") {
    c.ds_type_is_input = true;
  } else {
    c.precision.ds_type = ds_type.empty() ? c.precision.accumulate : dtype_or_throw(ds_type);
  }
  c.precision.online_softmax = online_softmax;
  c.precision.key_block = key_block;
  if (mma_block < 0 || mma_block > 64 || mma_extra_bits < 0 || mma_extra_bits > 24 ||
      (mma_block == 0 && mma_extra_bits != 0)) {
    throw std::invalid_argument("Contract: mma_block " + std::to_string(mma_block) +
                                " / mma_extra_bits " + std::to_string(mma_extra_bits) +
                                " out of range (0 to 64 products, 0 to 24 bits; bits only with "
                                "a block)");
  }
  c.precision.mma_block = mma_block;
  c.precision.mma_extra_bits = mma_extra_bits;
  c.caps.dtypes.clear();
  for (const auto& t : dtypes) c.caps.dtypes.push_back(dtype_or_throw(t));
  // Every boolean feature by the feature table's names (kernels/features.def); each one the
  // Contract leaves out is false, the one default.
  for (auto [key, value] : flags) {
    const std::string k = nb::cast<std::string>(nb::str(key));
    bool* feature = c.caps.feature(k);
    if (!feature) throw std::invalid_argument("Contract: unknown capability '" + k + "'");
    if (k == "backward" || k == "bias_gradient") {
      throw std::invalid_argument("Contract: '" + k +
                                  "' is not declared: a function has a backward when check() "
                                  "gets grad=, and this adapter returns no d bias");
    }
    *feature = nb::cast<bool>(value);
  }
  return c;
}

DType dtype_or_throw(const std::string& name) {
  if (auto t = parse_dtype(name)) return *t;
  throw std::invalid_argument("Contract: unknown dtype '" + name + "' (f64, f32, f16, bf16)");
}

std::string now_iso8601() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// The engine's words for a backend, in a Python user's: the function is the backend, its
// contract the supports() that accepted the case.
std::string python_facing(std::string message) {
  for (const char* engine : {"the backend threw after supports() accepted: ",
                             "the backward threw after supports() accepted: "}) {
    const std::string e = engine;
    if (message.rfind(e, 0) == 0)
      message = "on a case its contract accepts (declining is the contract's job), " +
                message.substr(e.size());
  }
  return message;
}

// How run_python runs the function: in this process (the default), or in a forked worker
// process per run, replaced after a crash or a timeout (`isolate`), as `sdpa-cts run` does.
struct Isolation {
  bool isolate = false;
  double timeout_seconds = 0;  // per case, isolated runs only; 0 = the runner's default
};

// Runs `backend` (a Python function) on every case of `cases` (Case objects) through the
// suite's job runner; progress(done, total, record json) after each.
//
// Isolated: the runner forks a worker holding this process's state, the GIL included (the
// thread that forks is the one that calls Python in the child); the worker binds each job's
// Case before running it (before_job) and leaves with _exit, so no Python finaliser runs there.
// Its judge runs one OpenMP thread: a libgomp pool this process may have made is not in the
// fork, and a parallel region of more than one thread would wait for it forever.
RunSummary run_python(PythonBackend& backend, const nb::list& cases, int threads,
                      const std::string& tier, std::uint64_t seed, const nb::object& progress,
                      const Expectations& expected = {}, Isolation isolation = {}) {
  const std::string name(backend.name());
  const Device device = default_device();
  RunnerOptions ro;
  ro.isolate = isolation.isolate;
  if (isolation.timeout_seconds > 0) ro.timeout_seconds = isolation.timeout_seconds;
  ro.lookup = [&](std::string_view n) -> const Backend* { return n == name ? &backend : nullptr; };
  RunSummary summary;
  summary.tool_version = SDPA_CTS_VERSION;
  summary.tolerance_version = ToleranceTable{}.version;
  summary.tier = tier;
  summary.device = device.name;
  summary.seed = seed;
  summary.started_at = now_iso8601();
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t total = nb::len(cases);
  std::vector<Job> jobs;
  std::map<std::string, nb::handle> by_job;      // case ID and golden file -> its Case
  std::map<std::string, std::string> golden_of;  // case ID -> its golden file ("": generated)
  for (nb::handle h : cases) {
    const PyCase& c = nb::cast<const PyCase&>(h);
    jobs.push_back(make_job(c.id, c.golden, name, device, threads));
    by_job[c.id + "\n" + c.golden] = h;
    golden_of[c.id] = c.golden;
  }
  ro.before_job = [&](const Job& j) {
    backend.set_case(nb::borrow(by_job.at(j.case_id + "\n" + j.golden_file)));
  };
  // A record as a Python user reads it: the function's words, its repro line, its known
  // failure (before progress: a listed failure shows as XFAIL).
  const auto finish = [&](CaseRecord r) {
    r.message = python_facing(r.message);
    const std::string& golden = golden_of[r.case_id];
    r.repro = "sdpa_cts.check(" + name + ", ids=[\"" + r.case_id + "\"]" +
              (golden.empty() ? "" : ", golden=[\"" + golden + "\"]") +
              (isolation.isolate ? ", isolate=True" : "") + ")";
    apply_expectations(expected, r);
    return r;
  };
  std::size_t done = 0;
  if (!isolation.isolate) {
    for (const Job& job : jobs) {
      summary.records.push_back(finish(run_job(job, ro)));
      ++done;
      if (!progress.is_none()) progress(done, total, reports::jsonl_line(summary.records.back()));
    }
  } else {
    ro.worker_init = [] { omp_set_num_threads(1); };
    ro.progress = [&](std::size_t d, std::size_t t, const CaseRecord& r) {
      if (!progress.is_none()) progress(d, t, reports::jsonl_line(finish(r)));
    };
    for (CaseRecord& r : run_jobs(jobs, ro)) summary.records.push_back(finish(std::move(r)));
  }
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  summary.jobs_total = summary.records.size();
  summary.cases_total = total;
  return summary;
}

// The facts `[when ...]` conditions of known failures are judged against from Python: this
// host's CPU flags, the ISA target check() runs with (the detected CPU's best; none on a GPU),
// and the versions the caller gives (check(expect_facts={"torch": torch.__version__})).
ExpectFacts python_expect_facts(const std::map<std::string, std::string>& versions) {
  const Device device = default_device();
  ExpectFacts facts = host_expect_facts(
      device.kind == DeviceKind::cpu ? std::string(isa_target_name(device.cpu.isa)) : "");
  for (const auto& [name, version] : versions) add_version_fact(&facts, name + "=" + version);
  return facts;
}

// The entries of a known-failures file as dicts (line, text: the line as written, backend,
// cases, reason, issue, condition: the `[when ...]` terms or "", applies: whether it holds on
// this host), for tools that rewrite such a file (python/peers/peer_main.py --write-expect).
nb::list expectation_entries(const std::string& path,
                             const std::map<std::string, std::string>& versions) {
  const Expectations e = load_expectations(path, python_expect_facts(versions));
  std::vector<std::string> lines;
  std::istringstream in(e.text);
  for (std::string l; std::getline(in, l);) {
    if (!l.empty() && l.back() == '\r') l.pop_back();
    lines.push_back(l);
  }
  nb::list out;
  for (const Expectation& x : e.entries) {
    nb::dict d;
    d["line"] = x.line;
    d["text"] = lines.at(static_cast<std::size_t>(x.line - 1));
    d["backend"] = x.backend;
    d["cases"] = x.cases;
    d["reason"] = x.reason;
    d["issue"] = x.issue;
    d["condition"] = x.condition.text;
    d["applies"] = expectation_applies(e, x, e.facts.isa);
    out.append(d);
  }
  return out;
}

// check(): the records' JSON lines; with `report_dir`, the reports of `sdpa-cts run` too.
// `expect_file`: known failures (the grammar of `sdpa-cts run --expect`), loaded before any
// case runs so that a bad file costs nothing; a listed FAIL becomes EXPECTED_FAILURE.
// `expect_facts`: library versions its `[when NAME>=VERSION]` conditions compare with.
std::vector<std::string> run_cases(nb::object fn, nb::object grad_fn, const std::string& name,
                                   const PyContract& contract, nb::list cases, int threads,
                                   const std::string& tier, std::uint64_t seed,
                                   const std::string& report_dir, const std::string& expect_file,
                                   const std::map<std::string, std::string>& expect_facts,
                                   nb::object progress, bool isolate, double timeout_seconds) {
  if (!expect_facts.empty() && expect_file.empty())
    throw std::invalid_argument("check(): expect_facts needs expect=FILE");
  const Expectations expected =
      expect_file.empty() ? Expectations{}
                          : load_expectations(expect_file, python_expect_facts(expect_facts));
  PythonBackend backend(name, fn, grad_fn, contract);
  RunSummary summary = run_python(backend, cases, threads, tier, seed, progress, expected,
                                  Isolation{isolate, timeout_seconds});
  summary.expectations = expected.file;
  if (!report_dir.empty()) reports::write_reports(summary, report_dir);
  std::vector<std::string> lines;
  for (const CaseRecord& r : summary.records) lines.push_back(reports::jsonl_line(r));
  return lines;
}

// certify(): a certification profile's cases on the function, and its bundle in `out` (the
// same bundle as `sdpa-cts certify`, checked by `sdpa-cts bundle verify`).
nb::dict certify_cases(nb::object fn, nb::object grad_fn, const std::string& name,
                       const PyContract& contract, const std::string& profile_name,
                       nb::object seed_given, const std::string& out, int threads,
                       nb::object progress) {
  const Profile profile = load_profile(profile_name);
  const std::uint64_t seed =
      seed_given.is_none() ? profile.sample_seed : nb::cast<std::uint64_t>(seed_given);
  const auto selected = profile_cases(profile, seed);
  nb::list cases;
  for (const auto& [id, file] : selected) {
    PyCase c;
    c.id = id;
    c.golden = file;
    c.c = parse_case_id_or_throw(id);
    cases.append(nb::cast(std::move(c)));
  }
  PythonBackend backend(name, fn, grad_fn, contract);
  const RunSummary summary =
      run_python(backend, cases, threads, "profile:" + profile.name, seed, progress);
  const ProfileVerdict verdict = judge_profile(profile, summary.records, selected.size());

  BundleContents bundle;
  bundle.run = summary;
  bundle.case_list = case_list_text(selected);
  bundle.profile_text = profile.text;
  nlohmann::ordered_json b;
  b["name"] = name;
  b["builtin"] = false;
  b["plugin"] = nullptr;
  b["python"] = {{"function", name}};
  const nlohmann::ordered_json d = backend_json(backend);
  b["capabilities"] = d.at("capabilities");
  b["precision"] = d.at("precision");
  nlohmann::ordered_json run;
  run["command"] = "sdpa_cts.certify(" + name + ", profile=\"" + profile_name +
                   "\", seed=" + std::to_string(seed) + ", out=\"" + out + "\")";
  run["device"] = "cpu";
  run["simd"] = "";
  run["jobs"] = 1;
  run["threads"] = threads;
  run["omp_max_threads"] = omp_get_max_threads();
  run["timeout_seconds"] = 0;
  run["shard"] = {{"index", 0}, {"count", 1}};
  run["started_at"] = summary.started_at;
  run["seconds"] = summary.seconds;
  CertificationRun cr;
  cr.profile = &profile;
  cr.seed = seed;
  cr.cases = selected.size();
  cr.case_list = bundle.case_list;
  cr.device = default_device();
  cr.backend = b;
  cr.run = run;
  bundle.manifest = certification_manifest(cr, verdict, summary.records.size());
  write_bundle(out, bundle);
  nb::dict v;
  v["met"] = verdict.met;
  v["required"] = verdict.required;
  v["required_passed"] = verdict.required_passed;
  v["required_mistrusted"] = verdict.required_mistrusted;
  v["outside"] = verdict.outside;
  v["reasons"] = nb::cast(verdict.reasons);
  return v;
}

// The problems `sdpa-cts bundle verify` finds in a bundle (empty: intact).
std::vector<std::string> bundle_problems(const std::string& dir) {
  return check_bundle(dir).problems;
}

}  // namespace
}  // namespace sdpa::python

NB_MODULE(_core, m) {
  using namespace sdpa::python;
  m.doc() = "sdpa-cts's C++ engine (use the sdpa_cts package, not this module)";
  // Case objects live as long as whoever holds them: pytest keeps its parameters (the cases of
  // a tier) until the interpreter shuts down, after nanobind's leak check, which then reported
  // every one of them ("nanobind: leaked 6240 instances"). They are not leaks.
  nb::set_leak_warnings(false);
  nb::class_<PyCase>(m, "Case", "One conformance case: its ID, parameters and inputs.")
      .def_ro("id", &PyCase::id, "The canonical case ID (docs/CASE_ID.md).")
      .def_ro("golden", &PyCase::golden, "The golden file holding the case, '' if generated.")
      .def_prop_ro(
          "params", [](const PyCase& c) { return case_params(c); },
          "The case's parameters: shape, dtype, scale, masks, window, dropout, lengths, layout.")
      .def("_inputs", [](nb::handle self) { return case_inputs(self); })
      .def("_reference", [](nb::handle self) { return reference_outputs(self); })
      .def("__repr__", [](const PyCase& c) { return "Case('" + c.id + "')"; });
  nb::class_<PyContract>(m, "_Contract");
  m.def("_select", &select_cases_py, "tier"_a, "sample"_a, "seed"_a, "ids"_a, "golden"_a,
        "filter"_a);
  m.def("_contract", &make_contract, "accumulate"_a, "p_type"_a, "ds_type"_a, "online_softmax"_a,
        "key_block"_a, "mma_block"_a, "mma_extra_bits"_a, "dtypes"_a, "flags"_a);
  m.def("_certify", &certify_cases, "fn"_a, "grad_fn"_a.none(), "name"_a, "contract"_a, "profile"_a,
        "seed"_a.none(), "out"_a, "threads"_a, "progress"_a.none());
  m.def("_bundle_problems", &bundle_problems, "dir"_a);
  // The feature table (kernels/features.def): [(name, kind)], in its order; the Contract's
  // fields are checked against it (python/tests/test_api.py).
  m.def("_features", [] {
    nb::list out;
    for (const sdpa::FeatureInfo& f : sdpa::feature_table()) {
      const char* kind = f.kind == sdpa::FeatureKind::accepts     ? "accepts"
                         : f.kind == sdpa::FeatureKind::restricts ? "restricts"
                                                                  : "property";
      out.append(nb::make_tuple(f.name, kind));
    }
    return out;
  });
  m.def("_run_cases", &run_cases, "fn"_a, "grad_fn"_a.none(), "name"_a, "contract"_a, "cases"_a,
        "threads"_a, "tier"_a, "seed"_a, "report_dir"_a, "expect_file"_a, "expect_facts"_a,
        "progress"_a.none(), "isolate"_a = false, "timeout_seconds"_a = 0.0);
  m.def("_expectations", &expectation_entries, "path"_a, "facts"_a);
}
