// Measures the machine's ceilings that docs/PERFORMANCE.md reports figures against:
// peak FMA throughput (f64 and f32, AVX-512 and AVX2), on 1 thread and on all threads,
// and DRAM read bandwidth. Best of several runs: the development VM is noisy.
//
//   build/release/bench/sdpa-cts-ceilings
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// 12 independent FMA chains hide the FMA latency. Named variables, not an array: with an
// array GCC kept the chains in memory and stored all 12 every iteration, which measured
// store throughput (191 against isa-peaks' 578 GFLOP/s on the AMD host). Returns FLOP per
// second of one thread.
template <typename Vec, typename Fma>
double fma_rate(Fma fma, Vec x, Vec y, int lanes, long iters) {
  Vec a0 = x, a1 = x, a2 = x, a3 = x, a4 = x, a5 = x, a6 = x, a7 = x, a8 = x, a9 = x, a10 = x,
      a11 = x;
  const double t0 = now();
  for (long i = 0; i < iters; ++i) {
    a0 = fma(a0, y, x);
    a1 = fma(a1, y, x);
    a2 = fma(a2, y, x);
    a3 = fma(a3, y, x);
    a4 = fma(a4, y, x);
    a5 = fma(a5, y, x);
    a6 = fma(a6, y, x);
    a7 = fma(a7, y, x);
    a8 = fma(a8, y, x);
    a9 = fma(a9, y, x);
    a10 = fma(a10, y, x);
    a11 = fma(a11, y, x);
    asm volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5));
    asm volatile("" : "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));
  }
  const double dt = now() - t0;
  return 2.0 * lanes * 12 * iters / dt;
}

double f64_avx512(long iters) {
  return fma_rate([](__m512d a, __m512d b, __m512d c) { return _mm512_fmadd_pd(a, b, c); },
                  _mm512_set1_pd(1e-9), _mm512_set1_pd(0.999999), 8, iters);
}
double f32_avx512(long iters) {
  return fma_rate([](__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); },
                  _mm512_set1_ps(1e-9f), _mm512_set1_ps(0.999f), 16, iters);
}
double f32_avx2(long iters) {
  return fma_rate([](__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); },
                  _mm256_set1_ps(1e-9f), _mm256_set1_ps(0.999f), 8, iters);
}

// Sum of the per-thread rates of `fn` run on `threads` threads at once.
template <typename Fn>
double parallel_rate(Fn fn, int threads) {
  double total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
  total += fn();
  return total;
}

// Sum of n 64-bit words with four independent accumulators of integer adds, so the loop is
// bound by memory, not by an add's latency. (The first version summed doubles in one chain:
// on the AMD EPYC host it measured the FP add latency, 16.7 GB/s per thread, while
// cpu.mem_efficient read K and V at 23 GB/s on one thread.)
__attribute__((target("avx2"))) std::uint64_t stream_sum_avx2(const std::uint64_t* p,
                                                              std::size_t n) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    a0 = _mm256_add_epi64(a0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
    a1 = _mm256_add_epi64(a1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 4)));
    a2 = _mm256_add_epi64(a2, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 8)));
    a3 = _mm256_add_epi64(a3, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 12)));
  }
  alignas(32) std::uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes),
                     _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3)));
  std::uint64_t sum = lanes[0] + lanes[1] + lanes[2] + lanes[3];
  for (; i < n; ++i) sum += p[i];
  return sum;
}

// The same with 64-byte loads: on the Intel Xeon (model 207) host two threads read 10-20 %
// more with zmm loads than with ymm loads (256 MiB: 28.5 against 25.9 GB/s; 20.8-23.2
// against 17.1-19.4 in later runs), so the AVX-512 loop is the ceiling where the CPU has it
// (2026-12-03; docs/PERFORMANCE.md, "Decode bandwidth").
__attribute__((target("avx512f"))) std::uint64_t stream_sum_avx512(const std::uint64_t* p,
                                                                    std::size_t n) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm512_add_epi64(a0, _mm512_loadu_si512(p + i));
    a1 = _mm512_add_epi64(a1, _mm512_loadu_si512(p + i + 8));
    a2 = _mm512_add_epi64(a2, _mm512_loadu_si512(p + i + 16));
    a3 = _mm512_add_epi64(a3, _mm512_loadu_si512(p + i + 24));
  }
  std::uint64_t sum = static_cast<std::uint64_t>(_mm512_reduce_add_epi64(
      _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3))));
  for (; i < n; ++i) sum += p[i];
  return sum;
}

// Read bandwidth of 256 MiB (far beyond any cache here), each thread streaming its own
// contiguous part; best of 5 passes. zmm: the AVX-512 loop, else the AVX2 one.
double dram_read_gbs(int threads, bool zmm) {
  const std::size_t n = std::size_t(256) << 20 >> 3;
  static std::vector<std::uint64_t> buf(n, 1);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    std::uint64_t sum = 0;
    const double t0 = now();
#pragma omp parallel num_threads(threads) reduction(+ : sum)
    {
      const std::size_t t = static_cast<std::size_t>(omp_get_thread_num()),
                        nt = static_cast<std::size_t>(omp_get_num_threads());
      const std::size_t a = n * t / nt, z = n * (t + 1) / nt;
      sum +=
          zmm ? stream_sum_avx512(buf.data() + a, z - a) : stream_sum_avx2(buf.data() + a, z - a);
    }
    const double dt = now() - t0;
    if (sum != n) std::puts("");
    best = std::max(best, n * 8.0 / dt * 1e-9);
  }
  return best;
}

template <typename Fn>
double best_of(Fn fn, int runs = 5) {
  double best = 0;
  for (int r = 0; r < runs; ++r) best = std::max(best, fn());
  return best;
}

}  // namespace

int main() {
  const int all = omp_get_max_threads();
  const long iters = 20'000'000;
  const bool avx512 = __builtin_cpu_supports("avx512f");
  std::printf("{\"threads\": %d", all);
  if (avx512) {
    std::printf(", \"f64_fma_avx512_gflops_1t\": %.1f",
                best_of([&] { return f64_avx512(iters); }) * 1e-9);
    std::printf(
        ", \"f64_fma_avx512_gflops_all\": %.1f",
        best_of([&] { return parallel_rate([&] { return f64_avx512(iters); }, all); }) * 1e-9);
    std::printf(", \"f32_fma_avx512_gflops_1t\": %.1f",
                best_of([&] { return f32_avx512(iters); }) * 1e-9);
    std::printf(
        ", \"f32_fma_avx512_gflops_all\": %.1f",
        best_of([&] { return parallel_rate([&] { return f32_avx512(iters); }, all); }) * 1e-9);
  }
  std::printf(", \"f32_fma_avx2_gflops_all\": %.1f",
              best_of([&] { return parallel_rate([&] { return f32_avx2(iters); }, all); }) * 1e-9);
  // dram_read_gbs_*: the widest loads this CPU has; dram_read_avx2_gbs_all: the ymm loop that
  // gave every DRAM figure before 2026-12-03.
  std::printf(", \"dram_read_gbs_1t\": %.1f, \"dram_read_gbs_all\": %.1f", dram_read_gbs(1, avx512),
              dram_read_gbs(all, avx512));
  std::printf(", \"dram_read_avx2_gbs_all\": %.1f}\n", dram_read_gbs(all, false));
}
