// The directories a merge reads must be distinct and must not include the one it writes:
// the same directory named twice would count its shard twice.
#pragma once

#include <string>
#include <vector>

namespace sdpa::cli {

// Throws std::invalid_argument naming the repeated directory (`command` starts the message).
void check_distinct_dirs(const std::string& command, const std::vector<std::string>& dirs,
                         const std::string& out);

}  // namespace sdpa::cli
