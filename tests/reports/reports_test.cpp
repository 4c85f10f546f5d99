// The report writers: every file parses with a real parser, round-trips the records, counts
// right, and escapes everything that comes from the data.
#include "reports/reports.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "reports/markdown_text.hpp"
#include "reports/records/record_json.hpp"
#include "reports/tallies.hpp"
#include "reports/text.hpp"
#include "tests/reports/sample_run.hpp"
#include "tests/reports/xml_check.hpp"

namespace sdpa {

using namespace sdpa::conformance;
using namespace sdpa::reports;
namespace {

using nlohmann::json;
using testing::XmlNode;
using testing::XmlReader;

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::int64_t count_if_status(const RunSummary& run, std::initializer_list<Status> any) {
  std::int64_t n = 0;
  for (const auto& r : run.records) {
    for (Status s : any) n += r.status == s;
  }
  return n;
}

// A double written by the JSONL writer: a number, or "inf" / "-inf" / "nan".
double json_double(const json& j) {
  if (j.is_number()) return j.get<double>();
  std::string s = j.get<std::string>();
  if (s == "nan") return std::nan("");
  if (s == "inf") return INFINITY;
  if (s == "-inf") return -INFINITY;
  throw std::runtime_error("not a number: " + s);
}

void expect_same_double(double a, double b) {
  if (std::isnan(a)) {
    EXPECT_TRUE(std::isnan(b));
  } else {
    EXPECT_EQ(a, b);
  }
}

// ---- results.jsonl ----------------------------------------------------------------------------

TEST(ReportsJsonl, EveryLineParsesAndRoundTripsTheRecord) {
  RunSummary run = testing::tricky_run();
  std::string text = render_jsonl(run);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  auto ls = lines(text);
  ASSERT_EQ(ls.size(), run.records.size());
  for (std::size_t i = 0; i < ls.size(); ++i) {
    SCOPED_TRACE(ls[i]);
    json j = json::parse(ls[i]);  // throws on a malformed line
    const CaseRecord& r = run.records[i];
    EXPECT_EQ(j.at("case_id"), r.case_id);
    EXPECT_EQ(j.at("backend"), r.backend);
    EXPECT_EQ(j.at("device"), r.device);
    EXPECT_EQ(j.at("simd_target"), r.simd_target);
    EXPECT_EQ(j.at("threads"), r.threads);
    EXPECT_EQ(j.at("status"), status_name(r.status));
    EXPECT_EQ(j.at("message"), r.message);
    expect_same_double(json_double(j.at("max_abs_error")), r.max_abs_error);
    expect_same_double(json_double(j.at("nmse")), r.nmse);
    expect_same_double(json_double(j.at("worst_ratio")), r.worst_ratio);
    EXPECT_EQ(j.at("worst_where"), r.worst_where);
    expect_same_double(json_double(j.at("seconds")), r.seconds);
    EXPECT_EQ(j.at("features").get<std::vector<std::string>>(), r.features);
    EXPECT_EQ(j.at("repro"), r.repro);
    EXPECT_EQ(j.at("expected"), r.expected);
    EXPECT_EQ(j.size(), 15u) << "a field was added or removed: update docs/REPORTS.md";
    // The codec reads its own line back (the runner's workers send records this way).
    const CaseRecord back = record_from_json(j);
    EXPECT_EQ(back.case_id, r.case_id);
    EXPECT_EQ(back.backend, r.backend);
    EXPECT_EQ(back.status, r.status);
    EXPECT_EQ(back.message, reports::valid_utf8(r.message));
    EXPECT_EQ(back.expected, r.expected);
    EXPECT_EQ(back.features, r.features);
    EXPECT_EQ(back.repro, r.repro);
    expect_same_double(back.worst_ratio, r.worst_ratio);
  }
  // The known-failure records: an XFAIL and a listed case that passed.
  json xfail = json::parse(ls[11]);
  EXPECT_EQ(xfail.at("status"), "XFAIL");
  EXPECT_EQ(xfail.at("expected"), "causal corner & \"BR\" <lower-right> #12");
  EXPECT_EQ(json::parse(ls[12]).at("status"), "PASS");
  EXPECT_EQ(json::parse(ls[12]).at("expected"), run.records[12].expected);
  EXPECT_EQ(json::parse(ls[0]).at("expected"), "");  // written always, "" when none
}

TEST(ReportsJsonl, NonFiniteNumbersAreStrings) {
  RunSummary run = testing::tricky_run();
  auto ls = lines(render_jsonl(run));
  json nan_line = json::parse(ls[9]);
  EXPECT_EQ(nan_line.at("worst_ratio"), "nan");
  EXPECT_EQ(nan_line.at("max_abs_error"), "inf");
}

TEST(ReportsJsonl, InvalidUtf8BecomesReplacementCharacter) {
  CaseRecord r;
  r.message = "bad \xFF\xFE byte and a cut \xE4\xB8";
  json j = json::parse(jsonl_line(r));
  EXPECT_EQ(j.at("message"), "bad \xEF\xBF\xBD\xEF\xBF\xBD byte and a cut \xEF\xBF\xBD");
}

TEST(ReportsJsonl, ZeroAndManyRecords) {
  EXPECT_EQ(render_jsonl(RunSummary{}), "");
  RunSummary run = testing::realistic_run(5000);
  auto ls = lines(render_jsonl(run));
  ASSERT_EQ(ls.size(), 5000u);
  for (std::size_t i = 0; i < ls.size(); i += 97) {
    EXPECT_EQ(json::parse(ls[i]).at("case_id"), run.records[i].case_id);
  }
}

// ---- summary.json ------------------------------------------------------------------------------

TEST(ReportsSummaryJson, CountsMatchTheRecords) {
  RunSummary run = testing::tricky_run();
  json j = json::parse(render_summary_json(run));
  EXPECT_EQ(j.at("schema"), "sdpa-cts.summary");
  EXPECT_EQ(j.at("schema_version"), 1);
  EXPECT_EQ(j.at("tool_version"), run.tool_version);
  EXPECT_EQ(j.at("tolerance_version"), run.tolerance_version);
  EXPECT_EQ(j.at("tier"), run.tier);
  EXPECT_EQ(j.at("device"), run.device);
  EXPECT_EQ(j.at("seed").get<std::uint64_t>(), run.seed);
  EXPECT_EQ(j.at("started_at"), run.started_at);
  EXPECT_EQ(j.at("seconds"), run.seconds);
  EXPECT_EQ(j.at("cases"), run.records.size());
  EXPECT_DOUBLE_EQ(j.at("cases_per_second").get<double>(), run.records.size() / run.seconds);
  EXPECT_DOUBLE_EQ(j.at("case_seconds").get<double>(), 0.0125 * run.records.size());
  EXPECT_EQ(j.at("ok"), false);

  // Independent tally: every status name present, counted here from the records.
  for (Status s : kAllStatuses) {
    const auto n = std::count_if(run.records.begin(), run.records.end(),
                                 [&](const CaseRecord& r) { return r.status == s; });
    EXPECT_EQ(j.at("counts").at(status_name(s)), n) << status_name(s);
  }
  EXPECT_EQ(j.at("counts").at("total"), run.records.size());
  EXPECT_EQ(j.at("counts").at("FAIL"), 2);
  EXPECT_EQ(j.at("summary_line"),
            "passed: 4 failed: 2 not_supported: 1 invalid: 1 mistrusted: 1 crash: 1 timeout: 1 "
            "quality_warning: 1 expected_failure: 1 not_judged: 0");
  EXPECT_EQ(j.at("counts").at("XFAIL"), 1);
  EXPECT_EQ(j.at("backends").at("cpu.flash").at("XFAIL"), 1);

  // Per backend x status.
  std::map<std::string, std::map<std::string, std::int64_t>> expect;
  for (const auto& r : run.records) {
    ++expect[r.backend][status_name(r.status)];
    ++expect[r.backend]["total"];
  }
  ASSERT_EQ(j.at("backends").size(), expect.size());
  for (const auto& [backend, counts] : expect) {
    const json& b = j.at("backends").at(backend);
    EXPECT_EQ(b.size(), 1 + kAllStatuses.size());  // total + every status
    for (const auto& [key, value] : b.items()) {
      auto it = counts.find(key);
      EXPECT_EQ(value.get<std::int64_t>(), it == counts.end() ? 0 : it->second)
          << backend << " " << key;
    }
  }
}

TEST(ReportsSummaryJson, WorstCasesHistogramAndFailures) {
  RunSummary run = testing::tricky_run();
  json j = json::parse(render_summary_json(run));
  const json& worst = j.at("worst_cases");
  ASSERT_EQ(worst.size(), 5u);  // ratio > 0 among PASS / QUALITY_WARNING / FAIL
  EXPECT_EQ(worst[0].at("worst_ratio"), "nan");
  EXPECT_EQ(worst[0].at("max_abs_error"), "inf");
  EXPECT_EQ(worst[1].at("worst_ratio"), 35.0);
  EXPECT_EQ(worst[1].at("repro"), run.records[2].repro);
  EXPECT_EQ(worst[2].at("worst_ratio"), 1.0);
  EXPECT_EQ(worst[3].at("worst_ratio"), 0.8);
  EXPECT_EQ(worst[3].at("status"), "QUALITY_WARNING");
  EXPECT_EQ(worst[4].at("worst_ratio"), 0.003);

  const json& h = j.at("err_tol_histogram");
  EXPECT_EQ(h.at("bins").size(), reports::kRatioBins);
  // cpu.flash: FAIL 35 and FAIL NaN -> ">1", QUALITY_WARNING 0.8 -> "0.1..1"; MISTRUSTED not
  // counted.
  EXPECT_EQ(h.at("backends").at("cpu.flash"), json::parse("[0,0,0,0,0,1,2]"));
  // cpu.math: PASS 0 (twice) and PASS 0.003; the XFAIL's ratio (40) is not a measurement.
  EXPECT_EQ(h.at("backends").at("cpu.math"), json::parse("[2,0,0,1,0,0,0]"));
  EXPECT_FALSE(h.at("backends").contains("cuda.flash"));  // nothing measured

  const json& f = j.at("failures");
  ASSERT_EQ(f.size(), 4u);  // FAIL, CRASH, TIMEOUT, FAIL, in run order
  EXPECT_EQ(f[0].at("status"), "FAIL");
  EXPECT_EQ(f[1].at("status"), "CRASH");
  EXPECT_EQ(f[1].at("message"), run.records[6].message);
  EXPECT_EQ(f[2].at("status"), "TIMEOUT");
}

TEST(ReportsSummaryJson, KnownFailuresAndUnexpectedlyPassing) {
  RunSummary run = testing::tricky_run();
  json j = json::parse(render_summary_json(run));
  const auto ordered = nlohmann::ordered_json::parse(render_summary_json(run));
  std::vector<std::string> keys;  // in the file's order
  for (const auto& [key, value] : ordered.items()) keys.push_back(key);
  ASSERT_GE(keys.size(), 2u);
  EXPECT_EQ(keys[keys.size() - 2], "expected_failures");
  EXPECT_EQ(keys.back(), "unexpectedly_passing");

  const json& x = j.at("expected_failures");
  ASSERT_EQ(x.size(), 1u);
  EXPECT_EQ(x[0].at("case_id"), run.records[11].case_id);
  EXPECT_EQ(x[0].at("backend"), "cpu.flash");
  EXPECT_EQ(x[0].at("expected"), run.records[11].expected);
  EXPECT_EQ(x[0].at("message"), run.records[11].message);
  EXPECT_EQ(x[0].at("repro"), run.records[11].repro);
  EXPECT_EQ(j.at("failures").size(), 4u) << "an XFAIL is not a failure";
  EXPECT_EQ(j.at("ok"), false);  // the real failures still fail it

  const json& p = j.at("unexpectedly_passing");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0], json::parse(R"({"case_id": "b1.hq2.hkv2.l4.s4.dqk8.dv8.f32.seed13.gen=normal",
                                  "backend": "cpu.math",
                                  "expected": "listed <by> mistake `x` https://example.org/issues/7"})"));

