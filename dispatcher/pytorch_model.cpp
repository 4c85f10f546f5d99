#include "dispatcher/pytorch_model.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <stdexcept>

#include "kernels/cuda/cudnn_rules.hpp"
#include "kernels/lowered_problem.hpp"
#include "kernels/registry.hpp"

namespace sdpa::dispatcher {
namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

std::string format_p(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", p);
  return buf;
}

// A backend of the model that explains and never runs.
class ModelBackend : public Backend {
 public:
  ModelBackend(std::string name, Capabilities caps) : name_(std::move(name)), caps_(caps) {}
  std::string_view name() const override { return name_; }
  const Capabilities& capabilities() const override { return caps_; }
  PrecisionContract precision(DType dtype) const override {
    PrecisionContract c;
    c.accumulate = dtype == DType::f64 ? DType::f64 : DType::f32;
    c.p_type = c.accumulate;
    return c;
  }
  void run(const LoweredProblem&, const Device&, const RunOptions&) const override {
    throw std::runtime_error(name_ +
                             ": a model of PyTorch's kernel for `explain --policy pytorch`; it "
                             "does not run (judge PyTorch itself through plugins/torch)");
  }

 protected:
  // The only reason when the device is not a CPU.
  bool check_cpu(const Device& device, Support& s) const {
    if (device.kind == DeviceKind::cpu) return true;
    s.decline("runs on CPU devices, not on " + device.name);
    return false;
  }

 private:
  std::string name_;
  Capabilities caps_;
};

Capabilities cpu_caps(bool math) {
  Capabilities c = Capabilities::every_forward_input();
  c.dtypes = {DType::f64, DType::f32, DType::f16, DType::bf16};
  c.device = DeviceKind::cpu;
  c.different_v_dim = math;
  c.dropout = math;
  c.packed_seqlens = math;
  c.window = c.softcap = c.padded_seqlens = false;  // not expressible through PyTorch's SDPA
  c.lse = false;
  c.weights = false;
  c.last_dim_contiguous = !math;
  c.deterministic = true;
  c.traits.pytorch = math ? PytorchKernel::math : PytorchKernel::flash;
  return c;
}

// use_flash_attention_cpp (sdp_utils_cpp.cpp): its checks in PyTorch's order, every one.
class TorchCpuFlash final : public ModelBackend {
 public:
  TorchCpuFlash() : ModelBackend("torch.cpu.flash", cpu_caps(false)) {}
  // A model of another library's picker, which reads the call as PyTorch sees it: the case's
  // own problem (its tensors' strides as PyTorch's checks name them).
  Support supports(const LoweredProblem& lowered, const Device& device) const override {
    const Problem& p = lowered.source();
    Support s;
    if (!check_cpu(device, s)) return s;
    if (p.packed) {
      s.decline("NestedTensor inputs (packed rows) are not supported (check_nested_tensor)");
    }
    if (p.dropout_p > 0) {
      s.decline("dropout p=" + format_p(p.dropout_p) + " > 0 is not supported (check_for_dropout)");
    }
    if (p.head_dim_v != p.head_dim_qk) {
      s.decline("dv=" + str(p.head_dim_v) + " differs from dqk=" + str(p.head_dim_qk) +
                " (check_head_dim_size_cpp)");
    }
    if (!p.packed && (p.len_q == 0 || p.len_kv == 0)) {
      s.decline("L=" + str(p.len_q) + ", S=" + str(p.len_kv) +
                ": a zero sequence length is not supported (check_nonzero_sequence_lengths_dense)");
    }
    if (!p.packed) {
      for (auto [n, t] : {std::pair{"q", &p.q}, std::pair{"k", &p.k}, std::pair{"v", &p.v}}) {
        if (t->stride[3] != 1) {
          s.decline(std::string(n) + " has head-dim stride " + str(t->stride[3]) +
                    ", not 1 (check_last_dim_stride_equals_1_dense)");
        }
      }
    }
    return s;
  }
};

// The math fallback: taken whenever the math flag is on.
class TorchCpuMath final : public ModelBackend {
 public:
  TorchCpuMath() : ModelBackend("torch.cpu.math", cpu_caps(true)) {}
  Support supports(const LoweredProblem&, const Device& device) const override {
    Support s;
    check_cpu(device, s);
    return s;
  }
};

bool is_math(const Backend& b) { return b.capabilities().traits.pytorch == PytorchKernel::math; }

// Tensor.is_contiguous() of packed rows [rows, H, D] (the jagged values, which decide it):
// an empty tensor is contiguous, and dimensions of size 1 have no stride that matters.
bool jagged_contiguous(const TensorLayout& t, std::int64_t rows, std::int64_t heads,
                       std::int64_t dim) {
  if (rows == 0 || heads == 0 || dim == 0) return true;
  const std::int64_t size[3] = {rows, heads, dim};
  const std::int64_t stride[3] = {t.stride[2], t.stride[1], t.stride[3]};
  std::int64_t expected = 1;
  for (int i = 2; i >= 0; --i) {
    if (size[i] == 1) continue;
    if (stride[i] != expected) return false;
    expected *= size[i];
  }
  return true;
}

}  // namespace

