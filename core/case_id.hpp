// The canonical case ID: one string naming a problem and its data (docs/CASE_ID.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "core/problem.hpp"

namespace sdpa {

// How a case's input data is made: a named generator and its seed.
struct DataRecipe {
  std::string generator = "normal";  // generator name, [a-z0-9_]+
  std::uint64_t seed = 0;            // seed of the generator
};

// A problem plus its data: everything needed to reproduce a case bit for bit.
struct Case {
  Problem problem;  // the SDPA call
  DataRecipe data;  // how its inputs are generated
};

// The canonical ID of a case. Strides are printed as a named layout when they match one,
// else explicitly. Throws nothing; the problem need not be valid.
std::string format_case_id(const Case& c);

// Either the parsed case or an error that names the offending field.
struct CaseIdError {
  std::string field;    // the token or field at fault, e.g. "hkv" or "win"
  std::string message;  // full sentence, including the field
};
std::variant<Case, CaseIdError> parse_case_id(std::string_view id);

// Parses or throws std::invalid_argument with the error message.
Case parse_case_id_or_throw(std::string_view id);

}  // namespace sdpa