  // Only failures that are listed: the run is ok.
  std::erase_if(run.records, [](const CaseRecord& r) { return is_failure(r.status); });
  j = json::parse(render_summary_json(run));
  EXPECT_EQ(j.at("ok"), true);
  EXPECT_EQ(j.at("expected_failures").size(), 1u);

  json empty = json::parse(render_summary_json(RunSummary{}));
  EXPECT_TRUE(empty.at("expected_failures").empty());
  EXPECT_TRUE(empty.at("unexpectedly_passing").empty());
}

TEST(ReportsSummaryJson, EmptyRunAndAllPassing) {
  json j = json::parse(render_summary_json(RunSummary{}));
  EXPECT_EQ(j.at("cases"), 0);
  EXPECT_EQ(j.at("cases_per_second"), 0.0);
  EXPECT_EQ(j.at("ok"), true);
  EXPECT_TRUE(j.at("worst_cases").empty());
  EXPECT_TRUE(j.at("backends").empty());

  RunSummary run = testing::tricky_run();
  std::erase_if(run.records, [](const CaseRecord& r) { return is_failure(r.status); });
  EXPECT_EQ(json::parse(render_summary_json(run)).at("ok"), true);
}

TEST(ReportsSummaryJson, ManyRecords) {
  RunSummary run = testing::realistic_run(20000);
  json j = json::parse(render_summary_json(run));
  EXPECT_EQ(j.at("cases"), 20000);
  std::int64_t sum = 0;
  for (const auto& [status, n] : j.at("counts").items()) {
    if (status != "total") sum += n.get<std::int64_t>();
  }
  EXPECT_EQ(sum, 20000);
  EXPECT_EQ(j.at("worst_cases").size(), 10u);
  EXPECT_LE(j.at("failures").size(), 100u);
}

