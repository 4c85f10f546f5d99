// Merging a sharded run: split by the shard rule and merged back, a run is the same run;
// anything that is not the shards of one run is an error naming the shard and the field.
#include "reports/merge.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "reports/records/shard.hpp"
#include "reports/reports.hpp"
#include "tests/error_of.hpp"

namespace sdpa {

using namespace sdpa::conformance;
using namespace sdpa::reports;
namespace {

namespace fs = std::filesystem;

// A run of `n` records with distinct fields, every few statuses, and non-finite numbers.
RunSummary sample_run(std::size_t n = 10) {
  RunSummary run;
  run.tool_version = "0.1.0";
  run.tolerance_version = "3";
  run.tier = "smoke";
  run.device = "cpu: x86-64 avx2 (2 cores)";
  run.seed = 18446744073709551615ull;  // uint64 max: must survive the JSON round trip
  run.started_at = "2024-05-01T12:00:00Z";
  run.seconds = 2.5;
  run.jobs_total = n;
  run.cases_total = n;  // one job per case (ACasesJobsStayTogetherInOneShard has three)
  run.expectations = "known.txt";
  const Status statuses[] = {Status::pass,    Status::fail,       Status::not_supported,
                             Status::invalid, Status::mistrusted, Status::quality_warning};
  for (std::size_t i = 0; i < n; ++i) {
    CaseRecord r;
    r.case_id = "b1.hq2.l" + std::to_string(i + 1) + ".s7.dqk8.f32.seed1.gen=normal";
    r.backend = i % 2 ? "cpu.flash" : "cpu.math";
    r.device = run.device;
    r.simd_target = i % 3 ? "" : "avx2";
    r.threads = static_cast<int>(i % 4);
    r.status = statuses[i % 6];
    r.message = "message " + std::to_string(i) + "\nwith <, & and \"";
    r.max_abs_error = i == 3 ? INFINITY : 1e-3 * static_cast<double>(i);
    r.nmse = i == 4 ? NAN : 1e-7 * static_cast<double>(i);
    r.worst_ratio = 0.1 * static_cast<double>(i);
    r.worst_where = "o[0,0," + std::to_string(i) + ",0]";
    r.seconds = 0.01 * static_cast<double>(i + 1);
    r.features = {"dtype=f32", i % 2 ? "causal=br" : "plain"};
    r.repro = "sdpa-cts run --case " + r.case_id + " --backend " + r.backend;
    run.records.push_back(r);
  }
  return run;
}

// Shard k of n of `run`, as `run --shard k/n` would have recorded it.
RunSummary shard_of(const RunSummary& run, int k, int n) {
  RunSummary s = run;
  s.shard_index = k;
  s.shard_count = n;
  s.records.clear();
  const Shard shard{k, n};
  const std::size_t group = run.cases_total ? run.jobs_total / run.cases_total : 1;
  for (std::size_t j = 0; j < run.records.size(); ++j) {
    if (shard.has(j / group)) s.records.push_back(run.records[j]);  // a case's jobs stay together
  }
  return s;
}

std::vector<RunSummary> split(const RunSummary& run, int n) {
  std::vector<RunSummary> shards;
  for (int k = 0; k < n; ++k) shards.push_back(shard_of(run, k, n));
  return shards;
}

std::vector<std::string> names_of(std::size_t n) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < n; ++i) names.push_back("B" + std::to_string(i));
  return names;
}

void expect_same_double(double a, double b) {
  if (std::isnan(a)) {
    EXPECT_TRUE(std::isnan(b));
  } else {
    EXPECT_EQ(a, b);
  }
}

void expect_same_record(const CaseRecord& a, const CaseRecord& b) {
  EXPECT_EQ(a.case_id, b.case_id);
  EXPECT_EQ(a.backend, b.backend);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.simd_target, b.simd_target);
  EXPECT_EQ(a.threads, b.threads);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.message, b.message);
  expect_same_double(a.max_abs_error, b.max_abs_error);
  expect_same_double(a.nmse, b.nmse);
  expect_same_double(a.worst_ratio, b.worst_ratio);
  EXPECT_EQ(a.worst_where, b.worst_where);
  expect_same_double(a.seconds, b.seconds);
  EXPECT_EQ(a.features, b.features);
  EXPECT_EQ(a.repro, b.repro);
  EXPECT_EQ(a.expected, b.expected);
}

