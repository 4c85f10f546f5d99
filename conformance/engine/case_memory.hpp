// How much host memory the harness allocates to judge one case, and how much a run lets one
// case use (docs/CONFORMANCE.md, "Memory"). A case that needs more is refused before anything
// is allocated: named on the command line, the command exits 2; in a tier or a sample, the
// record is NOT_JUDGED, never the backend's FAIL.
#pragma once

#include <cstdint>
#include <string>

#include "core/problem.hpp"

namespace sdpa::conformance {

// The harness's host memory for one case, by purpose, in bytes. The backend's own memory (its
// workspace, its copies in another memory space) is not counted. Each sum saturates at
// UINT64_MAX.
struct HarnessMemory {
  std::uint64_t inputs = 0;     // Q, K, V and the mask: guarded buffers and their snapshots
  std::uint64_t outputs = 0;    // O, LSE and the weights: guarded buffers
  std::uint64_t reference = 0;  // the reference's result and magnitudes, and the working set
                                // of the (b, h) slices it computes at once
  std::uint64_t baseline = 0;   // the quality gate's naive output (0 when the gate is skipped)
  std::uint64_t expected = 0;   // a golden file's expected values (0 for generated data)
  std::uint64_t total() const;
};

// The harness memory of judging valid problem `p`: with expected values from a golden file
// when `golden`, the reference running on `reference_threads` threads (<= 0: its default,
// omp_get_max_threads()). The reference's per-slice working copies are counted without their
// padding to whole tiles.
HarnessMemory harness_memory(const Problem& p, bool golden, int reference_threads = 0);

// This machine's physical memory in bytes (sysconf), or 0 when it cannot be told.
std::uint64_t physical_memory_bytes();

// The memory one case may use when the run sets none: half the physical memory, shared by the
// `jobs` workers that run at once (UINT64_MAX, no limit, when the physical memory is unknown).
std::uint64_t default_case_memory_limit(int jobs);

// `requested` (--max-case-memory) when it is not 0, else default_case_memory_limit(jobs).
std::uint64_t case_memory_limit(std::uint64_t requested, int jobs);

// "" when `need` fits in `limit`, else why the case is refused: "needs 45.5 TiB (N bytes) of
// host memory for the harness's buffers (inputs ..., outputs ..., reference ...); this run
// lets one case use 11.6 GiB (M bytes, --max-case-memory)".
std::string memory_refusal(const HarnessMemory& need, std::uint64_t limit);

}  // namespace sdpa::conformance
