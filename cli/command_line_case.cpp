#include "cli/command_line_case.hpp"

#include <stdexcept>

#include "conformance/case_memory.hpp"

namespace sdpa::cli {

Case parse_command_line_case(std::string_view id) {
  Case c = parse_case_id_or_throw(id);
  if (const std::string rule = validate(c.problem); !rule.empty()) {
    throw std::invalid_argument("INVALID case " + std::string(id) + ": " + rule);
  }
  return c;
}

void check_command_line_case_fits(const std::string& id, const Case& c, bool golden,
                                  std::uint64_t limit) {
  const std::string refusal =
      conformance::memory_refusal(conformance::harness_memory(c.problem, golden), limit);
  if (!refusal.empty()) throw std::invalid_argument("case " + id + " " + refusal);
}

}  // namespace sdpa::cli