void expect_same_run(const RunSummary& a, const RunSummary& b) {
  EXPECT_EQ(a.tool_version, b.tool_version);
  EXPECT_EQ(a.tolerance_version, b.tolerance_version);
  EXPECT_EQ(a.tier, b.tier);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.started_at, b.started_at);
  expect_same_double(a.seconds, b.seconds);
  EXPECT_EQ(a.shard_index, b.shard_index);
  EXPECT_EQ(a.shard_count, b.shard_count);
  EXPECT_EQ(a.jobs_total, b.jobs_total);
  EXPECT_EQ(a.cases_total, b.cases_total);
  EXPECT_EQ(a.expectations, b.expectations);
  ASSERT_EQ(a.records.size(), b.records.size());
  for (std::size_t i = 0; i < a.records.size(); ++i) {
    SCOPED_TRACE("record " + std::to_string(i));
    expect_same_record(a.records[i], b.records[i]);
  }
}

using sdpa::testing_util::error_of;

// A fresh temporary directory, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("sdpa-merge-test-" + std::to_string(::getpid()) + "-" + std::to_string(next_++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string path() const { return path_.string(); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  static inline int next_ = 0;  // distinct directories within one process
  fs::path path_;               // the directory
};

std::string read(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(Merge, SplitAndMergedIsTheRun) {
  for (std::size_t n_records : {0u, 1u, 10u}) {
    const RunSummary run = sample_run(n_records);
    for (int n = 1; n <= 7; ++n) {
      SCOPED_TRACE(std::to_string(n_records) + " records, " + std::to_string(n) + " shards");
      auto shards = split(run, n);
      expect_same_run(merge_runs(shards, names_of(shards.size())), run);
      // Any order of the directories.
      std::reverse(shards.begin(), shards.end());
      expect_same_run(merge_runs(shards, names_of(shards.size())), run);
    }
  }
}

TEST(Merge, ACasesJobsStayTogetherInOneShard) {
  // 12 records = 4 cases x 3 jobs (three backends, say): each shard gets whole cases, so with
  // 3 shards every shard still has every backend, and the merge restores the run's order.
  RunSummary run = sample_run(12);
  run.cases_total = 4;
  const char* backends[] = {"cpu.math", "cpu.flash", "cpu.mem_efficient"};
  for (std::size_t i = 0; i < run.records.size(); ++i) {
    run.records[i].case_id =
        "b1.hq2.l" + std::to_string(i / 3 + 1) + ".s7.dqk8.f32.seed1.gen=normal";
    run.records[i].backend = backends[i % 3];
  }
  for (int n = 1; n <= 5; ++n) {
    SCOPED_TRACE(std::to_string(n) + " shards");
    auto shards = split(run, n);
    for (const auto& s : shards) {
      ASSERT_EQ(s.records.size() % 3, 0u);
      for (std::size_t m = 0; m < s.records.size(); m += 3) {
        EXPECT_EQ(s.records[m].case_id, s.records[m + 2].case_id);
      }
    }
    std::reverse(shards.begin(), shards.end());
    expect_same_run(merge_runs(shards, names_of(shards.size())), run);
  }
  // Three shards of a three-backend run mix the backends.
  const auto three = split(run, 3);
  EXPECT_NE(three[0].records[0].backend, three[0].records[1].backend);
}

TEST(Merge, TimingIsTheEarliestStartAndTheLongestShard) {
  auto shards = split(sample_run(), 3);
  shards[0].started_at = "2024-05-01T12:00:05Z";
  shards[0].seconds = 1.0;
  shards[1].started_at = "2024-05-01T11:59:58Z";
  shards[1].seconds = 4.0;
  shards[2].started_at = "2024-05-01T12:00:01Z";
  shards[2].seconds = 2.0;
  const RunSummary m = merge_runs(shards, names_of(3));
  EXPECT_EQ(m.started_at, "2024-05-01T11:59:58Z");
  EXPECT_EQ(m.seconds, 4.0);
}

TEST(Merge, ReadBackFromReportsAndMerged) {
  const RunSummary run = sample_run();
  std::vector<RunSummary> read_back;
  std::vector<TempDir> dirs(3);
  for (int k = 0; k < 3; ++k) {
    write_reports(shard_of(run, k, 3), dirs[k].path());
    read_back.push_back(read_run(dirs[k].path()));
  }
  const RunSummary merged = merge_runs(read_back, names_of(3));
  expect_same_run(merged, run);
  TempDir whole, again;
  write_reports(run, whole.path());
  write_reports(merged, again.path());
  for (const char* f : kReportFiles) EXPECT_EQ(read(again.file(f)), read(whole.file(f))) << f;
}

TEST(Merge, SummaryJsonCarriesTheShard) {
  const std::string s = render_summary_json(shard_of(sample_run(), 2, 3));
  EXPECT_NE(
      s.find("\"shard\": {\n    \"index\": 2,\n    \"count\": 3\n  },\n"
             "  \"jobs_total\": 10,\n  \"cases_total\": 10,\n  \"expectations\": \"known.txt\""),
      std::string::npos)
      << s;
  EXPECT_LT(s.find("\"seed\""), s.find("\"shard\""));
}

TEST(Merge, MissingShardIsNamed) {
  auto shards = split(sample_run(), 4);
  shards.erase(shards.begin() + 2);
  EXPECT_EQ(error_of([&] { merge_runs(shards, names_of(3)); }),
            "shard 2/4 is missing: 3 of the 4 shards of the run were given");
  shards.erase(shards.begin());
  EXPECT_EQ(error_of([&] { merge_runs(shards, names_of(2)); }),
            "shards 0/4, 2/4 are missing: 2 of the 4 shards of the run were given");
}

TEST(Merge, RepeatedShardIsNamed) {
  auto shards = split(sample_run(), 3);
  shards[2] = shards[1];
  EXPECT_EQ(error_of([&] { merge_runs(shards, names_of(3)); }),
            "shard 1/3 is given twice: 'B1' and 'B2'");
}

TEST(Merge, ShardsOfDifferentRunsAreRefused) {
  struct Change {
    const char* field;           // as the message names it
    void (*apply)(RunSummary&);  // makes shard 1 differ in that field
  };
  const Change changes[] = {
      {"tool_version '0.2.0' in 'B1', '0.1.0' in 'B0'",
       [](RunSummary& r) { r.tool_version = "0.2.0"; }},
      {"tolerance_version '4' in 'B1', '3' in 'B0'",
       [](RunSummary& r) { r.tolerance_version = "4"; }},
      {"tier 'ci' in 'B1', 'smoke' in 'B0'", [](RunSummary& r) { r.tier = "ci"; }},
      {"device 'cpu: other' in 'B1'", [](RunSummary& r) { r.device = "cpu: other"; }},
      {"seed 7 in 'B1'", [](RunSummary& r) { r.seed = 7; }},
      {"jobs_total 11 in 'B1', 10 in 'B0'", [](RunSummary& r) { r.jobs_total = 11; }},
      {"expectations '' in 'B1', 'known.txt' in 'B0'",
       [](RunSummary& r) { r.expectations.clear(); }},
  };
  for (const auto& c : changes) {
    auto shards = split(sample_run(), 3);
    c.apply(shards[1]);
    const std::string e = error_of([&] { merge_runs(shards, names_of(3)); });
    EXPECT_NE(e.find("'B1' and 'B0' are not shards of one run: "), std::string::npos) << e;
    EXPECT_NE(e.find(c.field), std::string::npos) << e;
  }
  // Shards of splits into different numbers of shards.
  auto shards = split(sample_run(), 3);
  shards[2] = shard_of(sample_run(), 2, 4);
  EXPECT_EQ(error_of([&] { merge_runs(shards, names_of(3)); }),
            "'B2' and 'B0' are not shards of one run: shard count 4 in 'B2', 3 in 'B0'");
}

TEST(Merge, WrongRecordCountIsNamed) {
  auto shards = split(sample_run(), 3);
  shards[1].records.pop_back();
  EXPECT_EQ(error_of([&] { merge_runs(shards, names_of(3)); }),
            "'B1' (shard 1/3) has 2 records, but shard 1/3 of a run of 10 jobs has 3");
  shards = split(sample_run(), 3);
  shards[0].records.push_back(shards[0].records.back());
  EXPECT_EQ(error_of([&] { merge_runs(shards, names_of(3)); }),
            "'B0' (shard 0/3) has 5 records, but shard 0/3 of a run of 10 jobs has 4");
}

TEST(Merge, BadArguments) {
  EXPECT_EQ(error_of([] { merge_runs({}, {}); }), "merge: no run to merge");
  EXPECT_EQ(error_of([] { merge_runs({sample_run()}, {}); }), "merge: 1 runs but 0 names");
  auto shards = split(sample_run(), 2);
  shards[1].shard_index = 5;
  EXPECT_EQ(error_of([&] { merge_runs(shards, names_of(2)); }),
            "'B1': shard index 5 is outside [0, 1]");
}

TEST(Merge, ReadRunErrorsNameTheFileAndLine) {
  TempDir dir;
  const std::string summary = dir.file("summary.json"), results = dir.file("results.jsonl");
  EXPECT_EQ(error_of([&] { read_run(dir.path()); }), "cannot read '" + summary + "': no such file");
  write_reports(sample_run(), dir.path());
  const std::string good_results = read(results), good_summary = read(summary);
  ASSERT_EQ(read_run(dir.path()).records.size(), 10u);

  // A corrupt JSONL line: its line number.
  std::string bad = good_results;
  bad.insert(bad.find('\n', bad.find('\n') + 1) + 1, "{\"case_id\": \n");
  write(results, bad);
  std::string e = error_of([&] { read_run(dir.path()); });
  EXPECT_EQ(e.rfind("'" + results + "' line 3: not JSON: ", 0), 0u) << e;
  // A record without a key.
  bad = good_results;
  const auto at = bad.find("\"backend\"");
  bad.replace(at, 9, "\"backnd\"");
  write(results, bad);
  e = error_of([&] { read_run(dir.path()); });
  EXPECT_EQ(e.rfind("'" + results + "' line 1: malformed record", 0), 0u) << e;
  EXPECT_NE(e.find("backend"), std::string::npos) << e;
  // Not an object; an empty line.
  write(results, "[1, 2]\n");
  EXPECT_EQ(error_of([&] { read_run(dir.path()); }), "'" + results + "' line 1: not a JSON object");
  write(results, good_results + "\n");
  e = error_of([&] { read_run(dir.path()); });
  EXPECT_EQ(e.rfind("'" + results + "' line 11: not JSON", 0), 0u) << e;
  // Records of another run than the summary's.
  write(results, good_results.substr(0, good_results.find('\n') + 1));
  EXPECT_EQ(error_of([&] { read_run(dir.path()); }),
            "'" + summary + "' counts 10 cases but '" + results +
                "' holds 1 records (files of two different runs?)");
  std::filesystem::remove(results);
  EXPECT_EQ(error_of([&] { read_run(dir.path()); }), "cannot read '" + results + "': no such file");
  write(results, good_results);

  // summary.json: not JSON, a missing key, a mistyped key, an impossible shard.
  write(summary, "{");
  e = error_of([&] { read_run(dir.path()); });
  EXPECT_EQ(e.rfind("'" + summary + "': not JSON: ", 0), 0u) << e;
  auto without = [&](const std::string& from, const std::string& to) {
    std::string s = good_summary;
    const auto p = s.find(from);
    EXPECT_NE(p, std::string::npos) << from;
    s.replace(p, from.size(), to);
    write(summary, s);
    return error_of([&] { read_run(dir.path()); });
  };
  EXPECT_EQ(without("\"jobs_total\"", "\"jobs\""),
            "'" + summary + "': key 'jobs_total' is missing");
  EXPECT_EQ(without("\"tier\": \"smoke\"", "\"tier\": 1"),
            "'" + summary + "': key 'tier' is not a string");
  EXPECT_EQ(without("\"index\": 0", "\"index\": 1"),
            "'" + summary + "': key 'shard.index' is 1, outside [0, 0]");
  EXPECT_EQ(without("\"count\": 1", "\"count\": -1"),
            "'" + summary + "': key 'shard.count' is not a non-negative integer");
  EXPECT_EQ(
      without("\"schema\": \"sdpa-cts.summary\"", "\"schema\": \"x\""),
      "'" + summary + "': key 'schema' is not \"sdpa-cts.summary\" (not an sdpa-cts summary)");
  write(summary, good_summary);
  expect_same_run(read_run(dir.path()), sample_run());
}

}  // namespace
}  // namespace sdpa
