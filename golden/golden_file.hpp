// Reading golden files (golden/SCHEMA.md) with the HDF5 C API.
//
// A golden file holds, per case, the inputs in their element type and the expected
// outputs in f64, computed by an independent arbitrary-precision implementation
// (golden/generate.py) or captured from another framework. The loader turns one case into
// the problem (parsed from the group name, the canonical case ID), guarded input buffers
// laid out as the problem's views describe (gaps and margins poisoned), and the expected
// outputs, checking everything the schema promises on the way.
//
// Errors: every failure throws, with a message that names the file, the group and the
// dataset or attribute: std::runtime_error for a file that cannot be read (missing,
// not HDF5, truncated, corrupt: HDF5's own message is appended), std::invalid_argument
// for a readable file that breaks the schema (wrong schema version, missing dataset,
// wrong shape or type, a value out of range, a group name that is not a canonical ID).
// HDF5's automatic error printing is switched off; its messages only reach ours.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/case_buffers.hpp"
#include "core/case_id.hpp"
#include "reference/mha_reference.hpp"

namespace sdpa::golden {

// The newest schema version this loader reads (it reads every version from 1: version 2 adds
// the backward's datasets), and the version of docs/SEMANTICS.md the expected outputs follow.
inline constexpr std::int64_t kSchemaVersion = 2;
inline constexpr const char* kSemanticsVersion = "1";

// Root attributes of a golden file (provenance).
struct FileInfo {
  std::string path;               // as opened
  std::int64_t schema_version;    // 1 ... kSchemaVersion
  std::string semantics_version;  // == kSemanticsVersion
  std::string generator;          // e.g. "golden/generate.py" or the capturing tool
  std::string generator_version;  // version of that generator
  std::int64_t precision_digits;  // significant decimal digits of the expected values' source
  std::string set;                // optional: "smoke", "ci", ... ("" when absent)
};

// One SDPA case: its problem, inputs and expected outputs.
struct GoldenCase {
  std::string id;               // group name = canonical case ID
  Case c;                       // parsed from the ID
  InputBuffers inputs;          // in the problem's layout (mask: uint8 or dtype), snapshot taken
  std::vector<double> o;        // [B, Hq, L, Dv] expected output (logical, padded rows 0);
                                // empty when absent from a results file
  std::vector<double> lse;      // [B, Hq, L] expected natural-log LSE (-inf: no key);
                                // empty when absent from a results file
  std::vector<double> weights;  // [B, Hq, L, S] after dropout; empty if absent
  bool has_o = true;            // the file holds o for this case (results files: maybe not)
  bool has_lse = true;          // the file holds lse for this case
  bool has_weights = false;     // the file holds weights for this case
  std::int64_t precision_digits = 0;  // the file's precision_digits (limited for captures)
  std::string family, data, note;     // optional descriptive attributes ("" when absent)
  // A backward case (bwd, schema version 2): dO is inputs.d_out; the expected gradients,
  // logical like reference::Gradients' (padding rows and absent keys 0).
  std::vector<double> dq, dk, dv;  // [B, Hq, L, Dqk], [B, Hkv, S, Dqk], [B, Hkv, S, Dv]
  bool has_gradients = false;      // the file holds dq, dk, dv for this case
  std::vector<double> dbias;       // d bias (dbias): the mask's stored shape, 1 in its
                                   // broadcast dimensions (empty when absent)
};

// One MHA case (group /mha/<name>): the module and call as attributes, the f64 arrays of
// reference::MhaInputs, and the expected output and weights.
struct MhaGoldenCase {
  std::string name;               // group name
  reference::MhaProblem problem;  // from the group's attributes
  reference::MhaInputs inputs;    // bool masks as 0 / 1
  std::vector<double> out;        // [L, B, E] ([B, L, E] with batch_first)
  std::vector<double> weights;    // [B, L, S'] or [B, H, L, S'] (need_weights), else empty
  std::string family, note;       // optional descriptive attributes
};

class GoldenFile {
 public:
  // Where the file is read. `isolated` (the default) first reads every case in a child
  // process (golden/isolated_read.hpp), so a file that crashes or hangs libhdf5 is an
  // error like any other; `in_process` trusts libhdf5 with the file (the child's own read).
  enum class Reading { isolated, in_process };
  // Opens and checks the root attributes; lists the cases. Throws as described above.
  explicit GoldenFile(const std::string& path, Reading reading = Reading::isolated);
  ~GoldenFile();
  GoldenFile(GoldenFile&&) noexcept;
  GoldenFile& operator=(GoldenFile&&) noexcept;
  GoldenFile(const GoldenFile&) = delete;
  GoldenFile& operator=(const GoldenFile&) = delete;

  const FileInfo& info() const;
  // SDPA case IDs (the groups under /sdpa), in byte order of the names.
  const std::vector<std::string>& case_ids() const;
  // Loads one SDPA case; throws std::invalid_argument for an unknown ID.
  // Whether the expected outputs must be there (golden files) or may be missing (results
  // files: the outputs of the cases a user has filled in).
  enum class Outputs { required, optional };
  GoldenCase load(const std::string& id, Outputs outputs = Outputs::required) const;
  // MHA case names (the groups under /mha), in byte order.
  const std::vector<std::string>& mha_case_names() const;
  // Loads one MHA case; throws like load().
  MhaGoldenCase load_mha(const std::string& name) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sdpa::golden
