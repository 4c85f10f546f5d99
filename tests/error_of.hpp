// Test helper: the message of the std::invalid_argument a call throws, for tests of error
// messages (which name the field, file or line at fault).
#pragma once

#include <stdexcept>
#include <string>

namespace sdpa::testing_util {

// The message of the std::invalid_argument `f` throws ("" when it throws none).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace sdpa::testing_util
