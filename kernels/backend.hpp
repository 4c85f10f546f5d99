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
#include "core/dtype.hpp"
#include "kernels/buffers.hpp"
#include "kernels/lowered_problem.hpp"

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

// What a backend can do, as data (Capabilities, below). Its boolean features are declared once,
// in kernels/features.def: every one false by default (not declared), as in the plugin ABI and
// the Python Contract. Backends check them with check_capabilities() and add rules of their own
// in supports().
//
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

// The kinds of a boolean feature (kernels/features.def).
enum class FeatureKind : std::uint8_t {
  accepts,    // the backend takes problems that use it (undeclared: declined)
  restricts,  // the backend needs it (declared: problems that break it are declined)
  property,   // a claim about its results, verified by the judge
};
// One row of the feature table.
struct FeatureInfo {
  const char* name;          // the field, JSON and Python name
  std::uint32_t abi_bit;     // SDPA_CTS_CAP_* of the plugin ABI
  FeatureKind kind;          // how check_capabilities and the judge use it
  const char* profile_tag;   // the profiles' require tag ("" = none)
  const char* example_case;  // a case ID using it and nothing else declinable ("" = property)
  const char* reason;        // the decline reason, or the property's claim
};
// The features by name, in the table's order (Feature::x indexes feature_table()).
enum class Feature : std::uint8_t {
#define SDPA_CTS_FEATURE(name, abi_bit, kind, profile_tag, example_case, reason) name,
#include "kernels/features.def"
#undef SDPA_CTS_FEATURE
};
// Every row of kernels/features.def, in its order.
const std::vector<FeatureInfo>& feature_table();
// The row of one feature.
const FeatureInfo& feature_info(Feature f);

struct Capabilities {
  std::vector<DType> dtypes;            // element types accepted
  DeviceKind device = DeviceKind::cpu;  // where it runs
  std::int64_t max_head_dim = 0;        // 0 = no limit; applies to Dqk and Dv
  std::int64_t head_dim_multiple = 1;   // Dqk and Dv must be multiples of this
  // The boolean features, one per row of kernels/features.def (what each means is there),
  // every one false (not declared) by default.
#define SDPA_CTS_FEATURE(name, abi_bit, kind, profile_tag, example_case, reason) bool name = false;
#include "kernels/features.def"
#undef SDPA_CTS_FEATURE

  // A forward that accepts every input: every `accepts` feature declared except the backward's
  // (backward, bias_gradient), no restriction, no property claimed. The starting point of a
  // backend that then turns off what it lacks and declares what else it does.
  static Capabilities every_forward_input();
  // The feature named `name` (a feature_table() name), or null.
  bool* feature(std::string_view name);
  const bool* feature(std::string_view name) const;
  MemorySpace memory = MemorySpace::host;  // where run() expects its buffers
  Traits traits;                           // algorithm properties the dispatcher's rules use
  TilingCuts tiling;                       // where its code changes with L and S
  // Where its backward's code changes with L and S; unset: where the forward's does (`tiling`).
  std::optional<TilingCuts> backward_tiling;
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
  // Whether it can run `p` on `device`, with every reason it cannot. `p` carries no buffers
  // (its tensor pointers are null).
  virtual Support supports(const LoweredProblem& p, const Device& device) const = 0;
  // Computes O (and LSE / weights when asked) into the pointers of `p` on `device`, the device
  // supports() accepted, resolved (for a CPU: device.cpu.isa is the ISA target to run). Only
  // called after supports() said yes; throws std::runtime_error on an internal failure.
  virtual void run(const LoweredProblem& p, const Device& device,
                   const RunOptions& options) const = 0;
  // Computes dQ, dK, dV into the gradient pointers of `p` (a backward call: p.params().o and
  // .lse hold its own forward's outputs) after its own forward run(). Only called when
  // supports() accepted a backward problem, which needs Capabilities::backward; the default
  // throws.
  virtual void run_backward(const LoweredProblem& p, const Device& device,
                            const RunOptions& options) const;
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
void check_capabilities(const Capabilities& caps, const LoweredProblem& p, const Device& device,
                        Support& support);

}  // namespace sdpa
