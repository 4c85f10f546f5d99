// One word for a POSIX shell: the repro lines, hints and command lines the suite prints are
// pasted into a shell as they are.
#pragma once

#include <string>

namespace sdpa {

// `s` in single quotes, each ' written as '\'' (safe for any byte but NUL).
std::string shell_quote(const std::string& s);

}  // namespace sdpa
