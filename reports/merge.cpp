// read_run and merge_runs: a sharded run's report directories back into the one run
// (docs/SCALE-OUT.md).
#include "reports/merge.hpp"

#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "reports/records/record_json.hpp"
#include "reports/records/shard.hpp"

namespace sdpa::reports {

using conformance::CaseRecord;
using conformance::RunSummary;
using conformance::Shard;

namespace {

using json = nlohmann::json;

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// The whole content of `path`; throws naming it when it cannot be read.
std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot read " + quoted(path) + ": no such file");
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw std::invalid_argument("cannot read " + quoted(path) + ": read error");
  return s.str();
}

// Typed access to the keys of summary.json, each error naming the file and the key.
class SummaryKeys {
 public:
  SummaryKeys(const json& j, std::string path) : j_(j), path_(std::move(path)) {}

  const json& at(const json& obj, const std::string& key, const std::string& name) const {
    const auto it = obj.find(key);
    if (it == obj.end()) fail(name, "is missing");
    return *it;
  }
  std::string text(const std::string& key) const {
    const json& v = at(j_, key, key);
    if (!v.is_string()) fail(key, "is not a string");
    return v.get<std::string>();
  }
  std::uint64_t unsigned_int(const json& obj, const std::string& key,
                             const std::string& name) const {
    const json& v = at(obj, key, name);
    if (!v.is_number_unsigned()) fail(name, "is not a non-negative integer");
    return v.get<std::uint64_t>();
  }
  int small_int(const json& obj, const std::string& key, const std::string& name) const {
    const std::uint64_t v = unsigned_int(obj, key, name);
    if (v > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) fail(name, "is too large");
    return static_cast<int>(v);
  }
  // A number, or "inf" / "-inf" / "nan" (JSON has no non-finite numbers).
  double number(const std::string& key) const {
    if (auto x = conformance::number_or_nonfinite(at(j_, key, key))) return *x;
    fail(key, "is not a number");
  }
  const json& object(const std::string& key) const {
    const json& v = at(j_, key, key);
    if (!v.is_object()) fail(key, "is not an object");
    return v;
  }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw std::invalid_argument(quoted(path_) + ": key '" + key + "' " + what);
  }

 private:
  const json& j_;     // the summary object
  std::string path_;  // its file, for errors
};

// The run metadata of summary.json; returns its "cases".
std::uint64_t read_summary(const std::string& path, RunSummary* run) {
  const std::string text = read_text(path);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw std::invalid_argument(quoted(path) + ": not JSON: " + e.what());
  }
  if (!j.is_object()) throw std::invalid_argument(quoted(path) + ": not a JSON object");
  const SummaryKeys k(j, path);
  if (k.text("schema") != "sdpa-cts.summary") {
    k.fail("schema", "is not \"sdpa-cts.summary\" (not an sdpa-cts summary)");
  }
  run->tool_version = k.text("tool_version");
  run->tolerance_version = k.text("tolerance_version");
  run->tier = k.text("tier");
  run->device = k.text("device");
  run->seed = k.unsigned_int(j, "seed", "seed");
  const json& shard = k.object("shard");
  run->shard_index = k.small_int(shard, "index", "shard.index");
  run->shard_count = k.small_int(shard, "count", "shard.count");
  if (run->shard_count < 1) k.fail("shard.count", "is 0 (at least 1)");
  if (run->shard_index >= run->shard_count) {
    k.fail("shard.index", "is " + std::to_string(run->shard_index) + ", outside [0, " +
                              std::to_string(run->shard_count - 1) + "]");
  }
  run->jobs_total = k.unsigned_int(j, "jobs_total", "jobs_total");
  run->cases_total = k.unsigned_int(j, "cases_total", "cases_total");
  if (run->cases_total == 0 ? run->jobs_total != 0 : run->jobs_total % run->cases_total != 0) {
    k.fail("jobs_total", std::to_string(run->jobs_total) + " is not a multiple of cases_total " +
                             std::to_string(run->cases_total));
  }
  run->expectations = k.text("expectations");
  run->started_at = k.text("started_at");
  run->seconds = k.number("seconds");
  return k.unsigned_int(j, "cases", "cases");
}

// The records of results.jsonl, one per line, in order.
std::vector<CaseRecord> read_records(const std::string& path) {
  const std::string text = read_text(path);
  std::vector<CaseRecord> records;
  std::size_t line_no = 0;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(begin, end - begin);
    begin = end + 1;
    const std::string where = quoted(path) + " line " + std::to_string(++line_no) + ": ";
    json j;
    try {
      j = json::parse(line);
    } catch (const json::parse_error& e) {
      throw std::invalid_argument(where + "not JSON: " + e.what());
    }
    if (!j.is_object()) throw std::invalid_argument(where + "not a JSON object");
    try {
      records.push_back(conformance::record_from_json(j));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(where + e.what());
    }
  }
  return records;
}

std::string shard_of(const RunSummary& r) {
  return conformance::shard_name(Shard{r.shard_index, r.shard_count});
}

}  // namespace

