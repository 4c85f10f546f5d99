// cuda.math on the GPU: Q, K and V gathered into contiguous arrays of the accumulation type
// (f32, f64 for f64; K and V repeated per query head of their group), S = Q K^T and O = P V
// by cuBLAS (pedantic math: no TF32, no reduced-precision tensor cores), and one block per
// query row for scale, softcap, masks, softmax, dropout (the reference's Philox keep-mask),
// LSE and the weights. The semantics are docs/SEMANTICS.md's, step by step as the reference
// computes them (reference/engine_f64.cpp).
//
// Judged on an H200 (docs/KERNELS.md, "CUDA").
#include <cublas_v2.h>
#include <math_constants.h>

#include <climits>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_runtime.cuh"

namespace sdpa::cuda::detail {
namespace {

constexpr const char* kBackend = "cuda.math";

void check(const char* what, cudaError_t e) { check_cuda(kBackend, what, e); }

void check(const char* what, cublasStatus_t s) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("cuda.math: ") + what + ": " + cublasGetStatusString(s));
  }
}

constexpr int kThreads = 128;  // per block: softmax rows and the element-wise kernels

unsigned blocks_for(i64 n) {
  const i64 b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

// dst[b][h][i][d] = src at (b, h / group, i, d) for i < valid[b], else 0.
template <class T>
__global__ void gather(const T* src, typename Io<T>::Acc* dst, i64 batch, i64 heads, i64 group,
                       i64 rows, i64 dim, const i64* row0, const i64* valid, i64 sh, i64 sr,
                       i64 sd) {
  const i64 total = batch * heads * rows * dim;
  for (i64 idx = blockIdx.x * static_cast<i64>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<i64>(gridDim.x) * blockDim.x) {
    const i64 d = idx % dim;
    i64 t = idx / dim;
    const i64 i = t % rows;
    t /= rows;
    const i64 h = t % heads;
    const i64 b = t / heads;
    typename Io<T>::Acc x = 0;
    if (i < valid[b]) x = Io<T>::in(src[row0[b] + (h / group) * sh + i * sr + d * sd]);
    dst[idx] = x;
  }
}

// O at (b, h, i, d) for i < rows[b] from src[b][h][i][d].
template <class T>
__global__ void scatter(const typename Io<T>::Acc* src, T* dst, i64 batch, i64 heads, i64 len,
                        i64 dim, const i64* row0, const i64* rows, i64 sh, i64 sr, i64 sd) {
  const i64 total = batch * heads * len * dim;
  for (i64 idx = blockIdx.x * static_cast<i64>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<i64>(gridDim.x) * blockDim.x) {
    const i64 d = idx % dim;
    i64 t = idx / dim;
    const i64 i = t % len;
    t /= len;
    const i64 h = t % heads;
    const i64 b = t / heads;
    if (i < rows[b]) dst[row0[b] + h * sh + i * sr + d * sd] = Io<T>::out(src[idx]);
  }
}

// What the softmax kernel needs of the plan (by value: a kernel argument).
struct RowParams {
  i64 batch, heads, len_q, len_kv;
  double scale, softcap;
  KeyStructure structure;
  int mask;
  i64 ms0, ms1, ms2, ms3;
  double dropout_p;
  unsigned threshold;
  unsigned long long seed, offset;
};

struct MaxOp {
  template <class Acc>
  __device__ Acc operator()(Acc a, Acc b) const {
    return a > b ? a : b;
  }
};
struct SumOp {
  template <class Acc>
  __device__ Acc operator()(Acc a, Acc b) const {
    return a + b;
  }
};

template <class Acc, class Op>
__device__ Acc block_reduce(Acc x, Acc* shared, Op op) {
  shared[threadIdx.x] = x;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) shared[threadIdx.x] = op(shared[threadIdx.x], shared[threadIdx.x + s]);
    __syncthreads();
  }
  const Acc r = shared[0];
  __syncthreads();
  return r;
}

