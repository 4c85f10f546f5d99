#include "conformance/engine/command_line_case.hpp"

#include <stdexcept>

#include "conformance/engine/case_memory.hpp"

namespace sdpa::conformance {

Case parse_command_line_case(std::string_view id) {
  Case c = parse_case_id_or_throw(id);
  if (const std::string rule = validate(c.problem); !rule.empty()) {
    throw std::invalid_argument("INVALID case " + std::string(id) + ": " + rule);
  }
  return c;
}

void check_command_line_case_fits(const std::string& id, const Case& c, bool golden,
                                  std::uint64_t limit) {
  const std::string refusal = memory_refusal(harness_memory(c.problem, golden), limit);
  if (!refusal.empty()) throw std::invalid_argument("case " + id + " " + refusal);
}

}  // namespace sdpa::conformance
