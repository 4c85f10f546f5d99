// How a fuzz target reports a finding: the case ID (or input) and a paste-able repro line on
// stderr, then abort(), so that libFuzzer keeps the input as a crash file and a corpus replay
// in CTest fails.
#pragma once

#include <string>

namespace sdpa::fuzz {

[[noreturn]] void finding(const std::string& what, const std::string& repro);

}  // namespace sdpa::fuzz