const Backend& pytorch_cpu_flash() {
  static const TorchCpuFlash b;
  return b;
}

const Backend& pytorch_cpu_math() {
  static const TorchCpuMath b;
  return b;
}

const std::vector<const Backend*>& pytorch_model_backends() {
  static const std::vector<const Backend*> list = [] {
    std::vector<const Backend*> v = {&pytorch_cpu_flash(), &pytorch_cpu_math()};
    // PyTorch's CUDA kernels are the registry's CUDA backends that declare one, first of each
    // kind, in PyTorch's default order (sdp_priority_order in ATen's Context.h).
    for (PytorchKernel kind : {PytorchKernel::flash, PytorchKernel::efficient, PytorchKernel::math,
                               PytorchKernel::cudnn}) {
      for (const Backend* b : builtin_backends()) {
        const Capabilities& c = b->capabilities();
        if (c.device == DeviceKind::cuda && c.traits.pytorch == kind) {
          v.push_back(b);
          break;
        }
      }
    }
    return v;
  }();
  return list;
}

std::string pytorch_backend_name(const Backend& b) {
  return pytorch_kernel_name(b.capabilities().traits.pytorch);
}

const char* torch_route_name(TorchRoute r) {
  switch (r) {
    case TorchRoute::sdpa:
      return "sdpa";
    case TorchRoute::causal_bias:
      return "causal_bias";
    case TorchRoute::nested:
      return "nested";
    case TorchRoute::not_expressible:
      return "not_expressible";
  }
  return "?";
}