// ---- junit.xml ---------------------------------------------------------------------------------

TEST(ReportsJunit, WellFormedWithOneTestcasePerRecord) {
  RunSummary run = testing::tricky_run();
  std::string xml = render_junit_xml(run);
  XmlNode root = XmlReader::parse(xml);
  ASSERT_EQ(root.name, "testsuites");
  EXPECT_EQ(root.attr("tests"), std::to_string(run.records.size()));
  EXPECT_EQ(root.attr("failures"), "4");
  EXPECT_EQ(root.attr("errors"), "0");
  EXPECT_EQ(root.attr("time"), "2.500");

  auto suites = root.find_all("testsuite");
  std::set<std::string> backends;
  for (const auto& r : run.records) backends.insert(r.backend);
  ASSERT_EQ(suites.size(), backends.size());

  auto cases = root.find_all("testcase");
  ASSERT_EQ(cases.size(), run.records.size());
  EXPECT_EQ(root.find_all("failure").size(), 4u);
  EXPECT_EQ(root.find_all("skipped").size(), 4u);  // NOT_SUPPORTED, INVALID, MISTRUSTED, XFAIL
  EXPECT_EQ(root.find_all("error").size(), 0u);

  // Each suite's counters agree with its children, and its cases carry its name as classname.
  for (const XmlNode* s : suites) {
    SCOPED_TRACE(s->attr("name"));
    EXPECT_TRUE(backends.count(s->attr("name")));
    auto sc = s->find_all("testcase");
    EXPECT_EQ(s->attr("tests"), std::to_string(sc.size()));
    EXPECT_EQ(s->attr("failures"), std::to_string(s->find_all("failure").size()));
    EXPECT_EQ(s->attr("skipped"), std::to_string(s->find_all("skipped").size()));
    EXPECT_EQ(s->attr("errors"), "0");
    EXPECT_EQ(s->attr("timestamp"), "2024-05-01T12:34:56");
    ASSERT_NE(s->child("properties"), nullptr);
    for (const XmlNode* c : sc) EXPECT_EQ(c->attr("classname"), s->attr("name"));
  }

  // Names, messages and statuses survive escaping, decoded by the parser.
  std::map<std::pair<std::string, std::string>, const XmlNode*> by_key;
  for (const XmlNode* c : cases) by_key[{c->attr("classname"), c->attr("name")}] = c;
  ASSERT_EQ(by_key.size(), run.records.size()) << "duplicate testcase names";
  for (const auto& r : run.records) {
    SCOPED_TRACE(r.case_id);
    const XmlNode* c = by_key.at({r.backend, r.case_id});
    if (is_failure(r.status)) {
      const XmlNode* f = c->child("failure");
      ASSERT_NE(f, nullptr);
      EXPECT_EQ(f->attr("type"), status_name(r.status));
      std::string msg = reports::valid_utf8(r.message);
      if (r.status != Status::crash) {  // the others hold no control characters
        EXPECT_EQ(f->attr("message"), msg);
      }
      EXPECT_NE(f->text.find("repro: " + r.repro), std::string::npos);
    } else if (r.status == Status::not_supported || r.status == Status::invalid ||
               r.status == Status::mistrusted || r.status == Status::expected_failure) {
      const XmlNode* sk = c->child("skipped");
      ASSERT_NE(sk, nullptr);
      EXPECT_EQ(sk->attr("message"), std::string(status_name(r.status)) + ": " + r.message);
    } else {
      EXPECT_EQ(c->child("failure"), nullptr);
      EXPECT_EQ(c->child("skipped"), nullptr);
    }
  }
  // The crash message: CR kept as a reference, the control characters XML cannot hold replaced.
  const XmlNode* crash = by_key.at({"cpu.mem_efficient", run.records[6].case_id});
  EXPECT_EQ(crash->child("failure")->attr("message"),
            "SIGSEGV in kernel\r\n<script>alert(1)</script>\xEF\xBF\xBD\xEF\xBF\xBD");
  // QUALITY_WARNING passes but says why in system-out.
  const XmlNode* qw = by_key.at({"cpu.flash", run.records[8].case_id});
  ASSERT_NE(qw->child("system-out"), nullptr);
  EXPECT_NE(qw->child("system-out")->text.find("QUALITY_WARNING: error 3x"), std::string::npos);
  // An XFAIL is skipped, never a failure, with the original status and the reason.
  const XmlNode* xf = by_key.at({"cpu.flash", run.records[11].case_id});
  EXPECT_EQ(xf->child("failure"), nullptr);
  ASSERT_NE(xf->child("skipped"), nullptr);
  EXPECT_EQ(xf->child("skipped")->attr("message").rfind("XFAIL: expected failure (FAIL, ", 0), 0u);
  EXPECT_NE(xf->child("skipped")->attr("message").find("<lower-right> #12"), std::string::npos);
  ASSERT_NE(xf->child("system-out"), nullptr);
  EXPECT_NE(xf->child("system-out")->text.find("repro: " + run.records[11].repro),
            std::string::npos);
  // The cpu.flash suite counts it as skipped, not as a failure.
  for (const XmlNode* s : suites) {
    if (s->attr("name") == "cpu.flash") {
      EXPECT_EQ(s->attr("failures"), "2");
      EXPECT_EQ(s->attr("skipped"), "2");  // MISTRUSTED, XFAIL
    }
  }
  // A listed case that passed: a passing testcase that says so.
  const XmlNode* up = by_key.at({"cpu.math", run.records[12].case_id});
  EXPECT_EQ(up->child("failure"), nullptr);
  EXPECT_EQ(up->child("skipped"), nullptr);
  ASSERT_NE(up->child("system-out"), nullptr);
  EXPECT_NE(up->child("system-out")
                ->text.find("unexpectedly passing: listed as a known failure (" +
                            run.records[12].expected + ")"),
            std::string::npos);
  // A plain PASS stays an empty testcase.
  EXPECT_TRUE(by_key.at({"cpu.math", run.records[0].case_id})->children.empty());
}

