// Host conditions of known failures (`[when ...]` before an entry of an --expect file,
// reports/records/expectations.hpp; docs/CERTIFICATION.md "Known failures"): a deviation that
// only some hosts show (a CPU feature, the ISA target the kernels ran with, a library's
// version) is listed for those hosts only, so that the gate passes on each host and still
// fails when a deviation appears or disappears where it should not.
//
// Grammar, inside `[when ` and `]`: one or more terms separated by blanks; the condition holds
// when every term does (write two entries for "either"). A term is an optional `!` (not) and
//   cpu:FLAG       FLAG is one of this host's CPU flags as /proc/cpuinfo names them
//                  (core/cpu_flags.hpp): cpu:amx_bf16, !cpu:avx512_bf16
//   isa:TARGET     the record's ISA target (its --simd target, else the run device's best) is
//                  TARGET, one of core/isa_targets.def: isa:avx512bf16. False where there is
//                  none (a GPU run)
//   NAME OP VER    a version the caller supplies (--expect-fact NAME=VERSION, or
//                  check(expect_facts={NAME: VERSION}) from Python) compared with VER:
//                  torch>=2.15, jax<0.11, torch==2.15.0; OP is one of >= <= > < == !=
//
// Versions compare by their leading numeric components, missing ones as 0 (2.15 == 2.15.0);
// what follows them ("+cu132", ".dev2025", "a0") is ignored: pre-releases are not ordered.
// A version term whose NAME the caller did not supply is an error, not false: a file that
// asks about torch run without torch's version would otherwise lose its entries silently.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace sdpa::conformance {

// What conditions are judged against.
struct ExpectFacts {
  std::set<std::string> cpu_flags;              // host CPU flags (host_cpu_flags())
  std::string isa;                              // the run's ISA target ("" = none, a GPU)
  std::map<std::string, std::string> versions;  // library versions given by the caller
  bool every_host = false;  // every condition holds: for checks that an XFAIL names an entry,
                            // made on any host (`sdpa-cts bundle verify`)
};

// One term of a condition.
struct ExpectTerm {
  enum class Kind { cpu, isa, version };
  Kind kind = Kind::cpu;
  bool negated = false;  // leading '!'
  std::string name;      // the flag, the ISA target, or the library
  std::string op;        // version terms: >= <= > < == !=
  std::string version;   // version terms: the right-hand side
};

// A parsed `[when ...]` clause: every term must hold. Empty = no condition (always holds).
struct ExpectCondition {
  std::string text;  // the terms as written, for messages ("cpu:amx_bf16 torch>=2.15")
  std::vector<ExpectTerm> terms;
  bool empty() const { return terms.empty(); }
};

// Parses the inside of a `[when ...]` clause. Throws std::invalid_argument with the problem
// (an empty condition, a bad flag or library name, an unknown ISA target, a bad operator or
// version); the caller adds the file and line.
ExpectCondition parse_expect_condition(std::string_view text);

// Whether `c` holds for `facts` with `isa` as the ISA target (always, with facts.every_host).
// Throws std::invalid_argument naming a version fact that `facts` lacks.
bool condition_holds(const ExpectCondition& c, const ExpectFacts& facts, std::string_view isa);

// -1, 0 or 1 as version `a` is below, equal to or above `b` (see the comparison above).
// Throws std::invalid_argument when either does not start with a number.
int compare_versions(std::string_view a, std::string_view b);

// Parses "NAME=VERSION" (--expect-fact) into `facts->versions`. Throws std::invalid_argument
// for a bad name, a version that does not start with a number, or a NAME given twice.
void add_version_fact(ExpectFacts* facts, std::string_view assignment);

// This host's facts: its CPU flags, and `isa` as the run's ISA target.
ExpectFacts host_expect_facts(std::string isa);

// Facts under which every condition holds (ExpectFacts::every_host).
ExpectFacts every_host_facts();

}  // namespace sdpa::conformance
