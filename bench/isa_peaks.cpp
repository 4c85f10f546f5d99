// Peak arithmetic rates of the vector instructions the CPU kernels use, measured with
// register-resident loops: 24 independent accumulators written in inline assembly, so no
// load or store can limit the rate (a loop whose accumulators live in memory measures the
// store port instead: one 64-byte store per cycle caps zmm FMAs at one per cycle).
//
//   build/release/bench/sdpa-cts-isa-peaks
//
// Prints one JSON object: GFLOP/s for 1 thread and for all threads of vfmadd231ps (zmm,
// ymm) and, when the CPU has AVX512-BF16, vdpbf16ps (zmm, ymm); best of 50 runs per thread.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

#define SDPA_I(op, r, n) op " %%" r "0, %%" r "0, %%" r #n "\n\t"
#define SDPA_24(op, r)                                                                        \
  SDPA_I(op, r, 1)                                                                            \
  SDPA_I(op, r, 2)                                                                            \
  SDPA_I(op, r, 3) SDPA_I(op, r, 4) SDPA_I(op, r, 5) SDPA_I(op, r, 6) SDPA_I(op, r, 7)        \
      SDPA_I(op, r, 8) SDPA_I(op, r, 9) SDPA_I(op, r, 10) SDPA_I(op, r, 11) SDPA_I(op, r, 12) \
          SDPA_I(op, r, 13) SDPA_I(op, r, 14) SDPA_I(op, r, 15) SDPA_I(op, r, 16)             \
              SDPA_I(op, r, 17) SDPA_I(op, r, 18) SDPA_I(op, r, 19) SDPA_I(op, r, 20)         \
                  SDPA_I(op, r, 21) SDPA_I(op, r, 22) SDPA_I(op, r, 23) SDPA_I(op, r, 24)
#define SDPA_CLOBBER                                                                            \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",      \
      "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", \
      "xmm21", "xmm22", "xmm23", "xmm24"

enum Kind { fma_zmm, fma_ymm, dp_zmm, dp_ymm };

// Seconds for `iters` blocks of 24 instructions (inputs are zero: no denormal slow paths).
__attribute__((target("avx512f,avx512bf16,avx512vl"))) double run(Kind k, long iters) {
  asm volatile("vpxord %%zmm0, %%zmm0, %%zmm0" ::: "xmm0");
  const double t0 = now();
  for (long i = 0; i < iters; ++i) {
    switch (k) {
      case fma_zmm:
        asm volatile(SDPA_24("vfmadd231ps", "zmm")::: SDPA_CLOBBER);
        break;
      case fma_ymm:
        asm volatile(SDPA_24("vfmadd231ps", "ymm")::: SDPA_CLOBBER);
        break;
      case dp_zmm:
        asm volatile(SDPA_24("vdpbf16ps", "zmm")::: SDPA_CLOBBER);
        break;
      case dp_ymm:
        asm volatile(SDPA_24("vdpbf16ps", "ymm")::: SDPA_CLOBBER);
        break;
    }
  }
  return now() - t0;
}

// FLOP per instruction: FMA 2 per lane, vdpbf16ps 4 per f32 lane.
double flop(Kind k) { return k == fma_zmm ? 32 : k == fma_ymm ? 16 : k == dp_zmm ? 64 : 32; }

double rate(Kind k, int threads) {
  double total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
  {
    const long iters = 100000;
    double best = 1e30;
    for (int r = 0; r < 50; ++r) best = std::min(best, run(k, iters));
    total += 24.0 * flop(k) * iters / best / 1e9;
  }
  return total;
}

}  // namespace

int main() {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f")) {
    std::printf("{\"error\": \"no AVX-512 on this CPU\"}\n");
    return 1;
  }
  const bool bf16 = __builtin_cpu_supports("avx512bf16");
  const int all = omp_get_max_threads();
  std::printf("{\"threads\": %d", all);
  const char* names[] = {"fma_zmm", "fma_ymm", "vdpbf16ps_zmm", "vdpbf16ps_ymm"};
  for (Kind k : {fma_zmm, fma_ymm, dp_zmm, dp_ymm}) {
    if ((k == dp_zmm || k == dp_ymm) && !bf16) continue;
    std::printf(", \"%s_gflops_1t\": %.1f, \"%s_gflops_all\": %.1f", names[k], rate(k, 1), names[k],
                rate(k, all));
  }
  std::printf("}\n");
}
