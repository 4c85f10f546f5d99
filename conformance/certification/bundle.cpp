#include "conformance/certification/bundle.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "conformance/certification/sha256.hpp"
#include "conformance/judge/tolerance.hpp"
#include "core/build_info.hpp"
#include "reports/atomic_file.hpp"
#include "reports/merge.hpp"
#include "reports/records/expectations.hpp"
#include "reports/records/record_json.hpp"
#include "reports/reports.hpp"

namespace sdpa::conformance {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::optional<std::string> read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The files of a bundle other than SHA256SUMS, in the order they are written.
std::vector<std::string> bundle_files(const BundleContents& c) {
  std::vector<std::string> f = {kManifestFile, kCaseListFile, kProfileCopyFile};
  if (c.expectations) f.push_back(kExpectationsCopyFile);
  for (const char* r : reports::kReportFiles) f.push_back(r);
  return f;
}

std::string str_at(const json& j, std::initializer_list<const char*> path) {
  const json* x = &j;
  for (const char* k : path) {
    if (!x->is_object() || !x->contains(k)) return "";
    x = &x->at(k);
  }
  return x->is_string() ? x->get<std::string>() : x->dump();
}

}  // namespace

nlohmann::ordered_json verdict_json(const ProfileVerdict& v, std::size_t records) {
  nlohmann::ordered_json j;
  j["met"] = v.met;
  j["complete"] = v.complete;
  j["records"] = records;
  j["required"] = v.required;
  j["required_passed"] = v.required_passed;
  j["required_mistrusted"] = v.required_mistrusted;
  j["outside"] = v.outside;
  j["outside_failures"] = v.outside_failures;
  j["reasons"] = v.reasons;
  return j;
}

void write_bundle(const std::string& dir, const BundleContents& c) {
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) throw std::runtime_error("'" + dir + "' is not a directory");
    const bool earlier_bundle = fs::exists(fs::path(dir) / kManifestFile, ec);
    if (!earlier_bundle && !fs::is_empty(dir, ec)) {
      throw std::runtime_error("'" + dir + "' is neither empty nor a bundle (no " + kManifestFile +
                               "): choose another --out, nothing there is overwritten");
    }
  }
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create '" + dir + "': " + ec.message());
  // A stale expectations copy of an earlier bundle would break the digest list.
  if (!c.expectations) fs::remove(fs::path(dir) / kExpectationsCopyFile, ec);
  reports::write_reports(c.run, dir);
  const std::string manifest =
      c.manifest.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  reports::write_file_atomically((fs::path(dir) / kManifestFile).string(), manifest);
  reports::write_file_atomically((fs::path(dir) / kCaseListFile).string(), c.case_list);
  reports::write_file_atomically((fs::path(dir) / kProfileCopyFile).string(), c.profile_text);
  if (c.expectations) {
    reports::write_file_atomically((fs::path(dir) / kExpectationsCopyFile).string(),
                                   *c.expectations);
  }
  std::string sums;
  for (const auto& f : bundle_files(c)) {
    sums += sha256_file((fs::path(dir) / f).string()) + "  " + f + "\n";
  }
  reports::write_file_atomically((fs::path(dir) / kDigestsFile).string(), sums);
}

