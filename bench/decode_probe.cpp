// What bounds cpu.mem_efficient's decode (docs/PERFORMANCE.md, "Decode bandwidth"). The
// bytes of the decode case b1.hq32.l1.s8192.dqk128.bf16 (K and V: 32 heads x 8192 keys x
// 128 bf16 each, 128 MiB; --heads 128 gives 512 MiB, beyond this host's share of L3), cut
// in the backend's units (one head x one 512-key chunk: its K, then its V), are read by
// --threads threads, one unit at a time (dynamic):
//   stream        plain 64-byte loads summed into 4 integer accumulators: what the memory
//                 system gives this access pattern, no arithmetic to speak of;
//   stream_kv_prefetch  the unit's K and V read together, each prefetched 2 KiB ahead (two
//                 streams in flight per core, as the kernels keep them);
//   kernel_plain  the decode kernels (dot_keys, row softmax, acc_values of the best SIMD
//                 target's vector table), each unit on its own (the scheme before
//                 2026-12-03, with the current kernels);
//   kernel        the same as cpu.mem_efficient runs them: units claimed one ahead, dot_keys
//                 prefetching the unit's V into L2 and acc_values the next unit's K;
//   l2            the kernels on one unit whose bytes stay in L2, one thread: their compute
//                 ceiling in GB/s of K and V consumed (and of each kernel alone).
// Best of --reps passes each, interleaved. One JSON line.
//
//   build/h2/bench/sdpa-cts-decode-probe [--threads 2] [--reps 7] [--simd avx512] [--heads 32]
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "core/dtype.hpp"
#include "kernels/cpu/vec_kernels.hpp"

namespace {

std::int64_t kHeads = 32;  // --heads: 32 is the case; 128 (512 MiB) is beyond any cache here
constexpr std::int64_t kKeys = 8192, kDim = 128, kChunk = 512;
constexpr std::int64_t kChunks = kKeys / kChunk;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

__attribute__((target("avx512f"))) std::uint64_t stream_sum(const void* p, std::size_t bytes) {
  const auto* q = static_cast<const __m512i*>(p);
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (std::size_t i = 0; i + 4 <= bytes / 64; i += 4) {
    a0 = _mm512_add_epi64(a0, _mm512_loadu_si512(q + i));
    a1 = _mm512_add_epi64(a1, _mm512_loadu_si512(q + i + 1));
    a2 = _mm512_add_epi64(a2, _mm512_loadu_si512(q + i + 2));
    a3 = _mm512_add_epi64(a3, _mm512_loadu_si512(q + i + 3));
  }
  return static_cast<std::uint64_t>(_mm512_reduce_add_epi64(
      _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3))));
}

// K and V of a unit read together, 128 bytes of each per step, each prefetched 2 KiB ahead:
// two streams in flight per core, as the kernels keep them.
__attribute__((target("avx512f"))) std::uint64_t stream_sum2(const char* k, const char* v,
                                                             std::size_t bytes) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (std::size_t i = 0; i + 128 <= bytes; i += 128) {
    _mm_prefetch(k + i + 2048, _MM_HINT_T0);
    _mm_prefetch(k + i + 2048 + 64, _MM_HINT_T0);
    _mm_prefetch(v + i + 2048, _MM_HINT_T0);
    _mm_prefetch(v + i + 2048 + 64, _MM_HINT_T0);
    a0 = _mm512_add_epi64(a0, _mm512_loadu_si512(k + i));
    a1 = _mm512_add_epi64(a1, _mm512_loadu_si512(k + i + 64));
    a2 = _mm512_add_epi64(a2, _mm512_loadu_si512(v + i));
    a3 = _mm512_add_epi64(a3, _mm512_loadu_si512(v + i + 64));
  }
  return static_cast<std::uint64_t>(_mm512_reduce_add_epi64(
      _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3))));
}

