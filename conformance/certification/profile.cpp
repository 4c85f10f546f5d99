#include "conformance/certification/profile.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "conformance/engine/pair_coverage.hpp"
#include "conformance/engine/tier.hpp"
#include "conformance/engine/tier_cases.hpp"
#include "core/case_id.hpp"
#include "golden/golden_file.hpp"
#include "kernels/registry.hpp"

namespace sdpa::conformance {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> words_of(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> w;
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

template <class T>
T number(const std::string& text, const std::string& where, const char* what) {
  T v{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) {
    throw std::invalid_argument(where + what + " must be a non-negative integer, not '" + text +
                                "'");
  }
  return v;
}

bool has(const std::set<std::string>& s, const char* tag) { return s.count(tag) > 0; }

// The sampler restricted to the required features: a family the profile does not require
// is switched off, so (almost) every draw is a required case.
SamplerOptions restricted_sampler(const std::set<std::string>& r, const std::string& where) {
  SamplerOptions o;
  o.dtypes.clear();
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
    if (r.count("dtype=" + std::string(dtype_name(t)))) o.dtypes.push_back(t);
  }
  if (o.dtypes.empty())
    throw std::invalid_argument(where + "require names no element type (dtype=...)");
  o.masks = has(r, "mask=bool") || has(r, "mask=add");
  o.causal_window = has(r, "causal=tl") || has(r, "causal=br") || has(r, "window");
  o.gqa = has(r, "gqa");
  o.varlen_padded = has(r, "varlen=padded");
  o.varlen_packed = has(r, "varlen=packed");
  o.dropout = has(r, "dropout");
  o.softcap = has(r, "softcap");
  o.different_v_dim = has(r, "dv!=dqk");
  o.layouts = has(r, "layout=bshd") || has(r, "layout=strided");
  o.lse_output = has(r, "lse");
  o.weights_output = has(r, "weights");
  o.backward = has(r, "backward");
  // Policy: a profile that requires the LSE takes the backward as the training forward of
  // FlashAttention hands it over, with the LSE; only one without asks for a backward
  // without it (a backend whose backward reads the LSE may decline that, and would then
  // fail a profile for what it was never asked to do).
  o.backward_without_lse = !o.lse_output;
  o.bias_grad = has(r, "dbias");
  return o;
}

// The pairwise cases of a profile's fixed part (policy; docs/CERTIFICATION.md, "The fixed
// part"). A hand-written case list misses interactions: inference-core's once had no case
// where per-batch lengths make S_b - L_b differ from S - L under a causal bottom-right mask,
// so a plugin that took its offset from the padded lengths failed only in the sampled part,
// and only for some seeds. The fixed part therefore also holds, restricted to the values of
// the features the profile requires (conformance/engine/pair_coverage.hpp):
//  - the covering set of the pairs generator (the generator of the pairs tier, on the same
//    backends and the scalar target): every pair of those values and of the lengths and
//    head dims around each backend's blocks;
//  - every two required features in a case of their own, with more than one query row
//    (cpu.math's lengths): the covering set may pair per-batch lengths with causal
//    bottom-right only in a decode case, where either offset masks the same keys, or next
//    to a window that a backend declines;
//  - when the profile requires the backward, the covering set's cases for the backward's own
//    pairs (PairPass::backward): every pair of those values among backward cases, the
//    lengths below, at and beyond each backend's backward blocks. The backward is other code
//    than the forward: an outside plugin whose backward failed 32 ci-tier cases met
//    `training` when its backward cases met each value (`backward=on x value`) but not each
//    pair of values, nor a length beyond cpu.flash's backward row block.
// Every generated case uses required features only (the generator's per-batch lengths give
// S_b - L_b != S - L). A profile that requires the LSE asks for it in every generated case,
// since fused kernels compute it anyway; the attention weights are never asked for, since
// they force a materialising path and would keep the fused kernels' code out of the pairs.
// The cases depend on the require list and on this build's generator, not on the seed.
const std::vector<std::string> kPairBackends = {"cpu.math", "cpu.flash", "cpu.mem_efficient"};

}  // namespace

std::vector<std::string> pair_backends() { return kPairBackends; }

