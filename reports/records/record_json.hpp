// The one JSON encoding of a CaseRecord: the runner's workers send records to the parent
// with it, and results.jsonl (reports/) writes it. JSON has no infinity or NaN: those
// travel as the strings "inf", "-inf" and "nan" and are read back as such.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "reports/records/run_record.hpp"

namespace sdpa::conformance {

// One record as a JSON object, keys in a fixed order (docs/REPORTS.md "results.jsonl").
nlohmann::ordered_json record_to_json(const CaseRecord& r);

// A JSON number, or one of the strings "inf", "-inf", "nan"; nullopt for anything else.
std::optional<double> number_or_nonfinite(const nlohmann::json& v);

// The record back; throws std::invalid_argument naming the key for a malformed object.
CaseRecord record_from_json(const nlohmann::json& j);

// record_to_json as one line (no newline); invalid UTF-8 becomes U+FFFD.
std::string record_json_line(const CaseRecord& r);

}  // namespace sdpa::conformance
