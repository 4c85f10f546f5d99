// Known failures (--expect, reports/records/expectations.hpp): the file grammar and its errors,
// matching (exact IDs, globs, re:), issue detection, first match wins, and what applying an
// entry does to each status.
#include "reports/records/expectations.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/cpu_flags.hpp"
#include "reports/records/record_json.hpp"
#include "tests/error_of.hpp"

namespace sdpa::conformance {
namespace {

const std::string kCase = "b1.hq2.hkv2.l9.s17.dqk8.dv8.f32.seed1.gen=normal";

using sdpa::testing_util::error_of;

CaseRecord record(std::string backend, std::string case_id, Status status,
                  std::string message = "worst |err| 3e-2 > tol 1e-3 at o[0,0,0,0]") {
  CaseRecord r;
  r.backend = std::move(backend);
  r.case_id = std::move(case_id);
  r.status = status;
  r.message = std::move(message);
  return r;
}

TEST(Expectations, CommentsBlankLinesAndFields) {
  const auto e = parse_expectations(
      "# known failures of the vendor backends\n"
      "\n"
      "   \t\n"
      "  # an indented comment\n"
      "vendor.flash b1.hq2.*  causal lower-right is top-left https://example.org/issues/3\n"
      "vendor.* re:\\.bf16\\.  bf16 LSE from a 13-bit exp #12\r\n"
      "vendor.math " +
          kCase + " no issue yet\n",
      "known.txt", {});
  EXPECT_EQ(e.file, "known.txt");
  ASSERT_EQ(e.entries.size(), 3u);
  EXPECT_EQ(e.entries[0].backend, "vendor.flash");
  EXPECT_EQ(e.entries[0].cases, "b1.hq2.*");
  EXPECT_EQ(e.entries[0].reason, "causal lower-right is top-left");
  EXPECT_EQ(e.entries[0].issue, "https://example.org/issues/3");
  EXPECT_EQ(e.entries[0].line, 5);
  EXPECT_EQ(e.entries[1].cases, "re:\\.bf16\\.");
  EXPECT_EQ(e.entries[1].reason, "bf16 LSE from a 13-bit exp");
  EXPECT_EQ(e.entries[1].issue, "#12");  // CR of a CR LF line is not part of the word
  EXPECT_EQ(e.entries[1].line, 6);
  EXPECT_EQ(e.entries[2].reason, "no issue yet");
  EXPECT_EQ(e.entries[2].issue, "");
  EXPECT_EQ(e.entries[2].line, 7);
  EXPECT_EQ(expectation_text(e.entries[0]),
            "causal lower-right is top-left https://example.org/issues/3");
  EXPECT_EQ(expectation_text(e.entries[2]), "no issue yet");
  EXPECT_TRUE(parse_expectations("# nothing\n\n", "empty.txt", {}).empty());
}

TEST(Expectations, IssueDetection) {
  auto issue_of = [](const std::string& line) {
    return parse_expectations(line, "f", {}).entries.at(0).issue;
  };
  EXPECT_EQ(issue_of("b c reason https://github.com/o/r/issues/7"),
            "https://github.com/o/r/issues/7");
  EXPECT_EQ(issue_of("b c reason #12"), "#12");
  EXPECT_EQ(issue_of("b c reason #12a"), "");  // not a number: part of the reason
  EXPECT_EQ(issue_of("b c reason #"), "");
  EXPECT_EQ(issue_of("b c reason 12"), "");
  EXPECT_EQ(issue_of("b c reason"), "");
  EXPECT_EQ(parse_expectations("b c reason #12a", "f", {}).entries[0].reason, "reason #12a");
}

TEST(Expectations, ParseErrorsNameFileAndLine) {
  auto err = [](const std::string& text) {
    return error_of([&] { parse_expectations(text, "ci/known.txt", {}); });
  };
  const std::string missing = err("# header\ncpu.flash " + kCase + "\n");
  EXPECT_NE(missing.find("ci/known.txt:2: "), std::string::npos) << missing;
  EXPECT_NE(missing.find("reason is missing"), std::string::npos) << missing;
  EXPECT_NE(err("cpu.flash\n").find("ci/known.txt:1: "), std::string::npos);
  const std::string only_issue = err("\n\ncpu.flash " + kCase + " #12\n");
  EXPECT_NE(only_issue.find("ci/known.txt:3: "), std::string::npos) << only_issue;
  EXPECT_NE(only_issue.find("reason is missing"), std::string::npos) << only_issue;
  const std::string regex = err("cpu.* re:.* a fine line\ncpu.* re:([a-z] bad regex here\n");
  EXPECT_NE(regex.find("ci/known.txt:2: bad regular expression '([a-z]'"), std::string::npos)
      << regex;
}

TEST(Expectations, LoadNamesAMissingFile) {
  const std::string missing = "/nonexistent/known-failures.txt";
  const std::string e = error_of([&] { load_expectations(missing, {}); });
  EXPECT_NE(e.find("cannot read '" + missing + "'"), std::string::npos) << e;
}

TEST(Expectations, LoadReadsAFile) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("sdpa_cts_expectations_test_" + std::to_string(::getpid()) + ".txt");
  {
    std::ofstream out(path);
    out << "# c\ncpu.* " << kCase << " a reason #4\n";
  }
  const auto e = load_expectations(path.string(), {});
  std::filesystem::remove(path);
  EXPECT_EQ(e.file, path.string());
  ASSERT_EQ(e.entries.size(), 1u);
  EXPECT_EQ(e.entries[0].line, 2);
  EXPECT_EQ(e.text, "# c\ncpu.* " + kCase + " a reason #4\n");
}

TEST(Expectations, GlobsExactIdsAndRegexes) {
  const auto e = parse_expectations("cpu.math " + kCase +
                                        " exact\n"                             // 1
                                        "cpu.fl?sh b1.hq2.*.f32.* glob\n"      // 2
                                        "vendor.* re:causal=br\\.lse regex\n"  // 3
                                        "* *.bf16.* every backend on bf16\n",  // 4
                                    "f", {});
  auto line_of = [&](const std::string& backend, const std::string& id) {
    const Expectation* x = find_expectation(e, backend, id);
    return x ? x->line : 0;
  };
  EXPECT_EQ(line_of("cpu.math", kCase), 1);
  EXPECT_EQ(line_of("cpu.math", kCase + "x"), 0);  // exact: no prefix match
  EXPECT_EQ(line_of("cpu.math", "b1.hq2.hkv2.l9.s17.dqk8.dv8.f32.seed2.gen=normal"), 0);
  EXPECT_EQ(line_of("cpu.flash", kCase), 2);
  EXPECT_EQ(line_of("cpu.flxsh", kCase), 2);   // '?' is one character
  EXPECT_EQ(line_of("cpu.flaash", kCase), 0);  // ... exactly one
  EXPECT_EQ(line_of("cpu.flash", "b2.hq2.l9.s17.dqk8.f32.seed1.gen=normal"), 0);
  EXPECT_EQ(line_of("vendor.x", "b2.hq4.l3.s5.dqk8.f16.causal=br.lse.seed1.gen=normal"), 3);
  EXPECT_EQ(line_of("vendor.x", "b2.hq4.l3.s5.dqk8.f16.causal=brxlse.seed1.gen=normal"), 0);
  EXPECT_EQ(line_of("anything", "b1.hq1.l1.s1.dqk8.bf16.seed1.gen=normal"), 4);
  EXPECT_EQ(line_of("anything", "b1.hq1.l1.s1.dqk8.f16.seed1.gen=normal"), 0);
}

TEST(Expectations, FirstMatchWins) {
  const auto e = parse_expectations("cpu.flash " + kCase +
                                        " the specific reason #1\n"
                                        "cpu.* * the broad reason #2\n",
                                    "f", {});
  const Expectation* x = find_expectation(e, "cpu.flash", kCase);
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->line, 1);
  EXPECT_EQ(x->issue, "#1");
  x = find_expectation(e, "cpu.math", kCase);
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->line, 2);
}