TEST(ReportsJunit, ForcedTargetsAndThreadsGiveDistinctNames) {
  RunSummary run;
  for (const char* simd : {"", "avx2", "scalar"}) {
    for (int threads : {0, 1, 4}) {
      CaseRecord r;
      r.case_id = "b1.hq1.hkv1.l2.s2.dqk4.dv4.f32.seed1.gen=normal";
      r.backend = "cpu.math";
      r.simd_target = simd;
      r.threads = threads;
      run.records.push_back(r);
    }
  }
  XmlNode root = XmlReader::parse(render_junit_xml(run));
  std::set<std::string> names;
  for (const XmlNode* c : root.find_all("testcase")) names.insert(c->attr("name"));
  EXPECT_EQ(names.size(), 9u);
  EXPECT_TRUE(names.count("b1.hq1.hkv1.l2.s2.dqk4.dv4.f32.seed1.gen=normal"));
  EXPECT_TRUE(names.count("b1.hq1.hkv1.l2.s2.dqk4.dv4.f32.seed1.gen=normal [simd=avx2 threads=4]"));
}

TEST(ReportsJunit, EmptyAndManyRecords) {
  XmlNode empty = XmlReader::parse(render_junit_xml(RunSummary{}));
  EXPECT_EQ(empty.attr("tests"), "0");
  EXPECT_TRUE(empty.children.empty());

  RunSummary run = testing::realistic_run(5000);
  XmlNode root = XmlReader::parse(render_junit_xml(run));
  EXPECT_EQ(root.find_all("testcase").size(), 5000u);
  EXPECT_EQ(root.find_all("failure").size(),
            static_cast<std::size_t>(count_if_status(run, {Status::fail})));
  EXPECT_GT(count_if_status(run, {Status::expected_failure}), 0);
  EXPECT_EQ(root.find_all("skipped").size(),
            static_cast<std::size_t>(
                count_if_status(run, {Status::not_supported, Status::expected_failure})));
}

TEST(ReportsJunit, TimesAreSchemaDecimals) {
  RunSummary run = testing::tricky_run();
  run.seconds = std::nan("");
  run.records[0].seconds = -1;
  run.records[1].seconds = 1e-9;
  run.records[2].seconds = INFINITY;
  run.started_at = "yesterday";
  XmlNode root = XmlReader::parse(render_junit_xml(run));
  EXPECT_EQ(root.attr("time"), "0.000");
  for (const XmlNode* c : root.find_all("testcase")) {
    std::string t = c->attr("time");
    EXPECT_EQ(t.find_first_not_of("0123456789."), std::string::npos) << t;
  }
  for (const XmlNode* s : root.find_all("testsuite")) EXPECT_EQ(s->attrs.count("timestamp"), 0u);
}

// ---- summary.md --------------------------------------------------------------------------------