PairRestriction pair_restriction(const std::set<std::string>& r) {
  PairRestriction x;
  auto with = [&](std::set<std::string> values, const char* tag, const char* value) {
    if (has(r, tag)) values.insert(value);
    return values;
  };
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
    const std::string name(dtype_name(t));
    if (r.count("dtype=" + name)) x.values["dtype"].insert(name);
  }
  x.values["causal"] = with(with({"none"}, "causal=tl", "tl"), "causal=br", "br");
  x.values["window"] = with({"off"}, "window", "on");
  x.values["mask"] = with(with({"none"}, "mask=bool", "bool"), "mask=add", "add");
  x.values["dropout"] =
      with(with({"off"}, "dropout", "in_first_key_block"), "dropout", "past_first_key_block");
  x.values["softcap"] = with({"off"}, "softcap", "on");
  x.values["backward"] = with({"off"}, "backward", "on");
  x.values["varlen"] = with(with({"none"}, "varlen=padded", "padded"), "varlen=packed", "packed");
  x.values["heads"] =
      has(r, "gqa") ? std::set<std::string>{"mha", "gqa", "mqa"} : std::set<std::string>{"mha"};
  // [B, L, H, D] with row gaps is "layout=strided", without them "layout=bshd".
  x.values["layout"] = has(r, "layout=bshd") || has(r, "layout=strided")
                           ? std::set<std::string>{"bhsd", "bshd"}
                           : std::set<std::string>{"bhsd"};
  x.values["row_pitch"] =
      with(with({"dense"}, "layout=strided", "gap_even"), "layout=strided", "gap_odd");
  // Explicit strides of views (a strided head dimension, K and V transposed) are
  // "layout=strided" too.
  x.values["strides"] = has(r, "layout=strided")
                            ? std::set<std::string>{"unit", "head_dim_2", "transposed_kv"}
                            : std::set<std::string>{"unit"};
  // Head dims and lengths have no tag of their own; a length that makes a case "decode" or
  // "empty" without the profile requiring it is ruled out here.
  x.admit = [r](const Case& c) {
    for (const auto& f : case_features(c.problem)) {
      if (f != "plain" && !r.count(f)) return false;
    }
    return true;
  };
  x.lse = has(r, "lse");
  return x;
}

namespace {

// Generated once per require list in a process (loading a profile is cheap afterwards).
std::vector<std::string> pairwise_cases_for(const std::set<std::string>& require) {
  static std::mutex mutex;
  static std::map<std::set<std::string>, std::vector<std::string>> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  if (auto it = cache.find(require); it != cache.end()) return it->second;
  std::vector<const Backend*> backends;
  for (const auto& name : kPairBackends) backends.push_back(&find_backend_or_throw(name));
  const Device device = with_isa_target(detect_cpu(), "scalar");
  const PairRestriction restriction = pair_restriction(require);
  const CoveringSet set = generate_covering_set(backends, device, restriction);
  // The forward's covering cases, the isolated pairs, then the backward's covering cases (in
  // that order, so that the cases of the profiles from before the backward's pairs come
  // first, in their order).
  const auto backward_from = set.case_ids.begin() + std::ptrdiff_t(set.backward_from);
  std::vector<std::string> ids(set.case_ids.begin(), backward_from);
  std::set<std::string> have(ids.begin(), ids.end());
  for (const auto& id : isolated_pair_cases(*backends.front(), device, restriction)) {
    if (have.insert(id).second) ids.push_back(id);
  }
  for (auto it = backward_from; it != set.case_ids.end(); ++it) {
    if (have.insert(*it).second) ids.push_back(*it);
  }
  return cache[require] = std::move(ids);
}

}  // namespace

std::string default_profiles_dir() { return default_source_dir() + "/conformance/profiles"; }