TEST(Expectations, FailCrashAndTimeoutBecomeXfailKeepingTheOriginal) {
  const auto e = parse_expectations("vendor.* * wrong causal corner #12\n", "known.txt", {});
  for (Status s : {Status::fail, Status::crash, Status::timeout}) {
    SCOPED_TRACE(status_name(s));
    CaseRecord r = record("vendor.flash", kCase, s, "the original message");
    EXPECT_TRUE(apply_expectations(e, r));
    EXPECT_EQ(r.status, Status::expected_failure);
    EXPECT_STREQ(status_name(r.status), "XFAIL");
    EXPECT_FALSE(is_failure(r.status));
    EXPECT_EQ(r.expected, "wrong causal corner #12");
    EXPECT_EQ(r.message, std::string("expected failure (") + status_name(s) +
                             ", known.txt:1: wrong causal corner #12): the original message");
  }
}

TEST(Expectations, PassStaysPassAndIsUnexpectedlyPassing) {
  const auto e = parse_expectations("cpu.math * listed by mistake\n", "known.txt", {});
  std::vector<CaseRecord> records = {record("cpu.math", kCase, Status::pass, ""),
                                     record("cpu.math", kCase, Status::quality_warning, "2.4x"),
                                     record("cpu.flash", kCase, Status::pass, "")};
  for (auto& r : records) apply_expectations(e, r);
  EXPECT_EQ(records[0].status, Status::pass);
  EXPECT_EQ(records[0].message, "");
  EXPECT_EQ(records[0].expected, "listed by mistake");
  EXPECT_EQ(records[1].status, Status::quality_warning);
  EXPECT_EQ(records[1].message, "2.4x");
  EXPECT_EQ(records[2].expected, "");  // not listed
  const auto passing = unexpectedly_passing(records);
  ASSERT_EQ(passing.size(), 2u);
  EXPECT_EQ(passing[0], &records[0]);
  EXPECT_EQ(passing[1], &records[1]);
}

