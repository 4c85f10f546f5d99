// Case IDs named on the command line (--case): a bad one is refused before anything runs,
// with exit code 2 and a message naming the problem, whether the ID does not parse, is not a
// valid problem, or needs more host memory than the run allows. (Cases from tiers, samplers and
// golden files are not refused: they become INVALID or NOT_JUDGED records.)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/case_id.hpp"

namespace sdpa::conformance {

// The case `id` names. Throws std::invalid_argument with the parse error (naming the field),
// or "INVALID case ID: RULE" for a problem that breaks a rule (validate(), naming the field).
Case parse_command_line_case(std::string_view id);

// Throws std::invalid_argument "case ID needs N of host memory for the harness's buffers
// (...); this run lets one case use M (--max-case-memory)" when judging `c` (with a golden
// file's expected values when `golden`) needs more than `limit` bytes.
void check_command_line_case_fits(const std::string& id, const Case& c, bool golden,
                                  std::uint64_t limit);

}  // namespace sdpa::conformance