// One block per query row: logits in `scores` become P (after dropout), in place.
template <class T>
__global__ void softmax_rows(typename Io<T>::Acc* scores, RowParams p, const i64* valid_q,
                             const i64* valid_kv, const void* mask, float* lse, T* weights) {
  using Acc = typename Io<T>::Acc;
  __shared__ Acc shared[kThreads];
  const Acc neg_inf = -CUDART_INF;
  const i64 S = p.len_kv;
  for (i64 r = blockIdx.x; r < p.batch * p.heads * p.len_q; r += gridDim.x) {
    const i64 i = r % p.len_q;
    const i64 h = (r / p.len_q) % p.heads;
    const i64 b = r / (p.len_q * p.heads);
    Acc* row = scores + r * S;
    T* wrow = weights ? weights + r * S : nullptr;
    const i64 lq = valid_q[b], skv = valid_kv[b];
    // Pass 1: final logits (-inf where a key is masked or does not exist), max, NaN.
    Acc m = neg_inf, any = 0, nan = 0;
    for (i64 j = threadIdx.x; j < S; j += blockDim.x) {
      Acc x = neg_inf;
      if (i < lq && j < skv && attends(p.structure, i, j, lq, skv)) {
        const i64 mo = b * p.ms0 + h * p.ms1 + i * p.ms2 + j * p.ms3;
        if (p.mask != SDPA_CTS_MASK_BOOL || static_cast<const unsigned char*>(mask)[mo] != 0) {
          x = static_cast<Acc>(p.scale) * row[j];
          if (p.softcap > 0)
            x = static_cast<Acc>(p.softcap) * tanh(x / static_cast<Acc>(p.softcap));
          if (p.mask == SDPA_CTS_MASK_ADDITIVE) x += Io<T>::in(static_cast<const T*>(mask)[mo]);
        }
      }
      row[j] = x;
      if (isnan(x)) {
        nan = 1;
        any = 1;
      } else if (x != neg_inf) {
        any = 1;
        if (x > m) m = x;
      }
    }
    m = block_reduce(m, shared, MaxOp{});
    any = block_reduce(any, shared, MaxOp{});
    nan = block_reduce(nan, shared, MaxOp{});
    if (any == 0) {  // a padded row, or every key masked: P = 0, LSE = -inf
      for (i64 j = threadIdx.x; j < S; j += blockDim.x) {
        row[j] = 0;
        if (wrow) wrow[j] = Io<T>::out(Acc(0));
      }
      if (lse && threadIdx.x == 0) lse[r] = -CUDART_INF_F;
      continue;
    }
    if (nan != 0) m = CUDART_NAN;
    // Pass 2: e_j = exp(s_j - m) over the attended keys, and their sum.
    Acc sum = 0;
    for (i64 j = threadIdx.x; j < S; j += blockDim.x) {
      const Acc e = row[j] == neg_inf ? Acc(0) : exp(row[j] - m);
      row[j] = e;
      sum += e;
    }
    sum = block_reduce(sum, shared, SumOp{});
    if (lse && threadIdx.x == 0) lse[r] = static_cast<float>(m + log(sum));
    // Pass 3: P_j = e_j / sum, times the dropout keep factor.
    const Acc keep_scale = p.threshold ? Acc(1) / (Acc(1) - static_cast<Acc>(p.dropout_p)) : Acc(1);
    for (i64 j = threadIdx.x; j < S; j += blockDim.x) {
      Acc w = row[j] / sum;
      if (p.threshold) {
        const unsigned long long ctr =
            p.offset + ((static_cast<unsigned long long>(b) * p.heads + h) * p.len_q + i) * S + j;
        w = philox_word0(ctr, p.seed) >= p.threshold ? w * keep_scale : Acc(0);
      }
      row[j] = w;
      if (wrow) wrow[j] = Io<T>::out(w);
    }
  }
}

cublasHandle_t blas() {
  static cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    check("cublasCreate", cublasCreate(&h));
    check("cublasSetMathMode", cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH));
    return h;
  }();
  return handle;
}

int as_int(i64 x, const char* what) {
  if (x > INT_MAX)
    throw std::runtime_error(std::string("cuda.math: ") + what + " exceeds cuBLAS's int");
  return static_cast<int>(x);
}

// C[batch](rows_c x cols_c, column-major, ldc) = op(A) * op(B), strided batches.
template <class Acc>
void gemm(cublasOperation_t ta, cublasOperation_t tb, i64 m, i64 n, i64 k, const Acc* a, i64 lda,
          i64 sa, const Acc* b, i64 ldb, i64 sb, Acc* c, i64 ldc, i64 sc, i64 count) {
  const Acc one = 1, zero = 0;
  const int M = as_int(m, "m"), N = as_int(n, "n"), K = as_int(k, "k");
  const int ld_a = as_int(lda < 1 ? 1 : lda, "lda"), ld_b = as_int(ldb < 1 ? 1 : ldb, "ldb"),
            ld_c = as_int(ldc < 1 ? 1 : ldc, "ldc"), batches = as_int(count, "batch count");
  if constexpr (sizeof(Acc) == 4) {
    check("cublasSgemmStridedBatched",
          cublasSgemmStridedBatched(blas(), ta, tb, M, N, K, &one, a, ld_a, sa, b, ld_b, sb, &zero,
                                    c, ld_c, sc, batches));
  } else {
    check("cublasDgemmStridedBatched",
          cublasDgemmStridedBatched(blas(), ta, tb, M, N, K, &one, a, ld_a, sa, b, ld_b, sb, &zero,
                                    c, ld_c, sc, batches));
  }
}

