// What the emulator shows that a zeroed, in-order host run would hide (docs/KERNELS.md, "The
// emulator"): shared memory starts poisoned, cp.async copies land at a seeded random point
// before their wait, and two warps touching a shared chunk with no barrier between, one
// writing, is a hazard. Each test plants the bug in a small kernel body and sees it caught,
// and sees the correct body pass.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/emulator/emulator.hpp"

namespace sdpa::cuda::emu {
namespace {

// The message of the error a launch throws, or "" when it runs through.
std::string launch_error(long long blocks, int threads, std::size_t smem,
                         const std::function<void(unsigned char*)>& body) {
  try {
    launch(blocks, threads, smem, body);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(EmulatorMemory, SharedMemoryStartsPoisonedInEveryBlock) {
  std::vector<unsigned> seen;
  launch(2, 32, 64, [&](unsigned char* smem) {
    if (ops::thread_x() != 0) return;
    unsigned v;
    std::memcpy(&v, smem + 16, 4);  // never written by this block
    seen.push_back(v);
    std::memset(smem, 0, 64);  // the next block must not see this
  });
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], 0xFFFFFFFFu);
  EXPECT_EQ(seen[1], 0xFFFFFFFFu);
}

// Warp 0 reads a chunk by ldmatrix; warp 1 then refills it by cp.async.
void refill(unsigned char* smem, const unsigned char* global, bool barrier) {
  const int warp = ops::thread_x() / 32, lane = ops::thread_x() % 32;
  if (warp == 0) {
    unsigned r[4];
    ops::ldmatrix_x4(r, smem + 16 * lane, false);
  }
  if (barrier) ops::sync_threads();
  if (warp == 1) ops::cp_async_16(smem + 16 * lane, global + 16 * lane, 16);
  ops::cp_async_commit();
  ops::cp_async_wait(0);
  ops::sync_threads();
}

TEST(EmulatorMemory, ARefillWithoutABarrierIsAWriteAfterReadHazard) {
  std::vector<unsigned char> global(512, 7);
  EXPECT_EQ(launch_error(1, 64, 512, [&](unsigned char* s) { refill(s, global.data(), true); }),
            "");
  const std::string e =
      launch_error(1, 64, 512, [&](unsigned char* s) { refill(s, global.data(), false); });
  EXPECT_NE(e.find("write-after-read hazard: cp.async by thread 32 (warp 1) on shared bytes [0, "
                   "16) that warp 0 read with no __syncthreads between"),
            std::string::npos)
      << e;
}

// Warp 1 fills a chunk by cp.async and waits for it; warp 0 reads it by ldmatrix with or
// without the barrier that makes another warp's copy visible.
void fill_then_read(unsigned char* smem, const unsigned char* global, bool barrier) {
  const int warp = ops::thread_x() / 32, lane = ops::thread_x() % 32;
  if (warp == 1) ops::cp_async_16(smem + 16 * lane, global + 16 * lane, 16);
  ops::cp_async_commit();
  ops::cp_async_wait(0);
  if (barrier) ops::sync_threads();
  if (warp == 0) {
    unsigned r[4];
    ops::ldmatrix_x4(r, smem + 16 * lane, false);
  }
  ops::sync_threads();
}

// Without the barrier the two warps race whichever runs first here: the emulator reports the
// race in the order it ran them (warp 0's read came first: a write-after-read).
TEST(EmulatorMemory, AnUnsynchronisedReadOfAnotherWarpsCopyIsAHazard) {
  std::vector<unsigned char> global(512, 7);
  EXPECT_EQ(
      launch_error(1, 64, 512, [&](unsigned char* s) { fill_then_read(s, global.data(), true); }),
      "");
  const std::string e =
      launch_error(1, 64, 512, [&](unsigned char* s) { fill_then_read(s, global.data(), false); });
  EXPECT_NE(e.find("hazard: cp.async by thread 32 (warp 1) on shared bytes [0, 16) that warp 0 "
                   "read with no __syncthreads between"),
            std::string::npos)
      << e;
}

// The read-after-write order: warp 1 copies and waits while warp 0 is still at earlier
// warp-level collectives (each round of the scheduler moves it one collective on).
TEST(EmulatorMemory, AReadAfterAnotherWarpsCopyWithoutABarrierIsAReadAfterWriteHazard) {
  std::vector<unsigned char> global(512, 7);
  const std::string e = launch_error(1, 64, 512, [&](unsigned char* smem) {
    const int warp = ops::thread_x() / 32, lane = ops::thread_x() % 32;
    if (warp == 1) {
      ops::cp_async_16(smem + 16 * lane, global.data() + 16 * lane, 16);
      ops::cp_async_commit();
      ops::cp_async_wait(0);
    } else {
      for (int i = 0; i < 3; ++i) ops::sync_warp();
      unsigned r[4];
      ops::ldmatrix_x4(r, smem + 16 * lane, false);
    }
    ops::sync_threads();
  });
  EXPECT_NE(e.find("read-after-write hazard: ldmatrix by thread "), std::string::npos) << e;
  EXPECT_NE(e.find("(warp 0) on shared bytes ["), std::string::npos) << e;
  EXPECT_NE(e.find("that warp 1 wrote with no __syncthreads between"), std::string::npos) << e;
}

// A committed copy may land before its wait: read without waiting, a thread sees the old
// bytes under some seeds and the new ones under others; every seed gives the same run twice.
TEST(EmulatorMemory, CopiesLandAtASeededPointBeforeTheirWait) {
  std::vector<unsigned char> global(16, 7);
  const auto first_byte_before_wait = [&](std::uint64_t seed) {
    set_seed(seed);
    unsigned char seen = 0;
    launch(1, 32, 16, [&](unsigned char* smem) {
      if (ops::thread_x() == 0) {
        std::memset(smem, 1, 16);
        ops::cp_async_16(smem, global.data(), 16);
        ops::cp_async_commit();
      }
      ops::sync_warp();  // a collective: a pending copy may land here
      if (ops::thread_x() == 0) seen = smem[0];
      ops::cp_async_wait(0);
    });
    return seen;
  };
  std::set<unsigned char> outcomes;
  for (std::uint64_t seed = 1; seed <= 16; ++seed) {
    const unsigned char a = first_byte_before_wait(seed);
    EXPECT_EQ(first_byte_before_wait(seed), a) << "seed " << seed;
    outcomes.insert(a);
  }
  set_seed(1);
  EXPECT_EQ(outcomes, (std::set<unsigned char>{1, 7}));
}

}  // namespace
}  // namespace sdpa::cuda::emu