struct Data {
  std::vector<std::uint16_t> k, v;
  std::vector<float> q;
  Data() : k(kHeads * kKeys * kDim), v(kHeads * kKeys * kDim), q(kHeads * kDim) {
    std::uint32_t s = 12345;
    auto rnd = [&] {
      s = s * 1664525u + 1013904223u;
      return (static_cast<float>(s >> 8) / 16777216.0f - 0.5f);
    };
    for (auto& x : k) x = sdpa::float_to_bf16(rnd());
    for (auto& x : v) x = sdpa::float_to_bf16(rnd());
    for (auto& x : q) x = rnd() * 0.1f;
  }
  const std::uint16_t* kc(std::int64_t h, std::int64_t c) const {
    return k.data() + (h * kKeys + c * kChunk) * kDim;
  }
  const std::uint16_t* vc(std::int64_t h, std::int64_t c) const {
    return v.data() + (h * kKeys + c * kChunk) * kDim;
  }
};

constexpr double kChunkBytes = 2.0 * kChunk * kDim * 2;  // K and V of one unit

// One unit of the kernel: logits, exp, P V into acc (the backend's decode path, m = 1).
struct Unit {
  std::vector<float> s = std::vector<float>(kChunk), acc = std::vector<float>(kDim);
  // prefetch_v: dot_keys prefetches V; next_k: the K chunk this thread reads next (nullptr:
  // none), prefetched by acc_values.
  float run(const sdpa::cpu::vk::Table& t, const float* q, const std::uint16_t* k,
            const std::uint16_t* v, bool prefetch_v, const std::uint16_t* next_k) {
    const sdpa::cpu::vk::Prefetch pv{v, kDim * 2, kDim * 2, kChunk};
    t.dot_keys(sdpa::DType::bf16, q, kDim, 1, k, kDim, kChunk, kDim, s.data(), kChunk,
               prefetch_v ? pv : sdpa::cpu::vk::Prefetch{});
    t.row_mul(s.data(), kChunk, 0.08838834764831845f);
    const float m = t.row_max(s.data(), kChunk);
    const float l = t.row_exp_sum(s.data(), kChunk, m);
    std::fill(acc.begin(), acc.end(), 0.0f);
    t.acc_values(sdpa::DType::bf16, s.data(), kChunk, 1, v, kDim, kChunk, kDim, acc.data(), kDim,
                 {next_k, kDim * 2, kDim * 2, kChunk});
    return l + acc[0];
  }
};

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, reps = 7;
  std::string simd;
  for (int a = 1; a + 1 < argc; a += 2) {
    const std::string k = argv[a];
    if (k == "--threads")
      threads = std::atoi(argv[a + 1]);
    else if (k == "--reps")
      reps = std::atoi(argv[a + 1]);
    else if (k == "--simd")
      simd = argv[a + 1];
    else if (k == "--heads")
      kHeads = std::atoi(argv[a + 1]);
  }
  const sdpa::Device dev = sdpa::with_isa_target(sdpa::detect_cpu(), simd);
  if (!__builtin_cpu_supports("avx512f")) {
    std::fprintf(stderr, "sdpa-cts-decode-probe: needs AVX-512 for the stream loop\n");
    return 2;
  }
  const auto& t = sdpa::cpu::vk::table(dev.cpu.isa);
  const std::int64_t nu = kHeads * kChunks;
  const double all_bytes = kChunkBytes * static_cast<double>(nu);
  Data d;
  double best_stream = 0, best_stream2 = 0, best_plain = 0, best_kernel = 0, best_l2 = 0,
         best_l2_dot = 0, best_l2_acc = 0;
  volatile double sink = 0;
  for (int r = 0; r < reps; ++r) {
    {  // stream
      std::uint64_t sum = 0;
      const double t0 = now();
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) reduction(+ : sum)
      for (std::int64_t u = 0; u < nu; ++u) {
        sum += stream_sum(d.kc(u / kChunks, u % kChunks), kChunk * kDim * 2);
        sum += stream_sum(d.vc(u / kChunks, u % kChunks), kChunk * kDim * 2);
      }
      best_stream = std::max(best_stream, all_bytes / (now() - t0) * 1e-9);
      sink = sink + static_cast<double>(sum);
    }
    {  // stream2: K and V of each unit together, prefetched
      std::uint64_t sum = 0;
      const double t0 = now();
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) reduction(+ : sum)
      for (std::int64_t u = 0; u < nu; ++u) {
        sum += stream_sum2(reinterpret_cast<const char*>(d.kc(u / kChunks, u % kChunks)),
                           reinterpret_cast<const char*>(d.vc(u / kChunks, u % kChunks)),
                           kChunk * kDim * 2);
      }
      best_stream2 = std::max(best_stream2, all_bytes / (now() - t0) * 1e-9);
      sink = sink + static_cast<double>(sum);
    }
    {  // kernel_plain
      double s = 0;
      const double t0 = now();
#pragma omp parallel num_threads(threads) reduction(+ : s)
      {
        Unit un;
#pragma omp for schedule(dynamic, 1)
        for (std::int64_t u = 0; u < nu; ++u) {
          const std::int64_t h = u / kChunks, c = u % kChunks;
          s += un.run(t, d.q.data() + h * kDim, d.kc(h, c), d.vc(h, c), false, nullptr);
        }
      }
      best_plain = std::max(best_plain, all_bytes / (now() - t0) * 1e-9);
      sink = sink + s;
    }
    {  // kernel: as the backend (mem_efficient_backend.cpp run_problem)
      double s = 0;
      std::atomic<std::int64_t> counter{0};
      const double t0 = now();
#pragma omp parallel num_threads(threads) reduction(+ : s)
      {
        Unit un;
        std::int64_t u = counter.fetch_add(1);
        while (u < nu) {
          const std::int64_t next = counter.fetch_add(1);
          const std::int64_t h = u / kChunks, c = u % kChunks;
          const std::uint16_t* nk = next < nu ? d.kc(next / kChunks, next % kChunks) : nullptr;
          s += un.run(t, d.q.data() + h * kDim, d.kc(h, c), d.vc(h, c), true, nk);
          u = next;
        }
      }
      best_kernel = std::max(best_kernel, all_bytes / (now() - t0) * 1e-9);
      sink = sink + s;
    }
    {  // l2: one unit, 64 times, one thread; then its two kernels alone
      Unit un;
      double s = un.run(t, d.q.data(), d.kc(0, 0), d.vc(0, 0), false, nullptr);
      double t0 = now();
      for (int i = 0; i < 64; ++i)
        s += un.run(t, d.q.data(), d.kc(0, 0), d.vc(0, 0), false, nullptr);
      best_l2 = std::max(best_l2, 64 * kChunkBytes / (now() - t0) * 1e-9);
      t0 = now();
      for (int i = 0; i < 64; ++i)
        t.dot_keys(sdpa::DType::bf16, d.q.data(), kDim, 1, d.kc(0, 0), kDim, kChunk, kDim,
                   un.s.data(), kChunk, {});
      best_l2_dot = std::max(best_l2_dot, 64 * kChunkBytes / 2 / (now() - t0) * 1e-9);
      t0 = now();
      for (int i = 0; i < 64; ++i)
        t.acc_values(sdpa::DType::bf16, un.s.data(), kChunk, 1, d.vc(0, 0), kDim, kChunk, kDim,
                     un.acc.data(), kDim, {});
      best_l2_acc = std::max(best_l2_acc, 64 * kChunkBytes / 2 / (now() - t0) * 1e-9);
      sink = sink + s + un.acc[1] + un.s[3];
    }
  }
  std::printf(
      "{\"threads\": %d, \"simd\": \"%s\", \"bytes\": %.0f, \"stream_gbs\": %.1f, "
      "\"stream_kv_prefetch_gbs\": %.1f, "
      "\"kernel_plain_gbs\": %.1f, \"kernel_gbs\": %.1f, \"kernel_l2_gbs_1t\": %.1f, "
      "\"dot_keys_l2_gbs_1t\": %.1f, \"acc_values_l2_gbs_1t\": %.1f}\n",
      threads, t.name, all_bytes, best_stream, best_stream2, best_plain, best_kernel, best_l2,
      best_l2_dot, best_l2_acc);
  return sink == 12345.678 ? 1 : 0;
}