template <class T>
void run_typed(const sdpa_cts_params& pl) {
  using Acc = typename Io<T>::Acc;
  const i64 B = pl.batch, H = pl.heads_q, G = pl.group;
  const i64 L = pl.len_q, S = pl.len_kv, Dk = pl.head_dim_qk, Dv = pl.head_dim_v;
  const i64 slices = B * H;
  if (slices == 0 || L == 0) return;
  CudaRuntime rt(kBackend);
  const BatchArrays ba = rt.batch_arrays(batch_arrays_host(pl), B);
  DeviceArray<Acc> q(kBackend, static_cast<std::size_t>(slices * L * Dk));
  DeviceArray<Acc> k(kBackend, static_cast<std::size_t>(slices * S * Dk));
  DeviceArray<Acc> v(kBackend, static_cast<std::size_t>(slices * S * Dv));
  DeviceArray<Acc> s(kBackend, static_cast<std::size_t>(slices * L * S));
  DeviceArray<Acc> o(kBackend, static_cast<std::size_t>(slices * L * Dv));
  gather<T><<<blocks_for(slices * L * Dk), kThreads>>>(static_cast<const T*>(pl.q), q.get(), B, H,
                                                       1, L, Dk, ba.q0, ba.valid_q, pl.q_stride[1],
                                                       pl.q_stride[2], pl.q_stride[3]);
  gather<T><<<blocks_for(slices * S * Dk), kThreads>>>(static_cast<const T*>(pl.k), k.get(), B, H,
                                                       G, S, Dk, ba.k0, ba.valid_kv, pl.k_stride[1],
                                                       pl.k_stride[2], pl.k_stride[3]);
  gather<T><<<blocks_for(slices * S * Dv), kThreads>>>(static_cast<const T*>(pl.v), v.get(), B, H,
                                                       G, S, Dv, ba.v0, ba.valid_kv, pl.v_stride[1],
                                                       pl.v_stride[2], pl.v_stride[3]);
  check("gather", cudaGetLastError());
  // Row-major S (L x S) = Q K^T is column-major S^T = K^T' Q': see the comment of gemm().
  if (S > 0) {
    gemm<Acc>(CUBLAS_OP_T, CUBLAS_OP_N, S, L, Dk, k.get(), Dk, S * Dk, q.get(), Dk, L * Dk, s.get(),
              S, L * S, slices);
  }
  RowParams rp{B,
               H,
               L,
               S,
               pl.scale,
               pl.softcap,
               key_structure(pl),
               pl.mask_kind,
               pl.mask_stride[0],
               pl.mask_stride[1],
               pl.mask_stride[2],
               pl.mask_stride[3],
               pl.dropout_p,
               pl.dropout_threshold,
               pl.dropout_seed,
               pl.dropout_offset};
  const i64 rows = slices * L;
  softmax_rows<T><<<static_cast<unsigned>(rows < 65535 ? rows : 65535), kThreads>>>(
      s.get(), rp, ba.valid_q, ba.valid_kv, pl.mask, pl.lse, static_cast<T*>(pl.weights));
  check("softmax_rows", cudaGetLastError());
  // Row-major O (L x Dv) = P V is column-major O^T = V^T' P'.
  if (Dv > 0) {
    if (S > 0) {
      gemm<Acc>(CUBLAS_OP_N, CUBLAS_OP_N, Dv, L, S, v.get(), Dv, S * Dv, s.get(), S, L * S, o.get(),
                Dv, L * Dv, slices);
    } else {
      check("cudaMemset",
            cudaMemset(o.get(), 0, static_cast<std::size_t>(slices * L * Dv) * sizeof(Acc)));
    }
    scatter<T><<<blocks_for(slices * L * Dv), kThreads>>>(o.get(), static_cast<T*>(pl.o), B, H, L,
                                                          Dv, ba.o0, ba.o_rows, pl.o_stride[1],
                                                          pl.o_stride[2], pl.o_stride[3]);
    check("scatter", cudaGetLastError());
  }
  check("cudaDeviceSynchronize", cudaDeviceSynchronize());
}

}  // namespace

void run_math(const sdpa_cts_params& p) {
  switch (p.dtype) {
    case SDPA_CTS_DTYPE_F32:
      return run_typed<float>(p);
    case SDPA_CTS_DTYPE_F16:
      return run_typed<__half>(p);
    case SDPA_CTS_DTYPE_BF16:
      return run_typed<__nv_bfloat16>(p);
    case SDPA_CTS_DTYPE_F64:
      return run_typed<double>(p);
  }
  throw std::runtime_error("cuda.math: unknown element type code " + std::to_string(p.dtype));
}

}  // namespace sdpa::cuda::detail
