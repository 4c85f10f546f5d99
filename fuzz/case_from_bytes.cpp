#include "fuzz/case_from_bytes.hpp"

#include <algorithm>

namespace sdpa::fuzz {

conformance::SamplerOptions fuzz_sampler_options() {
  conformance::SamplerOptions o;
  o.max_len = kFuzzMaxLen;
  o.max_work = kFuzzMaxWork;
  o.max_head_dim = kFuzzMaxHeadDim;
  o.model_shapes = false;  // real-model shapes exceed the budget anyway
  return o;
}

Case case_from_bytes(FuzzInput& in) {
  conformance::SamplerOptions options = fuzz_sampler_options();
  conformance::CaseChoices c;
  c.batch = in.range(0, 4);
  c.heads_kv = in.range(0, 4);
  c.group = in.range(1, 4);
  c.len_q = in.range(0, kFuzzMaxLen);
  c.len_kv = in.range(0, kFuzzMaxLen);
  c.head_dim_qk = in.range(0, kFuzzMaxHeadDim);
  c.head_dim_v = in.range(0, kFuzzMaxHeadDim);
  c.dtype = static_cast<int>(in.range(0, static_cast<std::int64_t>(options.dtypes.size()) - 1));
  c.causal = static_cast<int>(in.range(0, 2));
  c.window = in.flag();
  c.window_left = in.range(-1, kFuzzMaxLen + 1);
  c.window_right = in.range(-1, kFuzzMaxLen + 1);
  c.window_bottom_right = in.flag();
  c.mask = static_cast<int>(in.range(0, 2));
  c.mask_broadcast = static_cast<int>(in.range(0, 15));
  c.varlen = static_cast<int>(in.range(0, 2));
  if (c.varlen != 0) {
    for (std::int64_t b = 0; b < c.batch; ++b) {
      c.seqlens_q.push_back(in.range(0, kFuzzMaxLen));
      c.seqlens_kv.push_back(in.range(0, kFuzzMaxLen));
    }
  }
  c.softcap = static_cast<int>(in.range(0, 4));
  c.scale = static_cast<int>(in.range(0, 6));
  c.dropout = static_cast<int>(in.range(0, 4));
  c.dropout_seed = in.u64();
  c.dropout_offset = in.range(0, 1 << 20);
  c.layout_bshd = in.flag();
  c.gap = in.range(0, 16);
  c.offset = in.range(0, 16);
  c.lse = in.flag();
  c.weights = in.flag();
  c.generator = static_cast<int>(in.range(0, 15));
  c.seed = in.range(0, 1 << 16);
  // Last, so that the inputs before it decode as they did; past the end of the input it is
  // 0, not long.
  // A long-keys input is decode-like (L <= 8, D <= 64), so that the budget keeps its keys.
  if (in.range(0, 7) == 7) {
    c.len_kv += kFuzzLongKeys;
    c.len_q %= 9;
    c.head_dim_qk = std::min<std::int64_t>(c.head_dim_qk, 64);
    c.head_dim_v = std::min<std::int64_t>(c.head_dim_v, 64);
    options.max_len = kFuzzMaxLen + kFuzzLongKeys;
    options.max_work = kFuzzLongWork;
  }
  // Last again (after the long-keys byte): the inputs' strides (StrideKind).
  c.stride_kind = static_cast<int>(in.range(0, conformance::kStrideKindCount - 1));
  // Last once more: the backward, judged on the backends that have one; with the LSE unless
  // the next byte says otherwise (0 past the end: the inputs before it decode as they did).
  c.backward = in.flag();
  c.backward_without_lse = in.flag();
  c.bias_grad = in.flag();  // d bias, where the case has bwd and an additive mask
  return conformance::build_case(c, options);
}

}  // namespace sdpa::fuzz