std::vector<std::string> builtin_profile_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(default_profiles_dir(), ec)) {
    if (e.path().extension() == ".profile") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

namespace {
Profile load_profile_at(const std::string& name_or_path, int depth);
}  // namespace

Profile load_profile(const std::string& name_or_path) { return load_profile_at(name_or_path, 0); }

namespace {

Profile load_profile_at(const std::string& name_or_path, int depth) {
  fs::path file = name_or_path;
  if (!fs::exists(file) && name_or_path.find('/') == std::string::npos) {
    file = fs::path(default_profiles_dir()) / (name_or_path + ".profile");
    if (!fs::exists(file)) {
      std::string known;
      for (const auto& n : builtin_profile_names()) known += (known.empty() ? "" : ", ") + n;
      throw std::invalid_argument("unknown profile '" + name_or_path + "' (known: " + known + ")");
    }
  }
  Profile p;
  p.file = file.string();
  p.name = file.stem().string();
  {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw std::invalid_argument("profile '" + p.file + "': cannot read it");
    std::stringstream ss;
    ss << in.rdbuf();
    p.text = ss.str();
  }
  bool saw_require = false, saw_sample = false;
  std::string sample_where;
  std::optional<Profile> parent;
  const auto& known = known_feature_tags();
  auto directive = [&](const std::string& line, const std::string& where) {
    auto value_of = [&](const char* key) -> std::optional<std::string> {
      const std::string k = std::string(key) + ":";
      if (line.rfind(k, 0) != 0) return std::nullopt;
      return line.substr(k.size());
    };
    if (auto v = value_of("description")) {
      const auto b = v->find_first_not_of(' ');
      p.description = b == std::string::npos ? "" : v->substr(b);
      return true;
    }
    if (auto v = value_of("extends")) {
      const auto w = words_of(*v);
      if (w.size() != 1) throw std::invalid_argument(where + "extends: expected one profile name");
      if (depth >= 8) throw std::invalid_argument(where + "extends: too deep (a cycle?)");
      if (parent) throw std::invalid_argument(where + "extends: given twice");
      parent = load_profile_at(w[0], depth + 1);
      return true;
    }
    if (auto v = value_of("require")) {
      saw_require = true;
      for (const auto& tag : words_of(*v)) {
        if (std::find(known.begin(), known.end(), tag) == known.end()) {
          std::string all;
          for (const auto& t : known) all += (all.empty() ? "" : " ") + t;
          throw std::invalid_argument(where + "unknown feature '" + tag + "' (known: " + all + ")");
        }
        p.require.insert(tag);
      }
      return true;
    }
    if (auto v = value_of("sample")) {
      saw_sample = true;
      sample_where = where;
      const auto w = words_of(*v);
      if (w.empty())
        throw std::invalid_argument(where +
                                    "sample: expected '<N> seed=<S> [max-work=<W>] [max-len=<L>]'");
      p.sample_count = number<int>(w[0], where, "sample count");
      for (std::size_t i = 1; i < w.size(); ++i) {
        const auto eq = w[i].find('=');
        const std::string key = w[i].substr(0, eq),
                          val = eq == std::string::npos ? "" : w[i].substr(eq + 1);
        if (key == "seed") {
          p.sample_seed = number<std::uint64_t>(val, where, "seed");
        } else if (key == "max-work") {
          p.sampler.max_work = number<std::int64_t>(val, where, "max-work");
        } else if (key == "max-len") {
          p.sampler.max_len = number<std::int64_t>(val, where, "max-len");
        } else {
          throw std::invalid_argument(where + "sample: unknown key '" + w[i] +
                                      "' (seed=, max-work=, max-len=)");
        }
      }
      return true;
    }
    return false;
  };
  const TierEntries t =
      load_tier_file(p.file, default_tiers_dir(), default_source_dir(), directive);
  if (!saw_require) throw std::invalid_argument("profile '" + p.file + "': no 'require:' line");
  if (!saw_sample) throw std::invalid_argument("profile '" + p.file + "': no 'sample:' line");
  if (p.description.empty())
    throw std::invalid_argument("profile '" + p.file + "': no 'description:' line");
  if (parent) {
    // The parent's requirements and frozen cases come first; the file texts are kept
    // together, so a bundle's profile.txt holds every file its case list came from.
    p.require.insert(parent->require.begin(), parent->require.end());
    p.text = parent->text + "\n## extended by " + p.name + ".profile\n" + p.text;
  }
  const SamplerOptions limits = p.sampler;
  p.sampler = restricted_sampler(p.require, sample_where);
  p.sampler.max_work = limits.max_work;
  p.sampler.max_len = limits.max_len;
  try {
    check_sampler_options(p.sampler);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(sample_where + e.what());
  }
  for (const auto& id : t.case_ids) {
    const Case c = parse_case_id_or_throw(id);
    if (const std::string why = validate(c.problem); !why.empty()) {
      throw std::invalid_argument("profile '" + p.file + "': case " + id + " is INVALID: " + why);
    }
    p.frozen.push_back(id);
  }
  p.golden_files = t.golden_files;
  if (parent) {
    std::vector<std::string> ids = parent->frozen, golden = parent->golden_files;
    const std::set<std::string> have(ids.begin(), ids.end()),
        have_golden(golden.begin(), golden.end());
    for (const auto& id : p.frozen)
      if (!have.count(id)) ids.push_back(id);
    for (const auto& g : p.golden_files)
      if (!have_golden.count(g)) golden.push_back(g);
    p.frozen = std::move(ids);
    p.golden_files = std::move(golden);
    p.pairwise = parent->pairwise;
  }
  // The pairwise cases of this profile's requirements after the listed ones (and the
  // parent's fixed part), each once.
  const std::set<std::string> have(p.frozen.begin(), p.frozen.end());
  const std::set<std::string> have_pairwise(p.pairwise.begin(), p.pairwise.end());
  for (const auto& id : pairwise_cases_for(p.require)) {
    if (!have.count(id)) p.frozen.push_back(id);
    if (!have_pairwise.count(id)) p.pairwise.push_back(id);
  }
  return p;
}

}  // namespace

bool is_required(const Profile& profile, const std::vector<std::string>& features) {
  for (const auto& f : features) {
    if (f != "plain" && !profile.require.count(f)) return false;
  }
  return true;
}

std::vector<std::string> sampled_cases(const Profile& profile, std::uint64_t seed) {
  std::vector<std::string> out;
  const std::int64_t attempts = std::int64_t(profile.sample_count) * 100 + 100;
  for (std::int64_t i = 0; i < attempts && std::ssize(out) < profile.sample_count; ++i) {
    const Case c = sample_case(sample_seed(seed, static_cast<std::uint64_t>(i)), profile.sampler);
    if (is_required(profile, case_features(c.problem))) out.push_back(format_case_id(c));
  }
  if (std::ssize(out) < profile.sample_count) {
    throw std::invalid_argument(
        "profile '" + profile.name + "': only " + std::to_string(out.size()) + " of " +
        std::to_string(profile.sample_count) + " sampled cases use required features only");
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> profile_cases(const Profile& profile,
                                                               std::uint64_t seed) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& id : profile.frozen) out.emplace_back(id, "");
  std::vector<TierCase> golden;  // each distinct golden case once (tier_cases.hpp)
  for (const auto& f : profile.golden_files) append_golden_cases(f, "", golden);
  for (const auto& c : golden) out.emplace_back(c.id, c.golden_file);
  for (const auto& id : sampled_cases(profile, seed)) out.emplace_back(id, "");
  return out;
}

std::string case_list_text(const std::vector<std::pair<std::string, std::string>>& cases) {
  const std::string root = default_source_dir() + "/";
  std::string text;
  for (const auto& [id, file] : cases) {
    std::string where = file.empty() ? "-" : file;
    if (where.rfind(root, 0) == 0) where = where.substr(root.size());
    text += id + "\t" + where + "\n";
  }
  return text;
}

ProfileVerdict judge_profile(const Profile& profile, const std::vector<CaseRecord>& records,
                             std::size_t expected_cases) {
  ProfileVerdict v;
  v.complete = records.size() == expected_cases;
  for (const auto& r : records) {
    if (!is_required(profile, r.features)) {
      ++v.outside;
      if (is_failure(r.status)) ++v.outside_failures;
      continue;
    }
    ++v.required;
    // An output the profile requires that the backend does not return was not judged: the case
    // is no evidence for it (conformance/judge/requested_outputs.hpp).
    std::string unreturned;
    for (const auto& n : r.not_returned)
      if (profile.require.count(n)) unreturned += (unreturned.empty() ? "" : ", ") + n;
    if (!unreturned.empty()) {
      v.reasons.push_back(std::string(status_name(r.status)) + " " + r.case_id +
                          ": does not return a required output, not judged: " + unreturned);
      continue;
    }
    // A profile that requires the backward requires it bitwise deterministic (policy:
    // training reproducibility; the judge ran each backward at two thread counts).
    if (is_pass(r.status) && r.nondeterministic_backward && profile.require.count("backward")) {
      v.reasons.push_back(std::string(status_name(r.status)) + " " + r.case_id +
                          ": the backward is not bitwise deterministic: " + r.message);
      continue;
    }
    if (is_pass(r.status)) {
      ++v.required_passed;
      continue;
    }
    if (r.status == Status::mistrusted) {
      ++v.required_mistrusted;
      continue;
    }
    std::string why = std::string(status_name(r.status)) + " " + r.case_id + ": ";
    if (r.status == Status::expected_failure) why += "only expected to fail: ";
    if (r.status == Status::not_supported) why += "declines a required feature: ";
    v.reasons.push_back(why + r.message);
  }
  v.met = v.complete && v.reasons.empty();
  return v;
}

}  // namespace sdpa::conformance
