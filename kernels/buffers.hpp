// The buffers of one run as the harness allocates them, and the memory space they live in:
// what the lowering (kernels/lowered_problem.hpp) turns into the params' pointers.
#pragma once

namespace sdpa {

// Where a backend's run() expects its buffers. The judge allocates and guards buffers in
// host memory and, for another space, copies inputs (and the poisoned outputs with their
// margins) there before run() and the outputs back after it (conformance/judge/memory_space.hpp).
enum class MemorySpace {
  host,         // ordinary CPU memory
  cuda_device,  // CUDA device memory (cudaMalloc)
  test_device,  // a separate host allocation standing in for a device (tests of the judge)
};
const char* memory_space_name(MemorySpace m);

// Output and input pointers for one run, as the harness allocates them; each points at element 0
// of its view (core/problem.hpp: o_view, lse_view, weights_view). LSE is [B, Hq, L] contiguous
// f32; weights [B, Hq, L, S] contiguous in dtype. All live in `memory` (the backend's
// Capabilities::memory). The lowering (kernels/lowered_problem.hpp) puts them in the params.
struct Buffers {
  const void* q = nullptr;                 // Q
  const void* k = nullptr;                 // K
  const void* v = nullptr;                 // V
  const void* mask = nullptr;              // mask tensor (uint8 bool or dtype additive) or null
  void* o = nullptr;                       // O
  float* lse = nullptr;                    // LSE, written when the case asks for it (lse)
  void* weights = nullptr;                 // attention weights, written when asked (weights)
  MemorySpace memory = MemorySpace::host;  // where every pointer above points
};

// The backward's buffers (docs/SEMANTICS.md, "Backward"), besides the forward's Buffers, whose
// o and lse then hold this backend's own forward outputs for the same problem (inputs of the
// backward, never written). Gradients are written in the layouts of their inputs, every
// element: rows i >= L_b of dQ (padded layout) and keys j >= S_b of dK, dV are written 0.
struct GradientPointers {
  const void* d_out = nullptr;  // dO, in O's layout
  void* dq = nullptr;           // dQ, in Q's layout
  void* dk = nullptr;           // dK, in K's layout, summed over each KV head's query group
  void* dv = nullptr;           // dV, in V's layout, summed over each KV head's query group
  void* dbias = nullptr;        // d bias when the problem asks for it (bias_grad): the additive
                                // mask's gradient in the mask's storage (mask_view, dtype): each
                                // stored element the sum of dS over the mask's broadcast dimensions
};

}  // namespace sdpa