TEST(Expectations, OtherStatusesAreUntouched) {
  const auto e = parse_expectations("* * listed\n", "known.txt", {});
  std::vector<CaseRecord> records;
  for (Status s : {Status::not_supported, Status::invalid, Status::mistrusted}) {
    CaseRecord r = record("cpu.flash", kCase, s, "why");
    EXPECT_TRUE(apply_expectations(e, r));  // it matched ...
    EXPECT_EQ(r.status, s);                 // ... but the verdict stands
    EXPECT_EQ(r.message, "why");
    records.push_back(r);
  }
  EXPECT_TRUE(unexpectedly_passing(records).empty());
}

TEST(Expectations, NonMatchingRecordIsUntouched) {
  const auto e = parse_expectations("vendor.flash * listed #3\n", "known.txt", {});
  CaseRecord r = record("cpu.flash", kCase, Status::fail, "bad");
  const CaseRecord before = r;
  EXPECT_FALSE(apply_expectations(e, r));
  EXPECT_EQ(r.status, Status::fail);
  EXPECT_EQ(r.message, before.message);
  EXPECT_EQ(r.expected, "");
  Expectations none;
  EXPECT_FALSE(apply_expectations(none, r));
  EXPECT_EQ(r.status, Status::fail);
}

TEST(Expectations, RecordCodecCarriesTheExpectation) {
  const auto e = parse_expectations("* * known bug https://example.org/i/1\n", "known.txt", {});
  for (Status s : {Status::fail, Status::pass}) {
    CaseRecord r = record("cpu.flash", kCase, s);
    apply_expectations(e, r);
    const auto j = record_to_json(r);
    EXPECT_EQ(j.at("expected"), "known bug https://example.org/i/1");
    const CaseRecord back = record_from_json(nlohmann::json::parse(record_json_line(r)));
    EXPECT_EQ(back.status, r.status);
    EXPECT_EQ(back.message, r.message);
    EXPECT_EQ(back.expected, r.expected);
  }
  // Written always, "" when none; a line without the key (an older file) reads as "".
  auto j = nlohmann::json::parse(record_json_line(record("cpu.flash", kCase, Status::pass)));
  EXPECT_EQ(j.at("expected"), "");
  j.erase("expected");
  EXPECT_EQ(record_from_json(j).expected, "");
  j["expected"] = 3;
  EXPECT_NE(error_of([&] { record_from_json(j); }).find("malformed record"), std::string::npos);
}

// Host conditions (`[when ...]`, reports/records/expect_condition.hpp) on entries.