RunSummary read_run(const std::string& dir) {
  RunSummary run;
  const std::string summary_path = dir + "/summary.json";
  const std::string results_path = dir + "/results.jsonl";
  const std::uint64_t cases = read_summary(summary_path, &run);
  run.records = read_records(results_path);
  if (cases != run.records.size()) {
    throw std::invalid_argument(quoted(summary_path) + " counts " + std::to_string(cases) +
                                " cases but " + quoted(results_path) + " holds " +
                                std::to_string(run.records.size()) +
                                " records (files of two different runs?)");
  }
  return run;
}

RunSummary merge_runs(const std::vector<RunSummary>& shards,
                      const std::vector<std::string>& names) {
  if (shards.size() != names.size()) {
    throw std::invalid_argument("merge: " + std::to_string(shards.size()) + " runs but " +
                                std::to_string(names.size()) + " names");
  }
  if (shards.empty()) throw std::invalid_argument("merge: no run to merge");
  const RunSummary& first = shards.front();

  // The same run: every shard agrees with the first on what defines the run.
  using Field = std::function<std::string(const RunSummary&)>;
  const std::vector<std::pair<const char*, Field>> fields = {
      {"tool_version", [](const RunSummary& r) { return quoted(r.tool_version); }},
      {"tolerance_version", [](const RunSummary& r) { return quoted(r.tolerance_version); }},
      {"tier", [](const RunSummary& r) { return quoted(r.tier); }},
      {"device", [](const RunSummary& r) { return quoted(r.device); }},
      {"seed", [](const RunSummary& r) { return std::to_string(r.seed); }},
      {"shard count", [](const RunSummary& r) { return std::to_string(r.shard_count); }},
      {"jobs_total", [](const RunSummary& r) { return std::to_string(r.jobs_total); }},
      {"cases_total", [](const RunSummary& r) { return std::to_string(r.cases_total); }},
      {"expectations", [](const RunSummary& r) { return quoted(r.expectations); }},
  };
  for (std::size_t i = 1; i < shards.size(); ++i) {
    for (const auto& [field, value] : fields) {
      const std::string a = value(first), b = value(shards[i]);
      if (a == b) continue;
      throw std::invalid_argument(quoted(names[i]) + " and " + quoted(names[0]) +
                                  " are not shards of one run: " + field + " " + b + " in " +
                                  quoted(names[i]) + ", " + a + " in " + quoted(names[0]));
    }
  }

  // Every shard 0..N-1 exactly once.
  const int n = first.shard_count;
  if (n < 1) throw std::invalid_argument(quoted(names[0]) + ": shard count " + std::to_string(n));
  std::vector<std::size_t> owner(static_cast<std::size_t>(n), shards.size());
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const int k = shards[i].shard_index;
    if (k < 0 || k >= n) {
      throw std::invalid_argument(quoted(names[i]) + ": shard index " + std::to_string(k) +
                                  " is outside [0, " + std::to_string(n - 1) + "]");
    }
    auto& o = owner[static_cast<std::size_t>(k)];
    if (o != shards.size()) {
      throw std::invalid_argument("shard " + shard_of(shards[i]) + " is given twice: " +
                                  quoted(names[o]) + " and " + quoted(names[i]));
    }
    o = i;
  }
  std::string missing;
  int n_missing = 0;
  for (int k = 0; k < n; ++k) {
    if (owner[static_cast<std::size_t>(k)] != shards.size()) continue;
    if (++n_missing <= 10) {
      missing += (missing.empty() ? "" : ", ") + conformance::shard_name(Shard{k, n});
    }
  }
  if (n_missing > 0) {
    if (n_missing > 10) missing += " and " + std::to_string(n_missing - 10) + " more";
    throw std::invalid_argument(std::string(n_missing == 1 ? "shard " : "shards ") + missing +
                                (n_missing == 1 ? " is" : " are") +
                                " missing: " + std::to_string(shards.size()) + " of the " +
                                std::to_string(n) + " shards of the run were given");
  }

  // Each shard holds exactly its cases' jobs, `group` per case.
  const std::size_t group = first.cases_total ? first.jobs_total / first.cases_total : 0;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const Shard s{shards[i].shard_index, n};
    const std::size_t want = conformance::shard_size(first.cases_total, s) * group;
    if (shards[i].records.size() != want) {
      throw std::invalid_argument(
          quoted(names[i]) + " (shard " + shard_of(shards[i]) + ") has " +
          std::to_string(shards[i].records.size()) + " records, but shard " + shard_of(shards[i]) +
          " of a run of " + std::to_string(first.jobs_total) + " jobs has " + std::to_string(want));
    }
  }

  RunSummary merged = first;
  merged.shard_index = 0;
  merged.shard_count = 1;
  merged.records.assign(first.jobs_total, CaseRecord{});
  for (const RunSummary& s : shards) {
    for (std::size_t m = 0; m < s.records.size(); ++m) {
      const std::size_t c = static_cast<std::size_t>(s.shard_index) +
                            (m / group) * static_cast<std::size_t>(n);  // the record's case
      merged.records[c * group + m % group] = s.records[m];
    }
    // Side by side: the run started with the first shard and lasted as long as the longest.
    if (!s.started_at.empty() && (merged.started_at.empty() || s.started_at < merged.started_at)) {
      merged.started_at = s.started_at;
    }
    if (s.seconds > merged.seconds) merged.seconds = s.seconds;
  }
  return merged;
}

}  // namespace sdpa::reports
