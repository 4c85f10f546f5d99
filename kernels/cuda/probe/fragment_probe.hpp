// The fragment probe (docs/KERNELS.md, "The fragment probe"): the first check a GPU gets.
// One warp runs ldmatrix, ldmatrix.trans and mma.sync (f16 and bf16) on small exact integers,
// and every lane's registers are compared bit for bit with the host emulator's, so that a
// fragment layout the emulator gets wrong shows in one line, before any kernel is judged.
// Rounding cases (sums that are not exact in f32) then tell which model of the tensor cores'
// rounding the GPU follows: the emulator's ideal one or a measured one (MmaRounding).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/device.hpp"

namespace sdpa::cuda::probe {

// One input of the probe.
struct ProbeCase {
  std::string name;      // "layout f16", "rounding: block order bf16", ...
  std::string what;      // what it shows, one line
  bool bf16 = false;     // element type of A and B (else f16)
  bool layout = false;   // exact sums: every model gives the same bits (else a rounding case)
  std::vector<float> a;  // 16 x 16, row-major (values of the element type)
  std::vector<float> b;  // 16 x 16, k x n, row-major
  std::vector<float> c;  // 32 lanes x 4 accumulators
};

// The probe's cases: layout f16 and bf16, then the rounding cases of both types.
std::vector<ProbeCase> probe_cases();

// Every lane's 16 words (fragment_probe_body.hpp): 32 x 16.
using ProbeWords = std::vector<std::uint32_t>;

// The case on the host emulator with the given mma rounding.
ProbeWords run_emulated(const ProbeCase& c, const MmaRounding& rounding);

// The case on this process's GPU (device 0). Throws std::runtime_error naming the problem in
// a build without CUDA or on a CUDA error.
ProbeWords run_on_gpu(const ProbeCase& c);

// Where two runs differ, one line each ("lane 3, mma n0-7 c1: 0x3f800000 vs 0x3f800001"),
// at most `limit` lines; empty when they are the same bits.
std::vector<std::string> differences(const ProbeWords& x, const ProbeWords& y, std::size_t limit);

// The name of word `w` of a lane ("ldmatrix A r0", "ldmatrix.trans B r2", "mma n0-7 c1").
std::string word_name(int w);

}  // namespace sdpa::cuda::probe