BundleCheck check_bundle(const std::string& dir) {
  BundleCheck out;
  auto problem = [&](std::string s) { out.problems.push_back(std::move(s)); };
  const fs::path root(dir);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    problem("'" + dir + "' is not a directory");
    return out;
  }
  // A folder with neither a manifest nor a digest list is not a bundle at all: one message
  // saying so, not a list of every file in it as unlisted.
  if (!fs::exists(root / kManifestFile, ec) && !fs::exists(root / kDigestsFile, ec)) {
    problem("'" + dir + "' is not a certification bundle (no " + kManifestFile + " and no " +
            kDigestsFile + "; sdpa-cts certify --out writes one)");
    return out;
  }
  // 1. Digests: every listed file present and unchanged, no file unlisted.
  std::map<std::string, std::string> digests;
  if (auto sums = read_text(root / kDigestsFile)) {
    std::istringstream lines(*sums);
    std::string line;
    int n = 0;
    while (std::getline(lines, line)) {
      ++n;
      if (line.size() < 67 || line.substr(64, 2) != "  " ||
          line.find_first_not_of("0123456789abcdef") < 64) {
        problem(std::string(kDigestsFile) + ":" + std::to_string(n) + ": not '<sha256>  <file>'");
        continue;
      }
      const std::string name = line.substr(66);
      if (name.find('/') != std::string::npos || name == kDigestsFile) {
        problem(std::string(kDigestsFile) + ":" + std::to_string(n) + ": bad file name '" + name +
                "'");
        continue;
      }
      digests[name] = line.substr(0, 64);
    }
  } else {
    problem(std::string("missing ") + kDigestsFile + " (the digest list of the bundle)");
  }
  for (const auto& [name, digest] : digests) {
    const fs::path p = root / name;
    if (!fs::exists(p, ec)) {
      problem("missing file " + name + " (listed in " + kDigestsFile + ")");
      continue;
    }
    if (sha256_file(p.string()) != digest)
      problem("edited file " + name + ": its SHA-256 differs from " + kDigestsFile);
  }
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string name = e.path().filename().string();
    if (name != kDigestsFile && !digests.count(name) && name.rfind('.', 0) != 0) {
      problem("file " + name + " is not listed in " + kDigestsFile);
    }
  }
  for (const char* required :
       {kManifestFile, kCaseListFile, kProfileCopyFile, "results.jsonl", "summary.json"}) {
    if (!digests.count(required) && fs::exists(root / kDigestsFile)) {
      problem(std::string(required) + " is not listed in " + kDigestsFile);
    }
  }
  // 2. The manifest.
  const auto manifest_text = read_text(root / kManifestFile);
  if (!manifest_text) {
    problem(std::string("missing ") + kManifestFile);
    return out;
  }
  try {
    out.manifest = json::parse(*manifest_text);
  } catch (const json::exception& e) {
    problem(std::string(kManifestFile) + " is not JSON: " + e.what());
    return out;
  }
  const json& m = out.manifest;
  if (str_at(m, {"schema"}) != "sdpa-cts.certification") {
    problem(std::string(kManifestFile) + ": schema is not sdpa-cts.certification");
    return out;
  }
  // 3. The copies the manifest names by digest.
  const auto case_list = read_text(root / kCaseListFile);
  if (case_list) {
    if (sha256_hex(*case_list) != str_at(m, {"profile", "case_list_sha256"})) {
      problem(std::string(kCaseListFile) + " does not have the manifest's case_list_sha256");
    }
    std::istringstream lines(*case_list);
    std::string line;
    while (std::getline(lines, line)) {
      const auto tab = line.find('\t');
      out.case_ids.push_back(line.substr(0, tab));
      const std::string g = tab == std::string::npos ? "-" : line.substr(tab + 1);
      out.golden_files.push_back(g == "-" ? "" : g);
    }
  } else {
    problem(std::string("missing ") + kCaseListFile);
  }
  if (auto profile = read_text(root / kProfileCopyFile)) {
    if (sha256_hex(*profile) != str_at(m, {"profile", "file_sha256"})) {
      problem(std::string(kProfileCopyFile) + " does not have the manifest's profile file_sha256");
    }
  }
  const bool has_expectations = m.contains("expectations") && !m.at("expectations").is_null();
  out.expectations = read_text(root / kExpectationsCopyFile);
  if (has_expectations != out.expectations.has_value()) {
    problem(has_expectations ? std::string("missing ") + kExpectationsCopyFile +
                                   " (the manifest names expectations)"
                             : std::string(kExpectationsCopyFile) +
                                   " present, but the manifest names no expectations");
  } else if (has_expectations &&
             sha256_hex(*out.expectations) != str_at(m, {"expectations", "sha256"})) {
    problem(std::string(kExpectationsCopyFile) +
            " does not have the manifest's expectations sha256");
  }
  // 4. The records, and the counts of summary.json against them.
  if (auto jsonl = read_text(root / "results.jsonl")) {
    std::istringstream lines(*jsonl);
    std::string line;
    int n = 0;
    while (std::getline(lines, line)) {
      ++n;
      try {
        out.records.push_back(record_from_json(json::parse(line)));
      } catch (const std::exception& e) {
        problem("results.jsonl:" + std::to_string(n) + ": " + e.what());
      }
    }
  } else {
    problem("missing results.jsonl");
  }
  StatusCounts counts;
  for (const auto& r : out.records) counts.add(r.status);
  if (auto summary_text = read_text(root / "summary.json")) {
    try {
      const json s = json::parse(*summary_text);
      for (Status st : kAllStatuses) {
        // A status newer than the bundle (NOT_JUDGED) is absent from an older summary: an
        // absent count is 0, and still has to agree with the records.
        const auto got = s.at("counts").value(status_name(st), std::int64_t(0));
        if (got != counts[st]) {
          problem("summary.json counts " + std::to_string(got) + " " + status_name(st) +
                  ", results.jsonl has " + std::to_string(counts[st]));
        }
      }
      if (s.at("cases").get<std::int64_t>() != counts.total)
        problem("summary.json: 'cases' differs from results.jsonl");
    } catch (const std::exception& e) {
      problem(std::string("summary.json: ") + e.what());
    }
  } else {
    problem("missing summary.json");
  }
  // 5. Records against the case list: one backend, one record per case of this shard, in order.
  const int shard_count = m.value("/run/shard/count"_json_pointer, 1);
  const int shard_index = m.value("/run/shard/index"_json_pointer, 0);
  const std::string backend = str_at(m, {"backend", "name"});
  std::vector<std::string> expect_ids;
  for (std::size_t i = 0; i < out.case_ids.size(); ++i) {
    if (i % static_cast<std::size_t>(std::max(shard_count, 1)) ==
        static_cast<std::size_t>(shard_index)) {
      expect_ids.push_back(out.case_ids[i]);
    }
  }
  if (case_list) {
    if (expect_ids.size() != out.records.size()) {
      problem("results.jsonl has " + std::to_string(out.records.size()) +
              " records, the case list " + std::to_string(expect_ids.size()) +
              (shard_count > 1 ? " for this shard" : ""));
    } else {
      for (std::size_t i = 0; i < expect_ids.size(); ++i) {
        if (out.records[i].case_id != expect_ids[i] || out.records[i].backend != backend) {
          problem("results.jsonl:" + std::to_string(i + 1) + ": " + out.records[i].backend + " " +
                  out.records[i].case_id + " is not case " + std::to_string(i + 1) +
                  " of the case list on " + backend);
          break;
        }
      }
    }
  }
  if (static_cast<std::int64_t>(out.case_ids.size()) !=
      m.value("/profile/cases"_json_pointer, std::int64_t(-1))) {
    problem("the manifest's case count differs from " + std::string(kCaseListFile));
  }
  // 6. Expected failures: each XFAIL names an entry of the bundled expectations.
  if (out.expectations) {
    try {
      // Whether an entry lists the case, whatever host it holds on: the bundle may have been
      // made on another host (its facts are not in the bundle).
      const Expectations e =
          parse_expectations(*out.expectations, kExpectationsCopyFile, every_host_facts());
      for (const auto& r : out.records) {
        if (r.status == Status::expected_failure && !find_expectation(e, r.backend, r.case_id)) {
          problem("XFAIL " + r.case_id + " is not listed in " + kExpectationsCopyFile);
        }
      }
    } catch (const std::exception& e) {
      problem(e.what());
    }
  } else {
    for (const auto& r : out.records)
      if (r.status == Status::expected_failure) {
        problem("XFAIL " + r.case_id + " without expectations in the bundle");
        break;
      }
  }
  // 7. The verdict, recomputed by the profile rule.
  Profile rule;
  if (m.contains("profile") && m.at("profile").contains("require")) {
    for (const auto& t : m.at("profile").at("require")) rule.require.insert(t.get<std::string>());
  }
  const ProfileVerdict v = judge_profile(rule, out.records, out.case_ids.size());
  const nlohmann::ordered_json recomputed = verdict_json(v, out.records.size());
  const json recorded = m.value("verdict", json());
  for (const auto& [key, value] : recomputed.items()) {
    if (!recorded.contains(key) || json(value) != recorded.at(key)) {
      problem("manifest verdict '" + key + "' is " +
              (recorded.contains(key) ? recorded.at(key).dump() : "missing") +
              ", the records give " + json(value).dump());
    }
  }
  // 8. Differences from this build (notes, not problems).
  auto note_if = [&](const std::string& what, const std::string& bundle, const std::string& here) {
    if (bundle != here)
      out.notes.push_back(what + " differs: bundle " + bundle + ", this build " + here);
  };
  note_if("suite version", str_at(m, {"suite", "version"}), SDPA_CTS_VERSION);
  note_if("suite commit", str_at(m, {"suite", "commit"}), build_commit());
  note_if("tolerance table", str_at(m, {"suite", "tolerance_version"}), ToleranceTable{}.version);
  const std::string profile_name = str_at(m, {"profile", "name"});
  const auto builtin = builtin_profile_names();
  if (std::find(builtin.begin(), builtin.end(), profile_name) == builtin.end()) {
    out.notes.push_back("profile '" + profile_name + "' is not a built-in profile of this build: " +
                        "the bundle's own case list and profile copy were checked");
  } else
    try {
      const Profile here = load_profile(profile_name);
      note_if("profile file", str_at(m, {"profile", "file_sha256"}), sha256_hex(here.text));
      const auto seed = m.value("/profile/sample_seed"_json_pointer, std::uint64_t(0));
      note_if("profile case list", str_at(m, {"profile", "case_list_sha256"}),
              sha256_hex(case_list_text(profile_cases(here, seed))));
    } catch (const std::exception& e) {
      out.notes.push_back(std::string("this build cannot regenerate the profile: ") + e.what());
    }
  if (shard_count > 1) {
    out.notes.push_back(
        "a shard bundle (" + std::to_string(shard_index) + "/" + std::to_string(shard_count) +
        "): merge the shards with `sdpa-cts report merge` for the profile's verdict");
  }
  return out;
}

