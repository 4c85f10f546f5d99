// Reading an untrusted file in a child process.
//
// libhdf5 is not hardened against corrupt files: fuzzing found inputs on which it frees
// memory it still uses, asks for hundreds of gigabytes from a corrupt header size, or
// never returns (docs/FUZZING.md, "The golden loader"). A golden or results file therefore
// is read once in a forked child first. Whatever the child does to itself (a crash, an
// abort, a sanitizer report, a hang, an exhausted address space) becomes one clear error
// in the caller, naming the file; the caller's process, its open files and what it has
// already written are untouched. The child reports what it could not read, so the caller
// only asks libhdf5 for what the child read without an error.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

namespace sdpa::golden {

// How long the child may take before it is killed and the file reported as unreadable.
inline constexpr int kIsolatedReadTimeoutSeconds = 300;

// The child did not finish `read`: it died on a signal, exited without a word (an abort, a
// sanitizer report) or ran past its time. The message names the file and what happened.
class ChildReadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Runs `read` in a forked child. Returns what it returned; rethrows the error it threw
// (std::invalid_argument as std::invalid_argument, anything else as std::runtime_error,
// with the child's message); throws ChildReadError naming `path` and what happened when
// the child died, exited otherwise, or ran past `timeout_seconds`.
std::string read_in_child(const std::string& path, const std::function<std::string()>& read,
                          int timeout_seconds = kIsolatedReadTimeoutSeconds);

}  // namespace sdpa::golden