TorchCall torch_call(const Problem& p) {
  TorchCall call;
  Problem q = p;
  // PyTorch allocates O contiguous itself; the public op returns neither LSE nor weights.
  const TensorLayout q_layout = q.q, k_layout = q.k, v_layout = q.v;
  apply_layout(q, LayoutKind::bhsd, 0, 0);
  q.q = q_layout;
  q.k = k_layout;
  q.v = v_layout;
  if (q.want_lse)
    call.notes.push_back("the LSE request is dropped: the public op does not return it");
  q.want_lse = false;
  // Training: the picker sees inputs that require grad, never a backward flag of its own.
  call.requires_grad = p.backward;
  if (p.backward) {
    call.notes.push_back(
        "Q, K and V require grad (bwd): the picker applies its training rules, and the kernel "
        "it picks also runs the backward");
  }
  q.backward = false;

  auto no = [&](std::string why) { call.not_expressible.push_back(std::move(why)); };
  if (p.window.enabled) no("sliding windows: PyTorch's SDPA has no window argument");
  if (p.softcap > 0) no("softcap: PyTorch's SDPA has no softcap argument");
  if (!p.packed && (!p.seqlens_q.empty() || !p.seqlens_kv.empty())) {
    no("per-batch lengths on padded rows: PyTorch expresses them as a mask, another problem");
  }
  if (p.want_weights) no("the attention-weights output: the public op returns only O");
  if (p.causal == Causal::top_left && p.mask != MaskKind::none) {
    no("is_causal=True with an attn_mask: PyTorch raises \"Explicit attn_mask should not be set "
       "when is_causal=True\"");
  }
  if (p.causal == Causal::bottom_right && p.mask != MaskKind::none) {
    no("a bottom-right causal mask and a mask tensor: the CausalBias is the attn_mask, so they "
       "cannot be combined");
  }
  if (p.packed && p.mask != MaskKind::none) {
    no("NestedTensor inputs with an attn_mask: PyTorch raises \"Masks are not yet supported!\"");
  }
  if (p.packed && p.causal == Causal::bottom_right) {
    no("a bottom-right causal mask on NestedTensor inputs: CausalBias takes dense tensors");
  }
  if (!call.not_expressible.empty()) {
    call.route = TorchRoute::not_expressible;
    call.problem = q;
    return call;
  }

  if (p.packed) {
    call.route = TorchRoute::nested;
    call.notes.push_back(
        "packed rows are jagged NestedTensors: PyTorch's Python-side jagged picker decides "
        "(order flash, efficient, math, cudnn; no cuDNN preference)");
  } else if (p.causal == Causal::bottom_right && p.len_q == p.len_kv) {
    q.causal = Causal::top_left;
    call.notes.push_back(
        "bottom-right causal with L == S: CausalBias._dispatch passes is_causal=True");
  } else if (p.causal == Causal::bottom_right) {
    call.route = TorchRoute::causal_bias;
    q.causal = Causal::none;
    Problem masked = q;
    masked.mask = MaskKind::boolean;
    masked.mask_broadcast = kBroadcastB | kBroadcastH;  // a 2-D [L, S] mask
    call.masked = masked;
    call.notes.push_back(
        "bottom-right causal with L=" + str(p.len_q) + " != S=" + str(p.len_kv) +
        ": CausalBias._dispatch asks flash, then efficient without a mask, then calls SDPA with "
        "the materialised [L, S] boolean mask");
  }
  call.problem = q;
  return call;
}

// The consumer architectures (sm86, sm89, sm120; sm121 shares sm120's shared memory) and the
// head-dim bands there: (192, 224] always, above 224 with dropout.
const std::vector<int>& flash_training_consumer_archs() {
  static const std::vector<int> archs = {86, 89, 120, 121};
  return archs;
}
const std::vector<FlashTrainingBand>& flash_training_head_dim_bands() {
  static const std::vector<FlashTrainingBand> bands = {{192, 224, false}, {224, INT64_MAX, true}};
  return bands;
}

