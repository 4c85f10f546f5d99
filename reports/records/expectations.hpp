// Known failures for CI gating (`--expect FILE`, docs/CERTIFICATION.md "Known failures"): a
// team lists the cases a backend is known to fail, each with its reason and an optional issue
// link, and gates on regressions while it fixes them.
//
// File grammar, one entry per line (a line whose first character is '#' is a comment, blank
// lines are ignored):
//   [[when <condition>]] <backend> <case> <reason ...> [<issue>]
//   condition  optional, first on the line: the host the entry holds on (cpu:FLAG, isa:TARGET,
//              NAME>=VERSION, ...; the grammar is in reports/records/expect_condition.hpp)
//   backend  a backend name or a glob ('*' any run of characters, '?' one character)
//   case     a case ID, a glob over the canonical ID, or re:<ECMAScript regex> (searched)
//   reason   free text, required
//   issue    optional last word: a URL (contains "://") or an issue number such as #12
//
// Policy: an entry whose condition does not hold here does not apply: its case is judged as
// if the entry were not there (a later entry may still match it). Among those that apply, the
// first match wins. A listed FAIL, CRASH or TIMEOUT becomes XFAIL (expected_failure), which does
// not fail a run; the original status and message stay in the record's message. A listed case that
// passes keeps its status and is reported as "unexpectedly passing". Other statuses (NOT_SUPPORTED,
// INVALID, MISTRUSTED) are left as they are. A certification profile is not met while a required
// case is only expected to fail.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "reports/records/expect_condition.hpp"
#include "reports/records/run_record.hpp"

namespace sdpa::conformance {

struct Expectation {
  std::string backend;        // backend name or glob
  std::string cases;          // case ID, glob, or re:REGEX
  std::string reason;         // why it fails
  std::string issue;          // issue link or number ("" = none)
  ExpectCondition condition;  // `[when ...]` ("" = every host)
  int line = 0;               // line in the file (for messages)
};

struct Expectations {
  std::string file;                  // where it was read from ("" = none given)
  std::string text;                  // the file's exact text (a bundle keeps a copy)
  std::vector<Expectation> entries;  // in file order
  ExpectFacts facts;                 // what conditions are judged against; facts.isa is the
                                     // ISA target of records that name none (simd_target "")
  bool empty() const { return entries.empty(); }
};

// Parses the text of an expectations file whose conditions are judged against `facts`;
// `name` is used in errors. Throws std::invalid_argument naming the file, the line and the
// problem (missing reason, bad regex, a malformed condition, a condition that asks for a
// version `facts` lacks).
Expectations parse_expectations(std::string_view text, const std::string& name,
                                const ExpectFacts& facts);

// Reads and parses `path`. Throws std::invalid_argument naming the file.
Expectations load_expectations(const std::string& path, const ExpectFacts& facts);

// Whether entry `x` of `e` applies to a record run with ISA target `isa` (its condition holds).
bool expectation_applies(const Expectations& e, const Expectation& x, std::string_view isa);

// The first entry that applies (with `isa`; "" = e.facts.isa) and matches `backend` and
// `case_id`, or null.
const Expectation* find_expectation(const Expectations& e, std::string_view backend,
                                    std::string_view case_id, std::string_view isa = "");

// "reason [issue]" of an entry: the text a record carries in CaseRecord::expected.
std::string expectation_text(const Expectation& e);

// Applies the entries to one record (see the policy above). Returns true when it matched.
bool apply_expectations(const Expectations& e, CaseRecord& record);

// Records that passed although an entry lists them (is_pass(status) and expected set).
std::vector<const CaseRecord*> unexpectedly_passing(const std::vector<CaseRecord>& records);

}  // namespace sdpa::conformance
