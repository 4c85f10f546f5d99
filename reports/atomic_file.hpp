// Writing a file so that readers see either its old content or its new content, never a part.
#pragma once

#include <string>
#include <string_view>

namespace sdpa::reports {

// Writes `content` to a new temporary file in the directory of `path` (named
// ".<file name>.tmp-<pid>-<n>"), flushes it to disk (fsync), renames it over `path` and syncs the
// directory. On any failure the temporary file is removed, `path` keeps its previous content and
// std::runtime_error says "cannot write '<path>': <step>: <system error>". A crash or signal
// while writing can leave the hidden temporary file behind, never a partial `path`.
void write_file_atomically(const std::string& path, std::string_view content);

}  // namespace sdpa::reports