namespace {

// The training rules (inputs that require grad) of PyTorch's picker, from its source (ATen's
// sdp_utils.cpp and torch/nested/_internal/sdpa.py, torch 2.15). On the CPU there are none:
// the CPU picker's choice does not depend on requires_grad (checked against PyTorch by
// scripts/pytorch-picker-diff.py on sampled `bwd` cases).
void training_checks(const Backend& b, const TorchCall& call, const Device& device, Support& s) {
  if (!call.requires_grad || b.capabilities().device != DeviceKind::cuda ||
      device.kind != DeviceKind::cuda) {
    return;
  }
  const Problem& p = call.problem;
  const std::string kind = pytorch_backend_name(b);
  const int sm = device.cuda.sm;
  // check_requires_grad_and_head_dim_gt192_constraints_on_sm86_89_or_120: FlashAttention's
  // backward cannot run these head dims on the consumer architectures' shared memory.
  const auto& archs = flash_training_consumer_archs();
  const bool consumer = std::find(archs.begin(), archs.end(), sm) != archs.end();
  const std::int64_t d = p.head_dim_qk;
  for (const FlashTrainingBand& band : flash_training_head_dim_bands()) {
    if (kind != "flash" || !consumer || d <= band.above || d > band.up_to) continue;
    if (band.only_with_dropout && !(p.dropout_p > 0)) continue;
    const bool open = band.up_to == INT64_MAX;
    s.decline("training (inputs require grad) with head dim " + str(d) +
              (open ? " > " + str(band.above)
                    : " in (" + str(band.above) + ", " + str(band.up_to) + "]") +
              (band.only_with_dropout ? " and dropout p=" + format_p(p.dropout_p) : "") +
              " is not supported by flash on " + sm_name(sm) +
              " (check_requires_grad_and_head_dim_gt192_constraints_on_sm86_89_or_120)");
  }
  // check_cudnn_d256_bprop_head_dim: where cuDNN's forward takes head dim 256 (sm90 minor 0
  // or sm10x with cuDNN > 9.22, not sm107 with cuDNN <= 9.25), its backward takes only
  // (<= 128, <= 128), (192, 128) and (256, 256). (The check also needs a cuDNN frontend of
  // 1.24 or newer in the wheel's build: a build fact, assumed.)
  const int v = device.cuda.cudnn_version;
  const bool d256 = cuda::cudnn_head_dim_limit(sm, v) > cuda::kCudnnBaseHeadDimLimit;
  const std::int64_t dv = p.head_dim_v;
  if (kind == "cudnn" && d256 &&
      !((d <= 128 && dv <= 128) || (d == 192 && dv == 128) || (d == 256 && dv == 256))) {
    s.decline("training (inputs require grad): cuDNN's backward on " + sm_name(sm) +
              " takes head dims (<= 128, <= 128), (192, 128) or (256, 256), not (" + str(d) + ", " +
              str(dv) + ") (check_cudnn_d256_bprop_head_dim)");
  }
  // check_requires_grad_and_nested (can_use_mem_efficient_attention, not on ROCm).
  if (call.route == TorchRoute::nested && kind == "efficient") {
    s.decline(
        "training (inputs require grad) with NestedTensor inputs is not supported by "
        "mem-efficient (check_requires_grad_and_nested)");
  }
  // _check_for_seq_len_0_nested: "Both fused kernels do not support training with
  // broadcasted NT inputs": without grad a single KV head broadcasts, with grad it does not
  // (other head counts are declined either way, in pytorch_route_checks).
  if (call.route == TorchRoute::nested && p.heads_kv == 1 && p.heads_q != 1 &&
      (kind == "flash" || kind == "efficient" || kind == "cudnn")) {
    s.decline(
        "NestedTensor inputs: training (inputs require grad) needs as many key/value "
        "heads as query heads, a single one does not broadcast (hq=" +
        str(p.heads_q) + ", hkv=" + str(p.heads_kv) + ", _check_for_seq_len_0_nested)");
  }
}

}  // namespace

void pytorch_route_checks(const Backend& b, const TorchCall& call, const Device& device,
                          Support& s) {
  training_checks(b, call, device, s);
  // Only the jagged route adds rules, and only for a backend of the device's kind (another
  // kind has its one reason already).
  if (call.route != TorchRoute::nested || b.capabilities().device != device.kind) return;
  const Problem& p = call.problem;
  const std::string kind = pytorch_backend_name(b);
  if (is_math(b)) {
    if (p.causal != Causal::none) {
      s.decline(
          "NestedTensor inputs with is_causal=True are not supported by the math path "
          "(_can_use_math_sdpa_jagged)");
    }
    if (!jagged_contiguous(p.q, rows_q(p), p.heads_q, p.head_dim_qk) ||
        !jagged_contiguous(p.k, rows_kv(p), p.heads_kv, p.head_dim_qk) ||
        !jagged_contiguous(p.v, rows_kv(p), p.heads_kv, p.head_dim_v)) {
      s.decline(
          "NestedTensor inputs must be contiguous after transpose(1, 2) for the math path "
          "(_can_use_math_sdpa_jagged)");
    }
  }
  if (kind == "cudnn" && (p.head_dim_qk != p.head_dim_v || p.head_dim_qk > 128)) {
    s.decline("NestedTensor inputs need dqk == dv <= 128 on cuDNN (dqk=" + str(p.head_dim_qk) +
              ", dv=" + str(p.head_dim_v) + ", _check_head_dim_size_cudnn_nested)");
  }
  if ((kind == "flash" || kind == "efficient" || kind == "cudnn") &&
      b.capabilities().device == DeviceKind::cuda && p.heads_kv != p.heads_q && p.heads_kv != 1) {
    s.decline("NestedTensor inputs: key/value heads must equal the query heads or be 1 (hq=" +
              str(p.heads_q) + ", hkv=" + str(p.heads_kv) + ", _check_for_seq_len_0_nested)");
  }
}

}  // namespace sdpa::dispatcher
