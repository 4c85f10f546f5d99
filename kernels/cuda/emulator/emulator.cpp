#include "kernels/cuda/emulator/emulator.hpp"

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <vector>

#include "core/dtype.hpp"

// AddressSanitizer must be told about every stack switch (its fiber API), or it reports the
// fibers' stacks as errors.
#if defined(__SANITIZE_ADDRESS__)
#define SDPA_CTS_ASAN_FIBERS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SDPA_CTS_ASAN_FIBERS 1
#endif
#endif
#if defined(SDPA_CTS_ASAN_FIBERS)
extern "C" {
void __asan_unpoison_memory_region(void const volatile* addr, std::size_t size);
void __sanitizer_start_switch_fiber(void** fake_stack_save, const void* bottom, std::size_t size);
void __sanitizer_finish_switch_fiber(void* fake_stack_save, const void** bottom_old,
                                     std::size_t* size_old);
}
#endif

namespace sdpa::cuda::emu {
namespace {

// ---------------------------------------------------------------- fibers

constexpr std::size_t kStack = 256 * 1024;

// A stack switch. Every emulated thread is a fiber that runs until its next collective
// (barrier, shuffle, mma) and switches back to the block's scheduler, so a kernel switches
// millions of times. glibc's swapcontext makes a system call each time (it saves and restores
// the signal mask): on x86-64 this switch keeps only what the SysV ABI has the callee keep
// (rbx, rbp, r12-r15, the stack pointer, MXCSR and the x87 control word), in user space.
// Measured on one decode case of the ci tier (cuda.flash, L = 1, S = 2048, 32 heads): 115 s
// with swapcontext, docs/KERNELS.md "The emulator" has the figure with this switch.
#if defined(__x86_64__)
extern "C" void sdpa_emu_switch(void** save_sp, void* load_sp);
asm(R"(
  .text
  .globl sdpa_emu_switch
  .type sdpa_emu_switch, @function
sdpa_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size sdpa_emu_switch, .-sdpa_emu_switch
)");

// A stack pointer that, switched to, starts `start` on the top of [stack, stack + size): the
// frame sdpa_emu_switch pops (the current MXCSR and control word, six zero registers, `start`
// as the return address) above an empty return slot, aligned as after a call.
void* initial_stack(char* stack, std::size_t size, void (*start)()) {
  const auto top = reinterpret_cast<std::uintptr_t>(stack + size) & ~std::uintptr_t{15};
  auto* slot = reinterpret_cast<std::uint64_t*>(top);
  *--slot = 0;  // the empty return slot, at 16n + 8 as a return address is on a call
  *--slot = reinterpret_cast<std::uint64_t>(start);
  for (int r = 0; r < 6; ++r) *--slot = 0;
  std::uint32_t control[2] = {};
  asm volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(control[0]), "=m"(control[1]));
  --slot;
  std::memcpy(slot, control, sizeof control);
  return slot;
}

struct Context {
  void* sp = nullptr;
};
void switch_context(Context& from, const Context& to) { sdpa_emu_switch(&from.sp, to.sp); }
#else
struct Context {
  ucontext_t uc{};
};
void switch_context(Context& from, const Context& to) {
  swapcontext(&from.uc, const_cast<ucontext_t*>(&to.uc));
}
#endif

struct Copy {
  unsigned char* dst;
  const unsigned char* src;
  int bytes;
};

struct Barrier {
  int participants = 0;
  int arrived = 0;
  unsigned long long generation = 0;
};

struct Slot {
  unsigned u[6] = {};  // mma: a0..a3, b0, b1
  float f[4] = {};     // mma: c; shuffles: f[0]
  const void* p = nullptr;
  bool flag = false;
};

struct Fiber {
  Context context;
  std::vector<char> stack;
  int tid = 0;
  bool done = false;
  std::vector<std::vector<Copy>> groups;  // committed cp.async groups, oldest first
  std::vector<Copy> open;                 // not committed yet
};

struct Warp {
  Barrier barrier;
  std::array<Slot, 32> slots;
};

// The last tracked access to one 16-byte chunk of shared memory (ldmatrix reads, cp.async
// writes), by warp and block-barrier generation: two warps touching a chunk in the same
// generation, one of them writing, race on a GPU (docs/KERNELS.md, "The emulator").
struct ChunkAccess {
  static constexpr unsigned long long kNever = ~0ull;
  unsigned long long read_gen = kNever, write_gen = kNever;
  int read_warp = -1, write_warp = -1;
};

struct Block {
  long long index = 0, grid = 0;
  int threads = 0;
  unsigned char* smem = nullptr;
  std::size_t smem_bytes = 0;
  std::vector<Fiber> fibers;
  std::vector<Warp> warps;
  Barrier barrier;
  std::vector<char> flags;          // sync_threads_or, one per thread
  std::vector<ChunkAccess> chunks;  // one per 16 bytes of shared memory
  std::uint64_t rng = 0;            // the block's delivery draws (cp.async copies land early)
  Context scheduler;
  const void* scheduler_stack = nullptr;  // the scheduler's stack (AddressSanitizer's fibers)
  std::size_t scheduler_stack_size = 0;
  int current = -1;
  unsigned long long progress = 0;  // arrivals, releases and finished threads
  std::string error;
  const std::function<void(unsigned char*)>* body = nullptr;
  MmaRounding mma;  // how mma.sync rounds in this launch
};

Block* g_block = nullptr;  // the block being run (one OS thread runs the emulator)

Fiber& me() {
  if (!g_block || g_block->current < 0) throw std::logic_error("emulator: not inside launch()");
  return g_block->fibers[static_cast<std::size_t>(g_block->current)];
}

// Stack switches, announced to AddressSanitizer when it is on.
void to_fiber(Block& b, Fiber& f) {
#if defined(SDPA_CTS_ASAN_FIBERS)
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, f.stack.data(), f.stack.size());
  switch_context(b.scheduler, f.context);
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);  // back on the scheduler's stack
#else
  switch_context(b.scheduler, f.context);
