// The backend interface: what every attention implementation (built-in CPU kernels,
// CUDA kernels, later external plugins) provides, and what the dispatcher and the
// conformance engine see of it.
//
// Policy: `supports()` is the one source of truth. The dispatcher selects by calling it,
// the conformance engine records its reasons as NOT_SUPPORTED, and a backend that said
// yes must then be correct ("decline or be correct", docs/TESTING.md). The dispatcher
// never looks at a backend's name: what it needs to know is data (Capabilities, Traits).
// A backend family registers itself (kernels/registry.hpp, docs/KERNELS.md "Adding a
// backend").
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/device.hpp"
#include "core/problem.hpp"

namespace sdpa {

// Why a backend declines a problem: every reason, each one full sentence naming the
// offending value ("head dim 300 exceeds 256"). Empty = supported.
//
// `raises` models a picker that accepts a problem its kernel then refuses (PyTorch's
// memory-efficient kernel selects dropout with B > 65535 and raises at run time): the
// backend passes the picker's checks (picker_accepts()) but cannot run it (ok() is false).
// The PyTorch policy selects such a backend and reports the error; the suite policy and the
// conformance engine treat it as a decline.
struct Support {
  std::vector<std::string> reasons;  // all reasons it declines; empty when it can run
  std::vector<std::string> raises;   // accepted by the picker, then the kernel raises this
  bool ok() const { return reasons.empty() && raises.empty(); }
  bool picker_accepts() const { return reasons.empty(); }
  void decline(std::string reason) { reasons.push_back(std::move(reason)); }
  void raise_later(std::string error) { raises.push_back(std::move(error)); }
  // Every reason it cannot run: the declines, then each later error as
  // "selected by the picker, then raises: <error>".
  std::vector<std::string> all_reasons() const {
    std::vector<std::string> all = reasons;
    for (const auto& e : raises) all.push_back("selected by the picker, then raises: " + e);
    return all;
  }
};

// How a backend rounds, for the tolerance model (SEMANTICS.md "Element types").
struct PrecisionContract {
  DType accumulate = DType::f32;  // type of the QK^T and PV accumulators
  DType p_type = DType::f32;      // type P is rounded to before PV (f32 = not rounded)
  bool online_softmax = false;    // rescales running sums per key block (flash style)
  std::int64_t key_block = 0;     // keys per block of the online softmax / split (0 = none)
  // The backward's roundings (docs/CONFORMANCE.md, "The gradients' bound"); it accumulates in
  // `accumulate` and recomputes P in it.
  DType ds_type = DType::f32;         // type P and dS are rounded to before the gradient
                                      // products (f32 = not rounded; FlashAttention-2 rounds
                                      // both to the input type)
  bool dkv_rounded_per_head = false;  // dK, dV of each query head rounded to the input type
                                      // before the sum over the GQA group (FlashAttention-2)
  // Tensor-core accumulation (docs/CONFORMANCE.md, "Tensor-core accumulation"): the QK^T and
  // PV sums run through block FMAs of `mma_block` products that align every term to the
  // block's largest exponent, keep `mma_extra_bits` bits below the accumulator's significand
  // and truncate the result, as NVIDIA's tensor cores do. 0 = sums rounded to nearest.
  int mma_block = 0;
  int mma_extra_bits = 0;
};

// Where a backend's run() expects its buffers. The judge allocates and guards buffers in
// host memory and, for another space, copies inputs (and the poisoned outputs with their
// margins) there before run() and the outputs back after it (conformance/judge/memory_space.hpp).
enum class MemorySpace {
  host,         // ordinary CPU memory
  cuda_device,  // CUDA device memory (cudaMalloc)
  test_device,  // a separate host allocation standing in for a device (tests of the judge)
};
const char* memory_space_name(MemorySpace m);

// Which of PyTorch's SDPA kernels (its SDPBackend) a backend is or stands for: what the
// PyTorch policy (dispatcher/pytorch_model.cpp) picks among and what the suite policy
// compares its choice with, and what two ordering rules read (dispatcher/rules.cpp: cuDNN
// first on sm9x / sm10x, the materialising math path last). Declared by the backend.
enum class PytorchKernel : std::uint8_t {
  none,       // no PyTorch counterpart
  math,       // the materialising math path (no tiling, no threading overhead)
  flash,      // FlashAttention
  efficient,  // memory-efficient attention
  cudnn,      // the cuDNN SDPA graph
};
// PyTorch's SDPBackend name of a kind: "math", "flash", "efficient", "cudnn"; "" for none.
const char* pytorch_kernel_name(PytorchKernel k);

// Properties of a backend's algorithm that the dispatcher's ordering rules look at
// (dispatcher/rules.hpp). Data, never inferred from the name.
struct Traits {
  bool split_kv = false;  // splits one query row's keys across workers (decode shapes)
  PytorchKernel pytorch = PytorchKernel::none;  // the PyTorch kernel it is or stands for
  bool fused_mha = false;    // a fused kernel native multi-head attention hands SDPA to
                             // (PyTorch's flash and memory-efficient kernels)
  bool isa_targets = false;  // has one code path per CPU ISA target (IsaTarget): a run over
                             // every target runs it once per target
  bool model_only = false;   // describes another library's kernel for the picker (PyTorch's
                             // cuDNN choice); the suite has no kernel for it and run() throws.
                             // The suite policy never selects it; the PyTorch policy does
};

// What a backend can do, as data. A field left at its default imposes no restriction.
// Backends check these with check_capabilities() and add rules of their own in supports().
// Where a backend's code changes with the problem's lengths: pair coverage
// (conformance/engine/pair_coverage.cpp) cuts the rows and keys of a problem at these points, so
// that the pairs tier reaches every side of every cut. Declared by the backend from its own
// tile constants.
using KeyChunkFn = std::int64_t (*)(std::int64_t len_kv, std::int64_t dqk, std::int64_t dv);
struct TilingCuts {
  bool group_rows = false;                 // rows are (head, query) rows of a KV head's group
                                           // (G * L), else query rows (L)
  std::vector<std::int64_t> row_cuts{1};   // ascending row-block sizes
  std::vector<std::int64_t> key_cuts{16};  // ascending key-block sizes; 0 = the key chunk
  KeyChunkFn key_chunk = nullptr;          // the key chunk for S, Dqk, Dv (when a cut is 0)
};

struct Capabilities {
  std::vector<DType> dtypes;            // element types accepted
  DeviceKind device = DeviceKind::cpu;  // where it runs
  std::int64_t max_head_dim = 0;        // 0 = no limit; applies to Dqk and Dv
  std::int64_t head_dim_multiple = 1;   // Dqk and Dv must be multiples of this
  bool different_v_dim = true;          // Dv != Dqk supported
  bool bool_mask = true;                // boolean mask tensor
  bool additive_mask = true;            // additive mask tensor
  bool causal_top_left = true;          // causal TL
  bool causal_bottom_right = true;      // causal BR
  bool window = true;                   // sliding windows
  bool softcap = true;                  // logit softcapping
  bool dropout = true;                  // dropout p > 0
  bool gqa = true;                      // Hkv < Hq
  bool padded_seqlens = true;           // per-batch valid lengths in a padded layout
  bool packed_seqlens = true;           // packed varlen (cu_seqlens)
  bool lse_output = true;               // can write LSE
  bool weights_output = false;          // can write attention weights
  bool last_dim_contiguous = false;     // requires stride 1 in the head dimension
  bool empty_problems = true;           // any dimension may be 0
  bool deterministic = false;           // same bits at any thread count and across runs
                                        // (the backward's too, when it has one)
  bool backward = false;                // computes dQ, dK, dV (run_backward)
  bool bias_gradient = false;           // its backward also computes d bias (dbias)
  bool backward_needs_lse = false;      // its backward reads the LSE its forward wrote (P
                                        // recomputed from it, as FlashAttention does): a
                                        // backward case must ask for the LSE (`lse`)
  bool batch_invariant = false;         // a row's output does not depend on the rest of the batch
  MemorySpace memory = MemorySpace::host;  // where run() expects its buffers
  Traits traits;                           // algorithm properties the dispatcher's rules use
  TilingCuts tiling;                       // where its code changes with L and S
  // Where its backward's code changes with L and S; unset: where the forward's does (`tiling`).
  std::optional<TilingCuts> backward_tiling;
};

// Output and input pointers for one run; each points at element 0 of its view (layouts in
// the Problem, views in core/problem.hpp: o_view, lse_view, weights_view). LSE is
// [B, Hq, L] contiguous f32; weights [B, Hq, L, S] contiguous in dtype. All live in
// `memory` (the backend's Capabilities::memory).
struct Buffers {
  const void* q = nullptr;                 // Q
  const void* k = nullptr;                 // K
  const void* v = nullptr;                 // V
  const void* mask = nullptr;              // mask tensor (uint8 bool or dtype additive) or null
  void* o = nullptr;                       // O
  float* lse = nullptr;                    // LSE, written when problem.want_lse
  void* weights = nullptr;                 // attention weights, written when problem.want_weights
  MemorySpace memory = MemorySpace::host;  // where every pointer above points
};

// The backward's buffers (docs/SEMANTICS.md, "Backward"), besides the forward's Buffers, whose
// o and lse then hold this backend's own forward outputs for the same problem (inputs of the
// backward, never written). Gradients are written in the layouts of their inputs, every
// element: rows i >= L_b of dQ (padded layout) and keys j >= S_b of dK, dV are written 0.
struct GradientPointers {
  const void* d_out = nullptr;  // dO, in O's layout (problem.o)
  void* dq = nullptr;           // dQ, in Q's layout (problem.q)
  void* dk = nullptr;           // dK, in K's layout, summed over each KV head's query group
  void* dv = nullptr;           // dV, in V's layout, summed over each KV head's query group
  void* dbias = nullptr;        // d bias when the problem asks for it (bias_grad): the additive
                                // mask's gradient in the mask's storage (mask_view, dtype): each
                                // stored element the sum of dS over the mask's broadcast dimensions
};

// Per-run knobs that are neither part of the problem nor of the device.
struct RunOptions {
  int threads = 0;  // OpenMP threads; 0 = the OpenMP default
};

class Backend {
 public:
  virtual ~Backend() = default;
  // Stable name, e.g. "cpu.flash".
  virtual std::string_view name() const = 0;
  // Capabilities as data (docs, explain(), the conformance matrix).
  virtual const Capabilities& capabilities() const = 0;
  // Rounding behaviour for the given element type.
  virtual PrecisionContract precision(DType dtype) const = 0;
  // Whether it can run `p` on `device`, with every reason it cannot.
  virtual Support supports(const Problem& p, const Device& device) const = 0;
  // Computes O (and LSE / weights when asked) on `device`, the device supports() accepted,
  // resolved (for a CPU: device.cpu.isa is the ISA target to run). Only called after
  // supports() said yes; throws std::runtime_error on an internal failure.
  virtual void run(const Problem& p, const Buffers& buffers, const Device& device,
                   const RunOptions& options) const = 0;
  // Computes dQ, dK, dV for `p` (p.backward) after its own forward run() wrote `forward.o`
  // and `forward.lse`. Only called when supports() accepted a backward problem, which needs
  // Capabilities::backward; the default throws.
  virtual void run_backward(const Problem& p, const Buffers& forward, const GradientPointers& grads,
                            const Device& device, const RunOptions& options) const;
  // Where run() takes its buffers on `device`: Capabilities::memory, unless the family says
  // otherwise (an emulated GPU's kernels take host memory standing in for the device).
  virtual MemorySpace run_memory_space(const Device& device) const {
    static_cast<void>(device);
    return capabilities().memory;
  }
};

// The data-driven checks every backend shares: dtype, device kind, head dims, masks,
// dropout, GQA, varlen, outputs, strides, empty problems. Appends one reason per
// violated capability.
void check_capabilities(const Capabilities& caps, const Problem& p, const Device& device,
                        Support& support);

}  // namespace sdpa
