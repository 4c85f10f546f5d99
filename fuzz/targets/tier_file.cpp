// Tier files (and the profile lines built on them): any text gives entries or an error that
// names the file and line (std::invalid_argument), never another exception or a crash.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "conformance/engine/tier.hpp"
#include "fuzz/finding.hpp"
#include "fuzz/fuzz_input.hpp"

using namespace sdpa;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/sdpa-cts-fuzz-tier-" + std::to_string(getpid()) + ".tier";
  if (size > 8192) return 0;
  if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  } else {
    return 0;
  }
  try {
    (void)conformance::load_tier_file(path, conformance::default_tiers_dir(),
                                      conformance::default_source_dir(),
                                      [](const std::string&, const std::string&) { return false; });
  } catch (const std::invalid_argument& e) {
    if (std::string(e.what()).find(path) == std::string::npos) {
      fuzz::finding(std::string("a tier error that does not name the file: ") + e.what(),
                    "sdpa-cts run --tier FILE (the input)");
    }
  } catch (const std::exception& e) {
    fuzz::finding(std::string("a tier file raised ") + e.what(),
                  "sdpa-cts run --tier FILE (the input)");
  }
  return 0;
}