#endif
}
// First code on a fiber's stack: learns the scheduler's stack (the one switched from).
void entered_fiber(Block& b) {
#if defined(SDPA_CTS_ASAN_FIBERS)
  __sanitizer_finish_switch_fiber(nullptr, &b.scheduler_stack, &b.scheduler_stack_size);
#else
  (void)b;
#endif
}

void yield() {
  Fiber& f = me();
#if defined(SDPA_CTS_ASAN_FIBERS)
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, g_block->scheduler_stack, g_block->scheduler_stack_size);
  switch_context(f.context, g_block->scheduler);
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#else
  switch_context(f.context, g_block->scheduler);
#endif
}

std::uint64_t g_seed = 1;  // set_seed(): the seed of every launch's cp.async delivery draws

// splitmix64: the delivery draws (the emulator's own; no statistical demands).
std::uint64_t next_draw(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void run_copies(const std::vector<Copy>& group);

// A committed cp.async group may land at any point between its commit and the wait that
// needs it: at each collective of its thread, each pending group lands with probability 1/2
// (seeded, so a run is reproducible), the rest at the wait.
void deliver_some(Fiber& f) {
  for (std::size_t i = 0; i < f.groups.size();) {
    if (next_draw(g_block->rng) & 1) {
      run_copies(f.groups[i]);
      f.groups.erase(f.groups.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
}

void arrive_and_wait(Barrier& b) {
  if (!me().groups.empty()) deliver_some(me());
  const unsigned long long generation = b.generation;
  ++g_block->progress;
  if (++b.arrived == b.participants) {
    b.arrived = 0;
    ++b.generation;
    return;
  }
  while (b.generation == generation) yield();
}

Warp& my_warp() { return g_block->warps[static_cast<std::size_t>(me().tid / 32)]; }
int lane() { return me().tid % 32; }

void entry() {
  Block& b = *g_block;
  entered_fiber(b);
  Fiber& f = b.fibers[static_cast<std::size_t>(b.current)];
  try {
    (*b.body)(b.smem);
  } catch (const std::exception& e) {
    if (b.error.empty()) b.error = "thread " + std::to_string(f.tid) + ": " + e.what();
  }
  f.done = true;
  ++b.progress;
#if defined(SDPA_CTS_ASAN_FIBERS)
  // This fiber ends (a null fake stack: it is not switched back to).
  __sanitizer_start_switch_fiber(nullptr, b.scheduler_stack, b.scheduler_stack_size);
#endif
#if defined(__x86_64__)
  // Nothing to return to: back to the scheduler, which never resumes a finished fiber.
  switch_context(f.context, b.scheduler);
#endif
  // (ucontext: returning goes to uc_link, the scheduler.)
}

void check_shared(const void* p, std::size_t bytes, const char* what) {
  const auto* c = static_cast<const unsigned char*>(p);
  if (c < g_block->smem || c + bytes > g_block->smem + g_block->smem_bytes) {
    throw std::runtime_error(std::string(what) + ": address outside shared memory");
  }
  if (static_cast<std::uintptr_t>(c - g_block->smem) % 16 != 0) {
    throw std::runtime_error(std::string(what) + ": address not 16-byte aligned");
  }
}

// Records a tracked access to the 16 bytes at `p` and reports a race: a write to a chunk
// another warp read, or a read of a chunk another warp wrote, with no __syncthreads between.
void track(const void* p, bool write, const char* what) {
  Block& b = *g_block;
  const auto off = static_cast<std::size_t>(static_cast<const unsigned char*>(p) - b.smem);
  ChunkAccess& c = b.chunks[off / 16];
  const unsigned long long gen = b.barrier.generation;
  const int warp = me().tid / 32;
  const auto race = [&](const char* kind, int other) {
    throw std::runtime_error(
        std::string(kind) + " hazard: " + what + " by thread " + std::to_string(me().tid) +
        " (warp " + std::to_string(warp) + ") on shared bytes [" + std::to_string(off / 16 * 16) +
        ", " + std::to_string(off / 16 * 16 + 16) + ") that warp " + std::to_string(other) +
        (write ? " read" : " wrote") + " with no __syncthreads between");
  };
  if (write) {
    if (c.read_gen == gen && c.read_warp != warp) race("write-after-read", c.read_warp);
    c.write_gen = gen;
    c.write_warp = warp;
  } else {
    if (c.write_gen == gen && c.write_warp != warp) race("read-after-write", c.write_warp);
    c.read_gen = gen;
    c.read_warp = warp;
  }
}

void run_copies(const std::vector<Copy>& group) {
  for (const Copy& c : group) {
    std::memset(c.dst, 0, 16);
    if (c.bytes > 0) std::memcpy(c.dst, c.src, static_cast<std::size_t>(c.bytes));
  }
}

std::uint16_t u16_at(const void* row, int index) {
  std::uint16_t v;
  std::memcpy(&v, static_cast<const unsigned char*>(row) + 2 * index, 2);
  return v;
}

float element(unsigned reg, int half, bool bf16) {
  const auto bits = static_cast<std::uint16_t>(half ? reg >> 16 : reg & 0xffffu);
  return bf16 ? sdpa::bf16_to_float(bits) : sdpa::half_to_float(bits);
}

// Runs every thread of block `blk` to completion (round-robin, switching at collectives).
void run_block(Block& b, long long blk) {
  const int threads = b.threads;
  b.index = blk;
  // A GPU leaves shared memory as the previous block left it: poison it (0xFF bytes are NaN
  // in f32, f16 and bf16), so that a kernel reading what it never wrote fails the judge.
  std::memset(b.smem, 0xFF, b.smem_bytes);
  b.chunks.assign((b.smem_bytes + 15) / 16, ChunkAccess{});
  b.rng = g_seed ^ (static_cast<std::uint64_t>(blk) * 0xd1b54a32d192ed03ull);
  b.barrier = Barrier{threads, 0, 0};
  b.warps.assign(static_cast<std::size_t>(threads / 32), Warp{});
  for (auto& w : b.warps) w.barrier.participants = 32;
  for (int t = 0; t < threads; ++t) {
    Fiber& f = b.fibers[static_cast<std::size_t>(t)];
    f.tid = t;
    f.done = false;
    f.groups.clear();
    f.open.clear();
#if defined(__x86_64__)
#if defined(SDPA_CTS_ASAN_FIBERS)
    // A finished fiber's frames were never returned from: their redzones are still poisoned
    // in AddressSanitizer's shadow (swapcontext's interceptor clears a new stack; this switch
    // has none), so the stack is unpoisoned before it is laid out again.
    __asan_unpoison_memory_region(f.stack.data(), f.stack.size());
#endif
    f.context.sp = initial_stack(f.stack.data(), f.stack.size(), entry);
#else
    getcontext(&f.context.uc);
    f.context.uc.uc_stack.ss_sp = f.stack.data();
    f.context.uc.uc_stack.ss_size = f.stack.size();
    f.context.uc.uc_link = &b.scheduler.uc;
    makecontext(&f.context.uc, entry, 0);
#endif
  }
  // Round-robin until every thread is done; a full pass without progress is a deadlock.
  for (;;) {
    bool all_done = true;
    const unsigned long long before = b.progress;
    for (int t = 0; t < threads; ++t) {
      Fiber& f = b.fibers[static_cast<std::size_t>(t)];
      if (f.done) continue;
      all_done = false;
      b.current = t;
      to_fiber(b, f);
      b.current = -1;
    }
    if (!b.error.empty()) {
      throw std::runtime_error("emulator: block " + std::to_string(blk) + ", " + b.error);
    }
    if (all_done) break;
    if (b.progress == before) {
      int waiting = 0;
      for (const auto& f : b.fibers) waiting += f.done ? 0 : 1;
      throw std::runtime_error("emulator: block " + std::to_string(blk) + ": deadlock, " +
                               std::to_string(waiting) + " of " + std::to_string(threads) +
                               " threads wait at a barrier the others never reach");
    }
  }
}

}  // namespace

// The f16/bf16 conversions are core/dtype's, the project's one definition of them (round to
// nearest even, overflow to infinity, NaN kept quiet with its sign), so that the emulated
// kernels round exactly as the CPU kernels and the reference do
// (tests/kernels/emulator_conversions_test.cpp).
Bf16::Bf16(float x) : bits(sdpa::float_to_bf16(x)) {}
Half::Half(float x) : bits(sdpa::float_to_half(x)) {}

void set_seed(std::uint64_t seed) { g_seed = seed; }

float block_fma(const float* a, const float* b, int n, float c, int input_emin, int extra_bits) {
  // Products of f16 / bf16 values are exact in double (22 significant bits at most).
  bool finite = std::isfinite(c);
  for (int i = 0; i < n; ++i) finite = finite && std::isfinite(static_cast<double>(a[i]) * b[i]);
  if (!finite) {
    double s = c;
    for (int i = 0; i < n; ++i) s += static_cast<double>(a[i]) * b[i];
    return static_cast<float>(s);  // NaN, or the infinity
  }
  // The alignment exponent: the largest of the products' exponent sums (subnormal inputs at
  // the input type's smallest exponent) and the accumulator's (f32 subnormals at -126).
  int top = std::numeric_limits<int>::min();
  for (int i = 0; i < n; ++i) {
    if (a[i] == 0 || b[i] == 0) continue;
    top = std::max(top,
                   std::max(std::ilogb(a[i]), input_emin) + std::max(std::ilogb(b[i]), input_emin));
  }
  if (c != 0) top = std::max(top, std::max(std::ilogb(c), -126));
  if (top == std::numeric_limits<int>::min()) return 0.0f;
  // Every term truncated toward zero to the grid 2^(top - 23 - extra_bits); the truncated
  // terms are integers below 2^(26 + extra_bits) on it, so their sum in double is exact.
  const int grid = top - 23 - extra_bits;
  double sum = std::trunc(std::ldexp(static_cast<double>(c), -grid));
  for (int i = 0; i < n; ++i) {
    sum += std::trunc(std::ldexp(static_cast<double>(a[i]) * b[i], -grid));
  }
  const double r = std::ldexp(sum, grid);
  // Truncated to f32 (round toward zero): at 2^128 and above the exponent overflows.
  if (std::fabs(r) >= 0x1p128) return std::copysign(std::numeric_limits<float>::infinity(), r);
  float f = static_cast<float>(r);
  if (std::fabs(static_cast<double>(f)) > std::fabs(r)) f = std::nextafter(f, 0.0f);
  return f;
}

void launch(long long blocks, int threads, std::size_t smem_bytes,
            const std::function<void(unsigned char* smem)>& body, const MmaRounding& mma) {
  if (mma.block != 0 && (mma.block < 1 || 16 % mma.block != 0)) {
    throw std::invalid_argument("emulator: an mma block must divide the 16 products");
  }
  if (threads <= 0 || threads % 32 != 0)
    throw std::invalid_argument("emulator: threads per block must be a positive multiple of 32");
  Block b;
  b.grid = blocks;
  b.threads = threads;
  b.smem_bytes = smem_bytes;
  std::vector<unsigned char> smem(smem_bytes + 16);
  b.smem = smem.data();
  b.fibers.resize(static_cast<std::size_t>(threads));
  for (auto& f : b.fibers) f.stack.resize(kStack);
  b.body = &body;
  b.mma = mma;
  b.flags.assign(static_cast<std::size_t>(threads), 0);
  g_block = &b;
  struct Reset {
    ~Reset() { g_block = nullptr; }
  } reset;
  for (long long blk = 0; blk < blocks; ++blk) run_block(b, blk);
}

namespace ops {

float to_float(Bf16 x) { return sdpa::bf16_to_float(x.bits); }
float to_float(Half x) { return sdpa::half_to_float(x.bits); }
Bf16 to_bf16(float x) { return Bf16(x); }
Half to_half(float x) { return Half(x); }

int thread_x() { return me().tid; }
long long block_x() { return g_block->index; }
long long grid_dim_x() { return g_block->grid; }

void sync_threads() { arrive_and_wait(g_block->barrier); }

bool sync_threads_or(bool x) {
  g_block->flags[static_cast<std::size_t>(me().tid)] = x ? 1 : 0;
  arrive_and_wait(g_block->barrier);
  bool any = false;
  for (char f : g_block->flags) any |= f != 0;
  arrive_and_wait(g_block->barrier);
  return any;
}

void sync_warp() { arrive_and_wait(my_warp().barrier); }

float shfl_xor(float x, int mask) {
  Warp& w = my_warp();
  const int l = lane();
  w.slots[static_cast<std::size_t>(l)].f[0] = x;
  arrive_and_wait(w.barrier);
  const float r = w.slots[static_cast<std::size_t>((l ^ mask) & 31)].f[0];
  arrive_and_wait(w.barrier);
  return r;
}

bool any_in_warp(bool x) {
  Warp& w = my_warp();
  w.slots[static_cast<std::size_t>(lane())].flag = x;
  arrive_and_wait(w.barrier);
  bool any = false;
  for (const auto& s : w.slots) any |= s.flag;
  arrive_and_wait(w.barrier);
  return any;
}

void atomic_add(int* p, int v) { *p += v; }

void ldmatrix_x4(unsigned (&r)[4], const void* smem, bool trans) {
  check_shared(smem, 16, trans ? "ldmatrix.trans" : "ldmatrix");
  track(smem, false, trans ? "ldmatrix.trans" : "ldmatrix");
  Warp& w = my_warp();
  const int l = lane();
  w.slots[static_cast<std::size_t>(l)].p = smem;
  arrive_and_wait(w.barrier);
  for (int m = 0; m < 4; ++m) {
    std::uint16_t lo, hi;
    if (!trans) {
      const void* row = w.slots[static_cast<std::size_t>(8 * m + l / 4)].p;
      lo = u16_at(row, 2 * (l % 4));
      hi = u16_at(row, 2 * (l % 4) + 1);
    } else {
      lo = u16_at(w.slots[static_cast<std::size_t>(8 * m + 2 * (l % 4))].p, l / 4);
      hi = u16_at(w.slots[static_cast<std::size_t>(8 * m + 2 * (l % 4) + 1)].p, l / 4);
    }
    r[m] = static_cast<unsigned>(lo) | (static_cast<unsigned>(hi) << 16);
  }
  arrive_and_wait(w.barrier);
}

void mma_16816(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1, bool bf16) {
  Warp& w = my_warp();
  const int l = lane();
  Slot& mine = w.slots[static_cast<std::size_t>(l)];
  for (int i = 0; i < 4; ++i) mine.u[i] = a[i];
  mine.u[4] = b0;
  mine.u[5] = b1;
  arrive_and_wait(w.barrier);
  const int g = l / 4, t = l % 4;
  const MmaRounding& model = g_block->mma;
  float d[4];
  for (int e = 0; e < 4; ++e) {
    const int row = g + (e / 2) * 8, col = 2 * t + (e % 2);
    float av[16], bv[16];
    for (int k = 0; k < 16; ++k) {
      const Slot& sa = w.slots[static_cast<std::size_t>((row % 8) * 4 + (k % 8) / 2)];
      const Slot& sb = w.slots[static_cast<std::size_t>(col * 4 + (k % 8) / 2)];
      av[k] = element(sa.u[(row / 8) + (k / 8) * 2], k % 2, bf16);
      bv[k] = element(sb.u[4 + k / 8], k % 2, bf16);
    }
    if (model.block == 0) {
      double sum = 0;  // the 16 products are exact; one rounding at the end
      for (int k = 0; k < 16; ++k) sum += static_cast<double>(av[k]) * bv[k];
      d[e] = static_cast<float>(sum + c[e]);
    } else {
      float acc = c[e];  // block FMAs in k order, each rounded as the measured model says
      for (int k = 0; k < 16; k += model.block) {
        acc = block_fma(av + k, bv + k, model.block, acc, bf16 ? -126 : -14, model.extra_bits);
      }
      d[e] = acc;
    }
  }
  arrive_and_wait(w.barrier);
  for (int e = 0; e < 4; ++e) c[e] = d[e];
}

void cp_async_16(void* smem, const void* gmem, int src_bytes) {
  check_shared(smem, 16, "cp.async");
  track(smem, true, "cp.async");
  if (src_bytes < 0 || src_bytes > 16) throw std::runtime_error("cp.async: bad source size");
  me().open.push_back(
      {static_cast<unsigned char*>(smem), static_cast<const unsigned char*>(gmem), src_bytes});
}

void cp_async_commit() {
  Fiber& f = me();
  f.groups.push_back(std::move(f.open));
  f.open.clear();
}

void cp_async_wait(int n) {
  Fiber& f = me();
  while (static_cast<int>(f.groups.size()) > n) {
    run_copies(f.groups.front());
    f.groups.erase(f.groups.begin());
  }
}

}  // namespace ops
}  // namespace sdpa::cuda::emu