TEST(ReportsMarkdown, StatusTableFailuresAndRepros) {
  RunSummary run = testing::tricky_run();
  std::string md = render_markdown(run);
  EXPECT_EQ(md.rfind("## sdpa-cts conformance: \xE2\x9D\x8C failed\n", 0), 0u);
  EXPECT_NE(md.find("`passed: 4 failed: 2 not_supported: 1"), std::string::npos);
  EXPECT_NE(md.find("| backend | PASS | FAIL | NOT_SUPPORTED | INVALID | MISTRUSTED | CRASH | "
                    "TIMEOUT | QUALITY_WARNING | XFAIL | total |"),
            std::string::npos);
  EXPECT_NE(md.find("| `cpu.flash` | 0 | **2** | 0 | 0 | 1 | 0 | 0 | 1 | 1 | 5 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| **all** | 4 | **2** |"), std::string::npos);
  EXPECT_NE(md.find("### Failures (4)"), std::string::npos);
  for (const auto& r : run.records) {
    if (is_failure(r.status)) {
      EXPECT_NE(md.find("```sh\n" + r.repro + "\n```"), std::string::npos) << r.repro;
    }
  }
  // The TIMEOUT message holds ``` itself: its block needs a longer fence.
  EXPECT_NE(md.find("````text\ntimed out after 30 s ]]> --> <!-- ``` `code` |pipe|\n````"),
            std::string::npos);
  // CR LF becomes LF, control characters become U+FFFD.
  EXPECT_NE(
      md.find("```text\nSIGSEGV in kernel\n<script>alert(1)</script>\xEF\xBF\xBD\xEF\xBF\xBD\n```"),
      std::string::npos);
  // Data outside code blocks is escaped: the odd backend name in the table.
  EXPECT_NE(md.find("| `vendor<x>&\"y\"` | 1 |"), std::string::npos);
  EXPECT_NE(md.find("### Warnings (3)"), std::string::npos);
  EXPECT_NE(md.find("### Closest to the bound"), std::string::npos);
  // Known failures: the count, each with its reason (escaped), and the unexpectedly passing.
  EXPECT_NE(md.find("### Known failures (1 XFAIL)\n\n- `cpu.flash` `" + run.records[11].case_id +
                    "`: causal corner \\& \"BR\" \\<lower-right\\> \\#12\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("### Unexpectedly passing (1)"), std::string::npos);
  EXPECT_NE(md.find("- `cpu.math` `" + run.records[12].case_id +
                    "`: listed \\<by\\> mistake \\`x\\` https://example.org/issues/7\n"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("**XFAIL**"), std::string::npos) << "an XFAIL is not listed as a failure";
}

TEST(ReportsMarkdown, KnownFailuresAreCapped) {
  RunSummary run = testing::realistic_run(4000);
  std::int64_t xfail = count_if_status(run, {Status::expected_failure});
  ASSERT_GT(xfail, 10);
  std::string md = render_markdown(run);
  EXPECT_NE(md.find("### Known failures (" + std::to_string(xfail) + " XFAIL)"), std::string::npos);
  EXPECT_NE(md.find("- ... and " + std::to_string(xfail - 10) + " more in `results.jsonl`"),
            std::string::npos)
      << md;
  EXPECT_LE(md.size(), MarkdownLimits{}.max_bytes);
}

TEST(ReportsMarkdown, PassingAndEmptyRuns) {
  RunSummary run = testing::tricky_run();
  std::erase_if(run.records, [](const CaseRecord& r) { return is_failure(r.status); });
  std::string md = render_markdown(run);
  EXPECT_NE(md.find("passed\n"), std::string::npos);
  EXPECT_EQ(md.find("### Failures"), std::string::npos);
  std::string empty = render_markdown(RunSummary{});
  EXPECT_NE(empty.find("No cases ran."), std::string::npos);
}

TEST(ReportsMarkdown, CappedAtAReadableLength) {
  RunSummary run = testing::realistic_run(2000);
  for (auto& r : run.records) {
    r.status = Status::fail;
    r.message = std::string(5000, 'x');
  }
  MarkdownLimits limits;
  std::string md = render_markdown(run, limits);
  EXPECT_LE(md.size(), limits.max_bytes);
  EXPECT_NE(md.find("1980 more failures not shown"), std::string::npos);
  EXPECT_EQ(md.find(std::string(limits.max_message_bytes + 1, 'x')), std::string::npos);

  limits.max_bytes = 8000;  // the byte budget binds before the count
  md = render_markdown(run, limits);
  EXPECT_LE(md.size(), limits.max_bytes);
  EXPECT_NE(md.find("more failures not shown"), std::string::npos);
}

TEST(ReportsMarkdown, Helpers) {
  EXPECT_EQ(reports::md_code("a`b"), "``a`b``");
  EXPECT_EQ(reports::md_code("`x`"), "`` `x` ``");
  EXPECT_EQ(reports::md_code("a|b\nc", true), "`a\\|b c`");
  EXPECT_EQ(reports::md_code(""), "` `");
  EXPECT_EQ(reports::clean_text("a\r\nb\rc\x01\td\xFF"), "a\nb\nc\xEF\xBF\xBD\td\xEF\xBF\xBD");
  EXPECT_EQ(reports::md_code_block("x ```` y", "sh"), "`````sh\nx ```` y\n`````\n");
  EXPECT_EQ(reports::md_text("<b>*x*</b> & [l](u)|\n"),
            "\\<b\\>\\*x\\*\\</b\\> \\& \\[l\\](u)\\| ");
}

// ---- report.html -------------------------------------------------------------------------------

// Every element and attribute name the page may use: anything else came from the data.
const std::set<std::string> kHtmlElements = {
    "html", "head", "meta",  "title",  "style",      "body", "h1",    "h2",  "p",
    "code", "span", "table", "tr",     "th",         "td",   "pre",   "div", "svg",
    "rect", "line", "text",  "figure", "figcaption", "b",    "footer"};
const std::set<std::string> kHtmlAttributes = {"lang",
                                               "charset",
                                               "name",
                                               "content",
                                               "class",
                                               "title",
                                               "xmlns",
                                               "width",
                                               "height",
                                               "viewBox",
                                               "aria-hidden",
                                               "role",
                                               "aria-label",
                                               "font-family",
                                               "x",
                                               "y",
                                               "fill",
                                               "x1",
                                               "y1",
                                               "x2",
                                               "y2",
                                               "stroke",
                                               "stroke-dasharray",
                                               "font-size",
                                               "text-anchor"};

void expect_only_known_markup(const XmlNode& n) {
  EXPECT_TRUE(kHtmlElements.count(n.name)) << "unexpected element <" << n.name << ">";
  for (const auto& [a, v] : n.attrs) {
    EXPECT_TRUE(kHtmlAttributes.count(a)) << "unexpected attribute " << a << " on " << n.name;
  }
  for (const auto& c : n.children) expect_only_known_markup(c);
}

std::string all_text(const XmlNode& n) {
  std::string s = n.text;
  for (const auto& c : n.children) s += all_text(c);
  return s;
}

TEST(ReportsHtml, WellFormedSelfContainedAndEscaped) {
  RunSummary run = testing::tricky_run();
  std::string html = render_html(run);
  ASSERT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  XmlNode root = XmlReader::parse(html);  // polyglot: also well-formed XML
  EXPECT_EQ(root.name, "html");
  expect_only_known_markup(root);
  // No external resources, no scripts.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  // Data came through escaped and reads back intact.
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("<code>vendor&lt;x&gt;&amp;&quot;y&quot;</code>"), std::string::npos);
  std::string text = all_text(root);
  EXPECT_NE(text.find(run.records[2].message), std::string::npos);
  EXPECT_NE(text.find("\xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x9A\x80"), std::string::npos);
  EXPECT_NE(text.find("dtype f64 not supported; needs sm80 <= arch & f16"), std::string::npos);
}

TEST(ReportsHtml, MatrixHistogramsAndWorstCases) {
  RunSummary run = testing::tricky_run();
  XmlNode root = XmlReader::parse(render_html(run));
  // The matrix: a header row with every backend, a row per feature (plus "all").
  const XmlNode* matrix = nullptr;
  for (const XmlNode* t : root.find_all("table")) {
    if (t->attrs.count("class") && t->attr("class") == "matrix") matrix = t;
  }
  ASSERT_NE(matrix, nullptr);
  auto rows = matrix->find_all("tr");
  auto cols = reports::feature_columns(run);
  ASSERT_EQ(rows.size(), cols.size() + 1);
  std::set<std::string> backends;
  for (const auto& r : run.records) backends.insert(r.backend);
  EXPECT_EQ(rows[0]->find_all("th").size(), backends.size() + 1);
  EXPECT_EQ(all_text(*rows[1]->child("th")), "all");
  // cpu.flash column of "all": 0 pass... pass counts QUALITY_WARNING, so 1 / 2 / 0 / 1.
  std::vector<std::string> all_row;
  for (const XmlNode* td : rows[1]->find_all("td")) all_row.push_back(all_text(*td));
  // Backends sorted: cpu.flash, cpu.math, cpu.mem_efficient, cuda.flash, vendor<x>&"y".
  ASSERT_EQ(all_row.size(), 5u);
  EXPECT_EQ(all_row[0], "1 / 2 / 0 / 1 (1 XFAIL)");  // an XFAIL is never a pass
  EXPECT_EQ(all_row[1], "3 / 0 / 0 / 1");
  EXPECT_EQ(all_row[2], "0 / 2 / 0");
  EXPECT_EQ(all_row[3], "0 / 0 / 1");
  EXPECT_EQ(all_row[4], "1 / 0 / 0");
  // Odd feature tag, escaped.
  EXPECT_NE(all_text(root).find("mask=<add>&\"x\""), std::string::npos);

  // One histogram per backend with measured cases, one bar per bin.
  auto figures = root.find_all("figure");
  EXPECT_EQ(figures.size(), 3u);  // cpu.flash, cpu.math, vendor
  for (const XmlNode* f : figures) {
    ASSERT_NE(f->child("svg"), nullptr);
    EXPECT_EQ(f->child("svg")->find_all("rect").size(), reports::kRatioBins);
  }
  // Worst cases: ">1" (NaN) ranks first.
  EXPECT_NE(all_text(root).find("Worst cases"), std::string::npos);
  bool found_nan_first = false;
  for (const XmlNode* t : root.find_all("table")) {
    auto trs = t->find_all("tr");
    if (trs.size() > 1 && all_text(*trs[0]).find("max abs error") != std::string::npos) {
      auto tds = trs[1]->find_all("td");
      found_nan_first = all_text(*tds[1]) == "nan" && all_text(*tds[5]) == "lse[0,0,3]";
      EXPECT_EQ(trs.size(), 6u);
    }
  }
  EXPECT_TRUE(found_nan_first);
}

TEST(ReportsHtml, KnownFailuresAndUnexpectedlyPassing) {
  RunSummary run = testing::tricky_run();
  std::string html = render_html(run);
  XmlNode root = XmlReader::parse(html);
  expect_only_known_markup(root);
  std::string text = all_text(root);
  EXPECT_NE(text.find("Known failures (1 XFAIL)"), std::string::npos);
  EXPECT_NE(text.find("Listed in the expectations file ci/known <failures>.txt"),
            std::string::npos);
  EXPECT_NE(text.find("Unexpectedly passing (1)"), std::string::npos);
  EXPECT_NE(text.find(run.records[11].expected), std::string::npos);
  EXPECT_NE(text.find(run.records[12].expected), std::string::npos);
  EXPECT_NE(text.find("Failures (4)"), std::string::npos) << "an XFAIL is not a failure";
  EXPECT_NE(text.find("Warnings, invalid, mistrusted and not judged cases (3)"), std::string::npos);
  // XFAIL has a colour of its own: in the status table, the legend and the matrix.
  EXPECT_NE(html.find(".status.XFAIL {"), std::string::npos);
  EXPECT_NE(html.find("<span class=\"status XFAIL\">XFAIL</span>"), std::string::npos);
  EXPECT_NE(html.find("<span class=\"sw xfail\"></span>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"has-xfail\""), std::string::npos);
  EXPECT_NE(html.find("fill=\"#8250df\""), std::string::npos);
}

TEST(ReportsHtml, EmptyAndManyRecords) {
  XmlNode empty = XmlReader::parse(render_html(RunSummary{}));
  std::string text = all_text(empty);
  // Statuses and matrix say so, as do the histograms, worst cases and failures.
  std::size_t n = 0;
  for (std::size_t at = text.find("No cases ran."); at != std::string::npos;
       at = text.find("No cases ran.", at + 1)) {
    ++n;
  }
  EXPECT_EQ(n, 2u);
  EXPECT_NE(text.find("No measured cases."), std::string::npos);
  EXPECT_NE(text.find("No measured case with an error."), std::string::npos);
  EXPECT_NE(text.find("Failures (0)None."), std::string::npos);

  // 20000 failures with long messages: the tables are capped, the page stays light.
  RunSummary run = testing::realistic_run(20000);
  for (auto& r : run.records) {
    r.status = Status::fail;
    r.message = std::string(300, 'm');
  }
  std::string html = render_html(run);
  XmlNode root = XmlReader::parse(html);
  expect_only_known_markup(root);
  EXPECT_LT(html.size(), 2u << 20) << "the page should stay light whatever the run size";
  EXPECT_NE(all_text(root).find("19500 more not shown: see results.jsonl."), std::string::npos);
}

// ---- helpers -----------------------------------------------------------------------------------

// NOT_JUDGED (the harness could not judge a case here) is in every report, and never a failure:
// the run is ok, JUnit skips it with its reason, the summaries list it with the warnings.
TEST(ReportsNotJudged, ListedEverywhereAndNeverAFailure) {
  RunSummary run;
  run.tier = "custom";
  CaseRecord pass;
  pass.backend = "cpu.math";
  pass.case_id = "b1.hq1.hkv1.l4.s4.dqk8.dv8.f32.seed0.gen=normal";
  pass.status = Status::pass;
  CaseRecord big = pass;
  big.case_id = "b1.hq1.hkv1.l99999999999.s1.dqk8.dv8.f32.seed0.gen=normal";
  big.status = Status::not_judged;
  big.message = "not run: the case needs 59.8 TiB of host memory";
  run.records = {pass, big};

  const json j = json::parse(render_summary_json(run));
  EXPECT_EQ(j.at("counts").at("NOT_JUDGED"), 1);
  EXPECT_EQ(j.at("backends").at("cpu.math").at("NOT_JUDGED"), 1);
  EXPECT_EQ(j.at("ok"), true);
  EXPECT_NE(j.at("summary_line").get<std::string>().find(" not_judged: 1"), std::string::npos);

  const XmlNode root = XmlReader::parse(render_junit_xml(run));
  EXPECT_EQ(root.attr("failures"), "0");
  ASSERT_EQ(root.find_all("skipped").size(), 1u);
  EXPECT_EQ(root.find_all("skipped")[0]->attr("message"), "NOT_JUDGED: " + big.message);
  EXPECT_EQ(root.find_all("testsuite")[0]->attr("skipped"), "1");

  const std::string md = render_markdown(run);
  EXPECT_NE(md.find("| backend | PASS | FAIL | NOT_JUDGED | total |"), std::string::npos) << md;
  EXPECT_NE(md.find("### Warnings (1)"), std::string::npos) << md;
  EXPECT_NE(md.find("**NOT_JUDGED** `cpu.math`"), std::string::npos) << md;

  const std::string text = all_text(XmlReader::parse(render_html(run)));
  EXPECT_NE(text.find("Warnings, invalid, mistrusted and not judged cases (1)"), std::string::npos);
  EXPECT_NE(text.find(big.message), std::string::npos);
}

// A result is one (case, backend, SIMD target) verdict: the headers count results, distinct
// cases and backends, and name the targets, never calling results "cases".
TEST(ReportsHeaders, ResultsCasesBackendsAndTargets) {
  RunSummary run;
  run.seconds = 2;
  for (const char* id : {"b1.hq1.hkv1.l2.s2.dqk4.dv4.f32.seed1.gen=normal",
                         "b1.hq1.hkv1.l3.s3.dqk4.dv4.f32.seed1.gen=normal"})
    for (const char* backend : {"cpu.math", "cpu.flash"})
      for (const char* simd : {"", "avx2", "scalar"}) {
        CaseRecord r;
        r.case_id = id;
        r.backend = backend;
        r.simd_target = simd;
        run.records.push_back(r);
      }
  const RunCoverage c = run_coverage(run);
  EXPECT_EQ(c.results, 12u);
  EXPECT_EQ(c.cases, 2u);
  EXPECT_EQ(c.backends, 2u);
  EXPECT_EQ(c.simd_targets, (std::vector<std::string>{"avx2", "best", "scalar"}));
  const std::string md = render_markdown(run);
  EXPECT_NE(md.find("12 results (2 cases, 2 backends; SIMD targets: avx2, best, scalar) in 2 s "
                    "(6 results/s)"),
            std::string::npos)
      << md;
  const std::string html = render_html(run);
  for (const char* row :
       {"<tr><th>results</th><td>12</td></tr>", "<tr><th>cases</th><td>2</td></tr>",
        "<tr><th>backends</th><td>2</td></tr>",
        "<tr><th>SIMD targets</th><td>avx2, best, scalar</td></tr>",
        "<tr><th>results per second</th><td>6</td></tr>"}) {
    EXPECT_NE(html.find(row), std::string::npos) << row;
  }
  EXPECT_EQ(html.find("cases per second"), std::string::npos);
}

TEST(ReportsUtil, RatioBins) {
  EXPECT_EQ(reports::ratio_bin(0), 0u);
  EXPECT_EQ(reports::ratio_bin(-1), 0u);
  EXPECT_EQ(reports::ratio_bin(1e-300), 1u);
  EXPECT_EQ(reports::ratio_bin(9.99e-5), 1u);
  EXPECT_EQ(reports::ratio_bin(1e-4), 2u);
  EXPECT_EQ(reports::ratio_bin(1e-3), 3u);
  EXPECT_EQ(reports::ratio_bin(1e-2), 4u);
  EXPECT_EQ(reports::ratio_bin(0.1), 5u);
  EXPECT_EQ(reports::ratio_bin(1.0), 5u);  // a ratio of 1 passes
  EXPECT_EQ(reports::ratio_bin(1.0000001), 6u);
  EXPECT_EQ(reports::ratio_bin(INFINITY), 6u);
  EXPECT_EQ(reports::ratio_bin(std::nan("")), 6u);
}

TEST(ReportsUtil, Escaping) {
  EXPECT_EQ(reports::markup_escape("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
  EXPECT_EQ(reports::markup_escape("a\tb\nc\rd", false), "a\tb\nc&#13;d");
  EXPECT_EQ(reports::markup_escape("a\tb\nc\rd", true), "a&#9;b&#10;c&#13;d");
  EXPECT_EQ(reports::markup_escape(std::string("x\0y\x1b\x7f", 5)),
            "x\xEF\xBF\xBDy\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(reports::markup_escape("\xC2\x85 \xEF\xBF\xBF \xC3\xA9"),
            "\xEF\xBF\xBD \xEF\xBF\xBD \xC3\xA9");  // C1, U+FFFF, é kept
  EXPECT_EQ(reports::valid_utf8("\xED\xA0\x80"),
            "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");                       // surrogate
  EXPECT_EQ(reports::valid_utf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong '/'
  EXPECT_EQ(reports::valid_utf8("\xF0\x9F\x9A\x80"), "\xF0\x9F\x9A\x80");
  EXPECT_EQ(reports::truncate_utf8("ab\xE4\xB8\xAD", 3), "ab...");
  EXPECT_EQ(reports::truncate_utf8("abc", 3), "abc");
  EXPECT_EQ(reports::first_line("one\r\ntwo"), "one");
  EXPECT_EQ(reports::format_seconds(-2), "0.000");
  EXPECT_EQ(reports::format_seconds(1234.5678), "1234.568");
  EXPECT_EQ(reports::format_number(-INFINITY), "-inf");
}

TEST(ReportsUtil, FeatureColumnsPutDtypesFirst) {
  RunSummary run = testing::tricky_run();
  auto cols = reports::feature_columns(run);
  ASSERT_GE(cols.size(), 5u);
  EXPECT_EQ(cols[0], "all");
  EXPECT_EQ(cols[1], "dtype=bf16");
  EXPECT_EQ(cols[4], "dtype=f64");
  EXPECT_EQ(cols[5], "causal=br");
}

}  // namespace
}  // namespace sdpa

namespace sdpa {
namespace {

using namespace sdpa::conformance;

// What each record judged and what it was asked for and not given round-trip, and the run's
// counts per quantity are in the console line and summary.json (docs/CONFORMANCE.md,
// "Requested outputs").
TEST(ReportsJudged, PerQuantityCountsRoundTripAndAreSummed) {
  RunSummary run;
  CaseRecord a;
  a.case_id = "b1.hq2.hkv2.l4.s4.dqk8.dv8.f32.lse.bwd.seed1.gen=normal";
  a.backend = "fn";
  a.judged = {"o", "dq", "dk", "dv"};
  a.not_returned = {"lse"};
  CaseRecord b = a;
  b.judged = {"o", "lse"};
  b.not_returned.clear();
  CaseRecord declined = a;
  declined.status = Status::not_supported;
  declined.judged.clear();
  declined.not_returned.clear();
  run.records = {a, b, declined};
  const CaseRecord back = record_from_json(nlohmann::json::parse(record_to_json(a).dump()));
  EXPECT_EQ(back.judged, a.judged);
  EXPECT_EQ(back.not_returned, a.not_returned);
  EXPECT_FALSE(record_to_json(declined).contains("judged"));
  EXPECT_EQ(judged_line(count_judged(run)),
            "judged: o 2, lse 1, weights 0, dq 1, dk 1, dv 1, dbias 0; not returned (so not "
            "judged): lse 1");
  const auto j = nlohmann::json::parse(render_summary_json(run));
  EXPECT_EQ(j.at("judged").at("o"), 2);
  EXPECT_EQ(j.at("not_returned").at("lse"), 1);
}

// Backward records carry their worst err/tol per gradient tensor and whether their bits
// followed the thread count; every report shows them per backend.
TEST(ReportsBackward, GradientRatiosRoundTripAndAreShownPerTensor) {
  RunSummary run;
  CaseRecord a;
  a.case_id = "b1.hq2.hkv2.l4.s4.dqk8.dv8.f32.lse.bwd.seed1.gen=normal";
  a.backend = "cpu.math";
  a.status = Status::fail;
  a.tensor_ratios = {{"forward", 0.5}, {"dq", 0.125}, {"dk", 2.5}, {"dv", 0.25}};
  CaseRecord b = a;
  b.status = Status::pass;
  b.tensor_ratios = {{"forward", 0.5}, {"dq", 0.75}, {"dk", 0.5}, {"dv", 0.25}, {"dbias", 0.5}};
  b.nondeterministic_backward = true;
  CaseRecord fwd = a;
  fwd.case_id = "b1.hq2.hkv2.l4.s4.dqk8.dv8.f32.seed1.gen=normal";
  fwd.backend = "cpu.flash";
  fwd.tensor_ratios.clear();
  run.records = {a, b, fwd};

  const auto j = record_to_json(b);
  EXPECT_EQ(j.at("tensor_ratios").at("dq"), 0.75);
  EXPECT_EQ(j.at("nondeterministic_backward"), true);
  const CaseRecord back = record_from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(back.tensor_ratios, b.tensor_ratios);
  EXPECT_TRUE(back.nondeterministic_backward);
  EXPECT_FALSE(record_to_json(fwd).contains("tensor_ratios"));

  const auto tallies = reports::gradient_tallies(run);
  ASSERT_EQ(tallies.size(), 1u) << "cpu.flash judged no gradient";
  const reports::GradientTally& t = tallies.at("cpu.math");
  EXPECT_EQ(t.judged, 2);
  EXPECT_EQ(t.passed, 1);
  EXPECT_EQ(t.nondeterministic, 1);
  EXPECT_EQ(t.worst.at("dq"), 0.75);
  EXPECT_EQ(t.worst.at("dk"), 2.5);
  EXPECT_EQ(t.worst.at("dv"), 0.25);
  EXPECT_EQ(t.worst.at("dbias"), 0.5);  // the one record with d bias

  const std::string md = reports::render_markdown(run);
  EXPECT_NE(md.find("### Backward (dQ, dK, dV, d bias)"), std::string::npos) << md;
  EXPECT_NE(md.find("| `cpu.math` | 2 | 1 | 0.75 | 2.5 | 0.25 | 0.5 | 1 |"), std::string::npos)
      << md;
  const std::string html = reports::render_html(run);
  EXPECT_NE(html.find("<h2>Backward (dQ, dK, dV, d bias)</h2>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num bad\">2.5</td>"), std::string::npos);
  run.records = {fwd};
  EXPECT_EQ(reports::render_markdown(run).find("Backward"), std::string::npos);
}

}  // namespace
}  // namespace sdpa