BundleContents merge_bundles(const std::vector<std::string>& dirs) {
  if (dirs.empty()) throw std::invalid_argument("no bundle to merge");
  std::vector<BundleCheck> checks;
  std::vector<RunSummary> runs;
  // The manifest without what differs between the shards of one certification.
  auto comparable = [](json m) {
    m.erase("verdict");
    for (const char* k : {"shard", "started_at", "seconds", "command"}) m["run"].erase(k);
    return m;
  };
  for (const auto& d : dirs) {
    BundleCheck c = check_bundle(d);
    if (!c.problems.empty()) {
      throw std::invalid_argument("bundle '" + d + "' is not intact: " + c.problems.front() +
                                  " (sdpa-cts bundle verify " + d + ")");
    }
    if (!checks.empty() && comparable(c.manifest) != comparable(checks.front().manifest)) {
      const json a = comparable(checks.front().manifest), b = comparable(c.manifest);
      std::string where;
      for (const auto& [key, value] : a.items())
        if (!b.contains(key) || b.at(key) != value) where += (where.empty() ? "" : ", ") + key;
      throw std::invalid_argument(
          "bundles '" + dirs.front() + "' and '" + d +
          "' are not shards of one certification: their manifests differ in " +
          (where.empty() ? std::string("their keys") : where));
    }
    runs.push_back(reports::read_run(d));
    checks.push_back(std::move(c));
  }
  const BundleCheck& first = checks.front();
  BundleContents out;
  out.run = reports::merge_runs(runs, dirs);
  out.case_list = *read_text(fs::path(dirs.front()) / kCaseListFile);
  out.profile_text = *read_text(fs::path(dirs.front()) / kProfileCopyFile);
  out.expectations = first.expectations;
  Profile rule;
  for (const auto& t : first.manifest.at("profile").at("require"))
    rule.require.insert(t.get<std::string>());
  const ProfileVerdict v = judge_profile(rule, out.run.records, first.case_ids.size());
  out.manifest = nlohmann::ordered_json::parse(first.manifest.dump());
  auto& run = out.manifest["run"];
  run["shard"] = {{"index", 0}, {"count", 1}};
  run["merged_shards"] = dirs.size();
  run["started_at"] = out.run.started_at;
  run["seconds"] = out.run.seconds;
  std::string command = run.value("command", "");
  if (const auto at = command.find(" --shard "); at != std::string::npos) {
    const auto end = command.find(' ', at + 9);
    command.erase(at, end == std::string::npos ? std::string::npos : end - at);
  }
  run["command"] = command;
  out.manifest["verdict"] = verdict_json(v, out.run.records.size());
  return out;
}

}  // namespace sdpa::conformance
