#include "fuzz/finding.hpp"

#include <cstdio>
#include <cstdlib>

namespace sdpa::fuzz {

void finding(const std::string& what, const std::string& repro) {
  std::fprintf(stderr, "FINDING: %s\n  repro: %s\n", what.c_str(), repro.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace sdpa::fuzz
