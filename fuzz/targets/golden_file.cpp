// The golden loader: mutated HDF5 files (the seeds are small golden files) give a clear error
// naming the file (std::runtime_error or std::invalid_argument, golden/golden_file.hpp), or
// load; never a crash, a leak or another exception. Every case of a file that opens is
// loaded too.
#include "golden/golden_file.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "fuzz/finding.hpp"

using namespace sdpa;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/sdpa-cts-fuzz-golden-" + std::to_string(getpid()) + ".h5";
  if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  } else {
    return 0;
  }
  auto check = [&](const std::exception& e) {
    if (std::string(e.what()).find(path) == std::string::npos) {
      fuzz::finding(std::string("a golden-file error that does not name the file: ") + e.what(),
                    "sdpa-cts golden verify FILE (the input)");
    }
  };
  try {
    golden::GoldenFile file(path);
    for (const auto& id : file.case_ids()) {
      (void)file.load(id, golden::GoldenFile::Outputs::optional);
      (void)file.load(id);
    }
    for (const auto& name : file.mha_case_names()) (void)file.load_mha(name);
  } catch (const std::runtime_error& e) {
    check(e);
  } catch (const std::invalid_argument& e) {
    check(e);
  } catch (const std::exception& e) {
    fuzz::finding(std::string("a golden file raised ") + e.what(),
                  "sdpa-cts golden verify FILE (the input)");
  }
  return 0;
}
