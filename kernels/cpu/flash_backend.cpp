// cpu.flash: the FlashAttention-2 forward algorithm on the CPU (docs/KERNELS.md).
//
// This file is the driver: it checks and flattens the problem, cuts it into work items
// (a tile of up to kRowTile (head, query) rows of one kv head's group), and runs the items
// on OpenMP threads with dynamic scheduling. Each item is computed start to finish by one
// thread, by the kernel of the chosen SIMD target (run_item_<target>), in a fixed order,
// so the output bits do not depend on the thread count or on the rest of the batch.
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <vector>

#include "core/philox.hpp"
#include "flash_impl_isas.hpp"
#include "kernels/cpu/bf16_range.hpp"
#include "kernels/cpu/cpu_backends.hpp"
#include "kernels/cpu/flash_backward.hpp"
#include "kernels/cpu/flash_backward_kernel.hpp"
#include "kernels/cpu/flash_kernel.hpp"
#include "kernels/cpu/isa_dispatch.hpp"
#include "kernels/cpu/isa_target.hpp"
#include "kernels/lowered_problem.hpp"

namespace sdpa::cpu::flash {
// run_item_<target> of each unit of flash_impl.hpp (kernels/cpu/CMakeLists.txt lists them).
SDPA_CTS_ISA_DECLARE(flash_impl, RunItemFn, run_item)
}  // namespace sdpa::cpu::flash

namespace sdpa::cpu {
namespace {

using i64 = std::int64_t;
using flash::Item;
using flash::kKeyBlock;
using flash::kMaxHeadDim;
using flash::kRowAlign;
using flash::kRowTile;
using flash::Params;

i64 round_up(i64 a, i64 m) { return (a + m - 1) / m * m; }

Capabilities make_capabilities() {
  Capabilities c = Capabilities::every_forward_input();
  c.dtypes = {DType::f32, DType::f16, DType::bf16};
  c.device = DeviceKind::cpu;
  c.max_head_dim = kMaxHeadDim;
  c.weights = false;
  c.deterministic = true;
  c.batch_invariant = true;
  c.backward = true;            // flash_backward.cpp
  c.backward_needs_lse = true;  // P = exp(s - LSE)
  c.traits.fused_mha = true;
  c.traits.isa_targets = true;
  c.traits.pytorch = PytorchKernel::flash;
  // Its code changes at the row tile (rows of a KV head's group) and at the key block.
  c.tiling = {true, {flash::kRowTile}, {flash::kKeyBlock}, nullptr};
  // Its backward's changes at its own blocks: query rows of one head, and keys
  // (flash_backward_kernel.hpp). The guarded path's blocks (flash_backward.hpp) follow the
  // values, not the lengths, and are no cut.
  c.backward_tiling = TilingCuts{false, {flash::kBwdRowBlock}, {flash::kBwdKeyBlock}, nullptr};
  return c;
}

// Per-thread scratch: sized by the tile constants and the head dims only (not L or S).
// vdpbf16ps treats subnormal inputs as zero whatever MXCSR says. In Q and K that moves a
// logit by less than Dqk 2^-126 |q| |k|, far inside the bound; but when every value of a
// row is subnormal, V's subnormals are the output itself (golden "bf16 subnormal V").
// A problem whose V holds one therefore takes the f32 path, which keeps subnormals.
bool holds_bf16_subnormal(const void* base, const StridedView& v) {
  return smallest_bf16_exponent(base, v) == 0;
}

flash::ScratchLayout scratch_layout(i64 dqk, i64 dv, bool dropout, bool bf16_dot) {
  flash::ScratchLayout s;
  std::size_t at = 0;
  auto take = [&](i64 bytes) {
    const std::size_t here = at;
    at += static_cast<std::size_t>(round_up(std::max<i64>(bytes, 0), 64));
    return here;
  };
  const i64 rp = round_up(kRowTile, kRowAlign), bc = kKeyBlock;
  const i64 dq2 = (dqk + 1) / 2;
  // The f32 arrays are there on the bf16 dot path too: its redone rows take the f32 path.
  s.qt = take(dqk * rp * 4);
  s.kb = take(bc * dqk * 4);
  s.vb = take(bc * dv * 4);
  s.st = take(bc * rp * 4);
  s.ot = take(dv * rp * 4);
  s.keep = take(dropout ? bc * rp * 4 : 0);
  s.rowf = take(5 * rp * 4);
  s.rowi = take(2 * rp * 8);
  s.tmp = take((2 * round_up(std::max(dqk, dv), 32) + 64) * 4);
  s.qt2 = take(bf16_dot ? dq2 * rp * 4 : 0);
  s.kb2 = take(bf16_dot ? (bc + 1) * dq2 * 4 : 0);
  s.vp2 = take(bf16_dot ? (bc / 2 + 1) * dv * 4 : 0);
  s.p2 = take(bf16_dot ? (bc / 2 + 1) * rp * 4 : 0);
  s.bytes = at;
  return s;
}

struct FreeDeleter {
  void operator()(unsigned char* p) const { std::free(p); }
};

class FlashBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu.flash"; }

  const Capabilities& capabilities() const override {
    static const Capabilities caps = make_capabilities();
    return caps;
  }

  // f32 accumulators for QK^T and PV; bf16 inputs round P to bf16 before PV on the
  // avx512bf16 target (vdpbf16ps), other targets keep P in f32 (inside that contract).
  PrecisionContract precision(DType dtype) const override {
    PrecisionContract c;
    c.accumulate = DType::f32;
    c.p_type = dtype == DType::bf16 ? DType::bf16 : DType::f32;
    c.online_softmax = true;
    c.key_block = kKeyBlock;
    // The backward rounds P and dS to the input type before its products (flash_backward.hpp).
    c.ds_type = dtype == DType::f32 ? DType::f32 : dtype;
    return c;
  }

