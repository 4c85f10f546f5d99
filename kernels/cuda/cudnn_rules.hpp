// cuda.cudnn's numeric rules as data: its head-dim limits per architecture and cuDNN version,
// and its cuDNN version gates (PyTorch's can_use_cudnn_attention and check_cudnn_* in
// cuda/sdp_utils.cpp). cuda.cudnn's supports() and the PyTorch policy's training rules
// (dispatcher/pytorch_model.cpp) read them; the boundary tests generate their cases from them
// (tests/dispatcher/cuda_rule_edges_test.cpp). Header-only: the dispatcher reads it without
// linking the CUDA backend family. Versions: major * 10000 + minor * 100 + patch.
#pragma once

#include <vector>

namespace sdpa::cuda {

// cuda.cudnn's head-dim limit (PyTorch's check_cudnn_tensor_shapes): d_qk and d_v <= 128
// (kCudnnBaseHeadDimLimit), raised to `limit` on the architectures [from_sm, to_sm] with a
// cuDNN newer than `above_version` (exclusive, as PyTorch writes it). The rows do not overlap;
// an architecture in none keeps the base limit.
inline constexpr int kCudnnBaseHeadDimLimit = 128;
struct CudnnHeadDimCut {
  int from_sm;
  int to_sm;
  int above_version;  // cuDNN version, major * 10000 + minor * 100 + patch
  int limit;
};

// Head-dim pairs over the limit that cuda.cudnn takes anyway on [from_sm, to_sm] from cuDNN
// `from_version` (inclusive): (192, 128) from 9.11.0 on sm90 and sm10x.
struct CudnnHeadDimPair {
  int from_sm;
  int to_sm;
  int from_version;
  int dqk;
  int dv;
};

// cuda.cudnn's version gates (PyTorch's can_use_cudnn_attention and check_cudnn_*): each
// rule applies while from_version <= version < until_version. The reason text names the
// bounds, so a gate moved in the data moves its text with it.
enum class CudnnGate {
  no_sdpa,             // no SDPA at all (before 8.9.3)
  dropout,             // dropout declined (before 8.9.6)
  kv_len_multiple_64,  // S must be a multiple of 64 (before 8.9.6)
  q_len_at_least_64,   // L must be >= 64 (before 9.0.0)
  dropout_lens_64,     // with dropout, L and S multiples of 64 (before 9.0.0)
  dropout_disabled,    // dropout disabled (above 9.11.0, below 9.14.0)
};
struct CudnnVersionGate {
  CudnnGate gate;
  int from_version;   // inclusive; 0 for "any version below until_version"
  int until_version;  // exclusive
};

// check_cudnn_tensor_shapes: head dim 256 on sm90 (minor 0 only) and sm10x with cuDNN > 9.22,
// except sm107, which needs cuDNN > 9.25.
inline const std::vector<CudnnHeadDimCut>& cudnn_head_dim_cuts() {
  static const std::vector<CudnnHeadDimCut> cuts = {
      {90, 90, 92200, 256}, {100, 106, 92200, 256}, {107, 107, 92500, 256}, {108, 109, 92200, 256}};
  return cuts;
}

inline int cudnn_head_dim_limit(int sm, int version) {
  for (const CudnnHeadDimCut& c : cudnn_head_dim_cuts())
    if (sm >= c.from_sm && sm <= c.to_sm && version > c.above_version) return c.limit;
  return kCudnnBaseHeadDimLimit;
}

// check_cudnn_tensor_shapes: (192, 128) from cuDNN 9.11.0 on sm90 and sm10x.
inline const std::vector<CudnnHeadDimPair>& cudnn_head_dim_pairs() {
  static const std::vector<CudnnHeadDimPair> pairs = {{90, 90, 91100, 192, 128},
                                                      {100, 109, 91100, 192, 128}};
  return pairs;
}

// can_use_cudnn_attention and check_cudnn_*: SDPA from 8.9.3; dropout and any S from 8.9.6;
// L < 64 and dropout with L or S off a multiple of 64 from 9.0.0; dropout disabled again for
// 91100 < version < 91400 (9.11.0 itself keeps it: from 9.11.1).
inline const std::vector<CudnnVersionGate>& cudnn_version_gates() {
  static const std::vector<CudnnVersionGate> gates = {{CudnnGate::no_sdpa, 0, 80903},
                                                      {CudnnGate::dropout, 0, 80906},
                                                      {CudnnGate::kv_len_multiple_64, 0, 80906},
                                                      {CudnnGate::q_len_at_least_64, 0, 90000},
                                                      {CudnnGate::dropout_lens_64, 0, 90000},
                                                      {CudnnGate::dropout_disabled, 91101, 91400}};
  return gates;
}

inline bool cudnn_gate_applies(CudnnGate gate, int version) {
  for (const CudnnVersionGate& g : cudnn_version_gates())
    if (g.gate == gate && version >= g.from_version && version < g.until_version) return true;
  return false;
}

}  // namespace sdpa::cuda