// An Intel Xeon with AMX, an AMD EPYC with AVX512-BF16 and no AMX, and an Intel without AMX.
ExpectFacts host(std::set<std::string> flags, std::string isa = "avx512bf16") {
  ExpectFacts f;
  f.cpu_flags = std::move(flags);
  f.isa = std::move(isa);
  f.versions["torch"] = "2.15.0+cu132";
  return f;
}
const std::set<std::string> kAmx = {"avx512f", "avx512_bf16", "amx_bf16", "amx_tile"};
const std::set<std::string> kEpyc = {"avx512f", "avx512_bf16"};

const std::string kDenormals = "b1.hq2.hkv2.l33.s65.dqk32.dv32.bf16.seed45.gen=denormals";
const std::string kAmxFile =
    "# bf16 subnormal O flushed where oneDNN runs AMX\n"
    "[when cpu:amx_bf16] torch_sdpa " +
    kDenormals + " O flushed to 0 where the exact value is subnormal\n";

TEST(ExpectationConditions, OldLinesHaveNoConditionAndAlwaysApply) {
  const auto e = parse_expectations("cpu.math " + kCase + " reason #3\n", "f", host({}));
  ASSERT_EQ(e.entries.size(), 1u);
  EXPECT_TRUE(e.entries[0].condition.empty());
  EXPECT_NE(find_expectation(e, "cpu.math", kCase), nullptr);
}

TEST(ExpectationConditions, ACpuFlagConditionAppliesOnlyWhereTheFlagIs) {
  for (const auto& [flags, applies] : std::vector<std::pair<std::set<std::string>, bool>>{
           {kAmx, true}, {kEpyc, false}, {{}, false}}) {
    SCOPED_TRACE(flags.size());
    const auto e = parse_expectations(kAmxFile, "torch.expect", host(flags));
    ASSERT_EQ(e.entries.size(), 1u);
    EXPECT_EQ(e.entries[0].condition.text, "cpu:amx_bf16");
    EXPECT_EQ(e.entries[0].backend, "torch_sdpa");
    EXPECT_EQ(e.entries[0].reason, "O flushed to 0 where the exact value is subnormal");
    CaseRecord r = record("torch_sdpa", kDenormals, Status::fail, "o = 0");
    EXPECT_EQ(apply_expectations(e, r), applies);
    // Where it does not apply, the case is judged as if unlisted: the FAIL stands.
    EXPECT_EQ(r.status, applies ? Status::expected_failure : Status::fail);
    if (applies) {
      EXPECT_EQ(r.message,
                "expected failure (FAIL, torch.expect:2 [when cpu:amx_bf16]: O flushed "
                "to 0 where the exact value is subnormal): o = 0");
    }
    // A pass is "unexpectedly passing" only where the entry applies.
    std::vector<CaseRecord> passed = {record("torch_sdpa", kDenormals, Status::pass, "")};
    apply_expectations(e, passed[0]);
    EXPECT_EQ(unexpectedly_passing(passed).size(), applies ? 1u : 0u);
  }
}

TEST(ExpectationConditions, NegationTheIsaTargetAndEveryTermMustHold) {
  const auto e = parse_expectations("[when !cpu:amx_bf16] b " + kCase +
                                        " not on AMX\n"  // 1
                                        "[when isa:avx512bf16] c " +
                                        kCase +
                                        " the bf16 target\n"  // 2
                                        "[when cpu:avx512_bf16 !isa:avx512bf16] d " +
                                        kCase +
                                        " both\n"  // 3
                                        "[when\tcpu:amx_bf16  torch>=2.15 ] e " +
                                        kCase + " AMX and torch 2.15\n",  // 4
                                    "f", host(kEpyc));
  auto line_of = [&](const std::string& backend, const std::string& isa = "") {
    const Expectation* x = find_expectation(e, backend, kCase, isa);
    return x ? x->line : 0;
  };
  EXPECT_EQ(line_of("b"), 1);  // no AMX here
  EXPECT_EQ(line_of("c"), 2);  // the run's target (facts.isa)
  EXPECT_EQ(line_of("c", "avx2"), 0);
  EXPECT_EQ(line_of("d"), 0);  // avx512_bf16 but the target is avx512bf16
  EXPECT_EQ(line_of("d", "avx512"), 3);
  EXPECT_EQ(line_of("e"), 0);  // torch 2.15 but no AMX
  EXPECT_EQ(e.entries[3].condition.text, "cpu:amx_bf16 torch>=2.15");
  const auto amx = parse_expectations(e.text, "f", host(kAmx));
  EXPECT_EQ(find_expectation(amx, "b", kCase), nullptr);
  EXPECT_NE(find_expectation(amx, "e", kCase), nullptr);
  // A record run on a forced target (--simd) is judged with that target.
  CaseRecord r = record("c", kCase, Status::fail);
  r.simd_target = "avx2";
  EXPECT_FALSE(apply_expectations(e, r));
  r.simd_target = "avx512bf16";
  EXPECT_TRUE(apply_expectations(e, r));
  // No ISA target (a GPU run): isa: terms are false.
  EXPECT_EQ(find_expectation(parse_expectations(e.text, "f", host(kEpyc, "")), "c", kCase),
            nullptr);
}