  Support supports(const LoweredProblem& p, const Device& device) const override {
    Support s;
    check_capabilities(capabilities(), p, device, s);
    return s;
  }

  void run(const LoweredProblem& p, const Device& device, const RunOptions& options) const override;
  void run_backward(const LoweredProblem& p, const Device& device,
                    const RunOptions& options) const override {
    flash_backward(p, device, options);
  }
};

void FlashBackend::run(const LoweredProblem& lowered, const Device& device,
                       const RunOptions& options) const {
  const IsaTarget target = isa_to_run(device);
  const flash::ItemFn fn =
      SDPA_CTS_ISA_DISPATCH(flash_impl, flash::RunItemFn, flash::run_item, target);

  const sdpa_cts_params& p = lowered.params();
  const i64 B = p.batch, Hq = p.heads_q, L = p.len_q;
  Params P;
  static_cast<sdpa_cts_params&>(P) = lowered.params();
  P.softcap_f32 = static_cast<float>(p.softcap);
  const i64* lens_q = P.seqlens_q;
  // vdpbf16ps: AMD Zen 4 runs it at twice its f32 FMA rate, while the Intel Xeons measured
  // here run it at a quarter of the zmm FMA rate (docs/PERFORMANCE.md). bf16 therefore
  // takes the vdpbf16ps kernel when the avx512bf16 target is forced, or chosen on an AMD
  // CPU; otherwise it is widened to f32 for the zmm FMA kernel. Fixed per machine, so the
  // bits stay the same from run to run.
  static const bool fast_bf16_dot = __builtin_cpu_is("amd");
  P.bf16_dot = target == IsaTarget::avx512bf16 && lowered.dtype() == DType::bf16 &&
               (device.cpu.isa_chosen || fast_bf16_dot) &&
               !holds_bf16_subnormal(p.v, lowered.v_view());
  P.scratch = scratch_layout(P.head_dim_qk, P.head_dim_v, P.dropout_p > 0, P.bf16_dot);

  // Query rows beyond L_b (padding): O = 0 (unpacked layout only) and LSE = -inf.
  const std::size_t es = dtype_size(lowered.dtype());
  for (i64 b = 0; b < B; ++b) {
    for (i64 h = 0; h < Hq; ++h) {
      for (i64 i = lens_q[b]; i < L; ++i) {
        if (P.lse) P.lse[(b * Hq + h) * L + i] = -std::numeric_limits<float>::infinity();
        if (p.packed) continue;
        for (i64 d = 0; d < P.head_dim_v; ++d) {
          const i64 off =
              b * P.o_stride[0] + h * P.o_stride[1] + i * P.o_stride[2] + d * P.o_stride[3];
          std::memset(static_cast<unsigned char*>(p.o) + off * static_cast<i64>(es), 0, es);
        }
      }
    }
  }

  // Work items: one kv head's group of query heads (up to kRowTile of them) times a block
  // of query rows, so that each K/V block is loaded once for the whole group. Listed per
  // batch element, kv head and head chunk, later query blocks first (under a causal mask they
  // are the longest, which evens out the threads), and decoded from their index so that the
  // list itself takes O(B) memory.
  const i64 G = P.group;
  const i64 ng = std::min<i64>(std::max<i64>(G, 1), kRowTile);
  const i64 chunks = (G + ng - 1) / ng;
  std::vector<i64> first(static_cast<std::size_t>(B) + 1, 0), rows(static_cast<std::size_t>(B));
  for (i64 b = 0; b < B; ++b) {
    const i64 lb = lens_q[b];
    rows[b] = lb == 0 ? 1 : std::min<i64>(std::max<i64>(kRowTile / ng, 1), lb);
    first[b + 1] = first[b] + p.heads_kv * chunks * ((lb + rows[b] - 1) / rows[b]);
  }
  const i64 n_items = first[B];
  if (n_items == 0) return;
  auto item_at = [&](i64 x) {
    const i64 b = std::upper_bound(first.begin(), first.end(), x) - first.begin() - 1;
    const i64 ni = rows[b], tiles = (lens_q[b] + ni - 1) / ni;
    const i64 rem = x - first[b], hc = rem / tiles, t = rem % tiles;
    const i64 g0 = (hc % chunks) * ng, i0 = (tiles - 1 - t) * ni;
    return Item{b, hc / chunks, g0, std::min(ng, G - g0), i0, std::min(ni, lens_q[b] - i0)};
  };

  int threads = options.threads > 0 ? options.threads : omp_get_max_threads();
  threads = static_cast<int>(std::min<i64>(threads, n_items));
  threads = std::max(threads, 1);
  std::vector<std::unique_ptr<unsigned char, FreeDeleter>> scratch;
  for (int t = 0; t < threads; ++t) {
    auto* mem = static_cast<unsigned char*>(std::aligned_alloc(
        64, static_cast<std::size_t>(
                round_up(static_cast<i64>(std::max<std::size_t>(P.scratch.bytes, 64)), 64))));
    if (!mem) throw std::bad_alloc();
    std::memset(mem, 0, P.scratch.bytes);
    scratch.emplace_back(mem);
  }
  if (threads == 1) {
    for (i64 x = 0; x < n_items; ++x) fn(P, item_at(x), scratch[0].get());
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    unsigned char* mine = scratch[static_cast<std::size_t>(omp_get_thread_num())].get();
#pragma omp for schedule(dynamic, 1)
    for (i64 x = 0; x < n_items; ++x) fn(P, item_at(x), mine);
  }
}

}  // namespace

const Backend& flash_backend() {
  static const FlashBackend backend;
  return backend;
}

}  // namespace sdpa::cpu
