// Commands that moved when the command line was regrouped: an old spelling is not run (its
// meaning changed or its home did), it is answered with the new one, exit 2.
//   judge ...                     -> cases judge ...
//   verify-bundle ...             -> bundle verify ...
//   golden verify --backend B F   -> run --backend B --golden F (golden verify judges the
//                                    reference only; backends get the one judge and reports)
// (`report merge` given bundles names `bundle merge` in its own error.)
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace sdpa::cli {

// The new command line for `args` (argv without the program name) when it is an old spelling,
// ready to paste; nullopt for every current command line.
std::optional<std::string> new_spelling(const std::vector<std::string>& args);

}  // namespace sdpa::cli
