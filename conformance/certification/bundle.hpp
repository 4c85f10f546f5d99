// Certification bundles (docs/CERTIFICATION.md): the directory `sdpa-cts certify` writes and
// `sdpa-cts bundle verify` checks. Files:
//   manifest.json     suite, profile, device, backend, run and verdict (schema in the docs)
//   cases.txt         the profile's case list, one "<case ID>\t<golden file or ->" per line
//   profile.txt       the profile file's exact text
//   expectations.txt  the --expect file's exact text (only when one was given)
//   results.jsonl, summary.json, junit.xml, summary.md, report.html   the reports
//   SHA256SUMS        "<sha256>  <file>" for every other file (`sha256sum -c` reads it)
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "conformance/certification/profile.hpp"
#include "reports/records/run_record.hpp"

namespace sdpa::conformance {

inline constexpr const char* kManifestFile = "manifest.json";
inline constexpr const char* kCaseListFile = "cases.txt";
inline constexpr const char* kProfileCopyFile = "profile.txt";
inline constexpr const char* kExpectationsCopyFile = "expectations.txt";
inline constexpr const char* kDigestsFile = "SHA256SUMS";

// Everything a bundle holds.
struct BundleContents {
  nlohmann::ordered_json manifest;          // manifest.json
  std::string case_list;                    // cases.txt (case_list_text)
  std::string profile_text;                 // profile.txt
  std::optional<std::string> expectations;  // expectations.txt, when --expect was given
  RunSummary run;                           // the reports' records and metadata
};

// Writes the bundle into `dir` (created if needed), SHA256SUMS last. `dir` must be absent,
// empty or an earlier bundle (it has a manifest.json): a directory holding anything else is
// an error, so nothing already there is lost. Throws std::runtime_error naming the file.
void write_bundle(const std::string& dir, const BundleContents& contents);

// The verdict section of a manifest from a profile verdict (written by certify, recomputed
// and compared by check_bundle).
nlohmann::ordered_json verdict_json(const ProfileVerdict& v, std::size_t records);

// What check_bundle found.
struct BundleCheck {
  std::vector<std::string> problems;      // each a reason the bundle is not intact; empty = intact
  std::vector<std::string> notes;         // versions that differ from this build, partial bundles
  nlohmann::json manifest;                // the manifest (null when unreadable)
  std::vector<CaseRecord> records;        // results.jsonl (empty when unreadable)
  std::vector<std::string> case_ids;      // cases.txt, in order
  std::vector<std::string> golden_files;  // cases.txt, the golden file of each case ("" = none)
  std::optional<std::string> expectations;  // expectations.txt
};

// Checks a bundle without running anything: every digest of SHA256SUMS (a missing, extra or
// edited file is a problem), the manifest's digests of the case list, profile and
// expectations, the counts of summary.json and the manifest against results.jsonl, the
// records against the case list, and the verdict recomputed from the records by the profile
// rule. Adds notes where this build's suite, tolerance table or profile differ.
BundleCheck check_bundle(const std::string& dir);

// The bundles of the shards of one certification (`certify --shard K/N`) as the bundle of
// the whole run: each must check intact, their manifests must agree apart from the shard and
// its timing, and their runs must merge (reports/merge.hpp); the verdict is recomputed from
// all the records. Throws std::invalid_argument naming the bundle and the problem.
BundleContents merge_bundles(const std::vector<std::string>& dirs);

}  // namespace sdpa::conformance