TEST(ExpectationConditions, AnEntryThatDoesNotApplyLetsALaterOneMatch) {
  const auto e = parse_expectations("[when cpu:amx_bf16] cpu.flash " + kCase +
                                        " flushed on AMX #1\n"
                                        "cpu.* * the broad reason #2\n",
                                    "f", host(kEpyc));
  const Expectation* x = find_expectation(e, "cpu.flash", kCase);
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->line, 2);
  const auto on_amx = parse_expectations(e.text, "f", host(kAmx));  // outlives x
  x = find_expectation(on_amx, "cpu.flash", kCase);
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->line, 1);
}

TEST(ExpectationConditions, VersionConditions) {
  auto applies = [](const std::string& condition, const std::string& torch) {
    ExpectFacts f = host(kEpyc);
    f.versions["torch"] = torch;
    const auto e = parse_expectations("[when " + condition + "] b c reason\n", "f", f);
    return find_expectation(e, "b", "c") != nullptr;
  };
  EXPECT_TRUE(applies("torch>=2.15", "2.15.0+cu132"));
  EXPECT_TRUE(applies("torch>=2.15", "2.16.0.dev20260101"));
  EXPECT_FALSE(applies("torch>=2.15", "2.14.1"));
  EXPECT_TRUE(applies("torch<2.15", "2.9.0"));  // numeric, not text: 9 < 15
  EXPECT_FALSE(applies("torch<2.15", "2.15"));
  EXPECT_TRUE(applies("torch==2.15", "2.15.0"));  // missing components are 0
  EXPECT_FALSE(applies("torch==2.15", "2.15.1"));
  EXPECT_TRUE(applies("torch!=2.15", "2.15.1"));
  EXPECT_TRUE(applies("torch>2.15", "2.15.1"));
  EXPECT_FALSE(applies("torch>2.15", "2.15.0"));
  EXPECT_TRUE(applies("torch<=2.15", "2.15.0"));
  EXPECT_TRUE(applies("!torch>=2.15", "2.14"));
  EXPECT_FALSE(applies("!torch>=2.15", "2.15"));
  EXPECT_EQ(compare_versions("10.0", "9.99"), 1);
  EXPECT_EQ(compare_versions("0.10.2", "0.10.2"), 0);
  EXPECT_EQ(compare_versions("1", "1.0.1"), -1);
}

TEST(ExpectationConditions, AVersionTheCallerDidNotGiveIsAnErrorNamingTheLine) {
  ExpectFacts f = host(kAmx);
  f.versions.clear();
  const std::string e =
      error_of([&] { parse_expectations("# c\n[when jax>=0.10] b c reason\n", "p.expect", f); });
  EXPECT_NE(e.find("p.expect:2: "), std::string::npos) << e;
  EXPECT_NE(e.find("'jax', which was not given (--expect-fact jax=VERSION"), std::string::npos)
      << e;
  // ... also where an earlier term is already false (the file is wrong on every host).
  EXPECT_NE(error_of([&] {
              parse_expectations("[when cpu:no_such_flag jax>=0.10] b c r\n", "p.expect", f);
            }).find("'jax'"),
            std::string::npos);
}

