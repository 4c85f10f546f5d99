// Writing golden-schema files (golden/SCHEMA.md) with the HDF5 C API: the inputs of each
// case in their element type, and the outputs as f64 when there are any. `sdpa-cts cases
// export` writes results files this way (inputs only: a user fills in the outputs of their
// framework), and tests write captured files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/case_buffers.hpp"
#include "core/case_id.hpp"

namespace sdpa::golden {

struct CaseToWrite {
  const Case* c = nullptr;                       // the case (its canonical ID names the group)
  const InputBuffers* inputs = nullptr;          // its inputs, laid out as the problem says
  const std::vector<double>* o = nullptr;        // [B, Hq, L, Dv], or null: not written
  const std::vector<double>* lse = nullptr;      // [B, Hq, L], or null
  const std::vector<double>* weights = nullptr;  // [B, Hq, L, S], or null
  // A backward case: dO is inputs->d_out (always written); the gradients when not null.
  const std::vector<double>* dq = nullptr;     // [B, Hq, L, Dqk]
  const std::vector<double>* dk = nullptr;     // [B, Hkv, S, Dqk]
  const std::vector<double>* dv = nullptr;     // [B, Hkv, S, Dv]
  const std::vector<double>* dbias = nullptr;  // d bias: the mask's stored shape (dbias)
};

struct FileAttributes {
  std::string generator;          // what made the file
  std::string generator_version;  // its version
  std::int64_t precision_digits;  // significant digits of the outputs' arithmetic
  std::string set;                // optional set name ("" = none)
};

// Writes every case into a new file at `path`: schema version 2 when a case is backward (its
// dO, and its gradients when given), else version 1 (written to a temporary name first, then
// renamed: a failure leaves any existing file as it was). Throws std::runtime_error naming
// the file and the dataset on an HDF5 error.
void write_golden_file(const std::string& path, const FileAttributes& attributes,
                       const std::vector<CaseToWrite>& cases);

}  // namespace sdpa::golden
