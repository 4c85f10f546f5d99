// The golden loader: mutated HDF5 files (the seeds are small golden files) give a clear error
// naming the file (std::runtime_error or std::invalid_argument, golden/golden_file.hpp), or
// load; never a crash, a leak or another exception. Every case of a file that opens is
// loaded too.
//
// The file is read as users read it, in a child process first (golden/isolated_read.hpp):
// libhdf5's own crashes on corrupt files end there as a ChildReadError. A file the child
// read to the end is read again in this process, where libFuzzer sees the coverage, and must
// read again. A file that failed is not: libhdf5 leaks on some clean errors (its metadata
// cache, on a failed H5Fopen or H5Dopen2) and keeps state that later opens trip on, and the
// loader never reads such a file in the caller's process either. So libFuzzer is guided by
// the coverage of files that load, and mutates them into the ones that fail.
#include "golden/golden_file.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "fuzz/finding.hpp"
#include "golden/isolated_read.hpp"

using namespace sdpa;

namespace {

constexpr const char* kRepro = "sdpa-cts golden verify FILE (the input)";

// Reads everything the file holds; returns "" or the error's message.
std::string read_all(const std::string& path, golden::GoldenFile::Reading reading) {
  try {
    golden::GoldenFile file(path, reading);
    for (const auto& id : file.case_ids()) {
      (void)file.load(id, golden::GoldenFile::Outputs::optional);
      (void)file.load(id);
    }
    for (const auto& name : file.mha_case_names()) (void)file.load_mha(name);
    return "";
  } catch (const golden::ChildReadError&) {
    throw;
  } catch (const std::runtime_error& e) {
    return e.what();
  } catch (const std::invalid_argument& e) {
    return e.what();
  } catch (const std::exception& e) {
    fuzz::finding(std::string("a golden file raised ") + e.what(), kRepro);
  }
  return "";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/sdpa-cts-fuzz-golden-" + std::to_string(getpid()) + ".h5";
  if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  } else {
    return 0;
  }
  std::string isolated;
  try {
    isolated = read_all(path, golden::GoldenFile::Reading::isolated);
  } catch (const golden::ChildReadError& e) {
    if (std::string(e.what()).find(path) == std::string::npos) {
      fuzz::finding(std::string("a child-read error that does not name the file: ") + e.what(),
                    kRepro);
    }
    return 0;  // libhdf5 failed in the child: a clear error, and nothing to read here
  }
  if (!isolated.empty() && isolated.find(path) == std::string::npos) {
    fuzz::finding("a golden-file error that does not name the file: " + isolated, kRepro);
  }
  if (!isolated.empty()) return 0;
  const std::string in_process = read_all(path, golden::GoldenFile::Reading::in_process);
  if (!in_process.empty()) {
    fuzz::finding("the child read the whole file, the in-process read failed: " + in_process,
                  kRepro);
  }
  return 0;
}