TEST(ExpectationConditions, MalformedConditionsNameTheLine) {
  auto err = [](const std::string& text) {
    return error_of(
        [&] { parse_expectations("# header\n" + text + "\n", "ci/known.txt", host(kAmx)); });
  };
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"[when] b c reason", "empty condition"},
      {"[when   ] b c reason", "empty condition"},
      {"[when cpu:amx_bf16 b c reason", "no closing ']'"},
      {"[if cpu:amx_bf16] b c reason", "must start with a condition, '[when CONDITION]'"},
      {"[whenever cpu:amx_bf16] b c reason", "must start with a condition"},
      {"[when cpu:AMX_BF16] b c reason", "bad CPU flag in 'cpu:AMX_BF16'"},
      {"[when cpu:] b c reason", "bad CPU flag"},
      {"[when isa:avx9] b c reason", "unknown ISA target in 'isa:avx9' (known: scalar"},
      {"[when amx_bf16] b c reason", "bad term 'amx_bf16': expected cpu:FLAG, isa:TARGET or NAME"},
      {"[when torch=2.15] b c reason", "bad operator in 'torch=2.15'"},
      {"[when torch=>2.15] b c reason", "bad operator in 'torch=>2.15'"},
      {"[when torch>=2.15a] b c reason", "bad version in 'torch>=2.15a'"},
      {"[when torch>=] b c reason", "bad version"},
      {"[when >=2.15] b c reason", "bad library name in '>=2.15'"},
      {"[when cpu:amx_bf16]", "a condition without an entry after it"},
      {"[when cpu:amx_bf16] b c", "reason is missing"},
      {"b c reason [when cpu:amx_bf16]", "a condition goes first on the line"},
  };
  for (const auto& [line, problem] : bad) {
    const std::string e = err(line);
    EXPECT_NE(e.find("ci/known.txt:2: "), std::string::npos) << line << " -> " << e;
    EXPECT_NE(e.find(problem), std::string::npos) << line << " -> " << e;
  }
}

TEST(ExpectationConditions, EveryHostFactsApplyEveryEntry) {
  // `sdpa-cts bundle verify` checks that an XFAIL names an entry, on any host: no versions.
  const auto e =
      parse_expectations("[when cpu:amx_bf16 !cpu:amx_bf16 torch>=99 isa:scalar] b c reason\n", "f",
                         every_host_facts());
  EXPECT_NE(find_expectation(e, "b", "c"), nullptr);
}

TEST(ExpectationConditions, VersionFactsFromTheCommandLine) {
  ExpectFacts f;
  add_version_fact(&f, "torch=2.15.0+cu132");
  add_version_fact(&f, "jax=0.10.2");
  EXPECT_EQ(f.versions.at("torch"), "2.15.0+cu132");
  EXPECT_EQ(f.versions.at("jax"), "0.10.2");
  EXPECT_NE(error_of([&] { add_version_fact(&f, "torch=2.16"); }).find("torch is given twice"),
            std::string::npos);
  EXPECT_NE(error_of([&] { add_version_fact(&f, "torch"); }).find("expected NAME=VERSION"),
            std::string::npos);
  EXPECT_NE(error_of([&] { add_version_fact(&f, "=2"); }).find("bad name"), std::string::npos);
  EXPECT_NE(error_of([&] { add_version_fact(&f, "x=v2"); }).find("does not start with a number"),
            std::string::npos);
}

TEST(ExpectationConditions, CpuFlagsFromProcCpuinfo) {
  const std::string x86 =
      "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu avx512_bf16 amx_bf16 amx_tile\n"
      "processor\t: 1\nflags\t\t: fpu\n";
  EXPECT_EQ(parse_cpu_flags(x86),
            (std::set<std::string>{"fpu", "avx512_bf16", "amx_bf16", "amx_tile"}));
  EXPECT_EQ(parse_cpu_flags("processor\t: 0\nFeatures\t: fp asimd bf16\n"),
            (std::set<std::string>{"fp", "asimd", "bf16"}));
  EXPECT_TRUE(parse_cpu_flags("model name\t: x\nvmx flags\t: ept\n").empty());
  EXPECT_TRUE(parse_cpu_flags("").empty());
}

}  // namespace
}  // namespace sdpa::conformance
