// Writes golden files the way a user capturing another framework would (golden/SCHEMA.md):
// inputs in their element type, outputs as f64, with the file's precision_digits. Test
// support for the captured-file bound (conformance/judge.hpp capture_unit).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/case_buffers.hpp"
#include "core/case_id.hpp"

namespace sdpa::golden::testing {

struct CapturedCase {
  Case c;                    // its problem (dense bhsd layouts only)
  const InputBuffers* in;    // the inputs fed to the "framework"
  std::vector<double> o;     // [B, Hq, L, Dv]
  std::vector<double> lse;   // [B, Hq, L]
};

// Writes the cases into a new file at `path` with root attribute precision_digits = digits.
void write_capture(const std::string& path, std::int64_t digits,
                   const std::vector<CapturedCase>& cases);

}  // namespace sdpa::golden::testing
