// The mutant catalog of docs/TESTING.md ("Detection power: mutants"): one switch per bug that
// real attention kernels have had. Mutation::none is the correct kernel, the control.
#pragma once

#include <string_view>
#include <vector>

namespace sdpa::testing {

enum class Mutation {
  none,                       // the correct kernel
  missing_rescale,            // online softmax: the accumulator is not rescaled when the max grows
  causal_off_by_one,          // causal: attends j < i + off instead of j <= i + off
  causal_tl_br_swapped,       // causal: top-left uses the bottom-right offset and vice versa
  last_partial_tile_dropped,  // the keys of a last, partial key block are skipped
  gqa_tiled,                  // kv head h % Hkv instead of h / (Hq / Hkv)
  scale_from_dv,              // default scale 1 / sqrt(Dv) instead of 1 / sqrt(Dqk)
  dropout_scale_missing,      // kept probabilities are not divided by (1 - p)
  masked_row_nan,             // a fully masked row gives 0 / 0 = NaN
  masked_row_mean_v,          // a fully masked row gives the mean of V over its keys
  split_combine_unweighted,   // split-KV: partial outputs averaged without their LSE weights
  mask_batch_broadcast,       // the mask tensor is read as if broadcast over the batch
  stride_assumed_contiguous,  // Q, K, V, O addressed with contiguous strides
  row_unwritten,              // the last query row of the last (b, h) is not written
  write_past_end,             // one element after the last row of the last (b, h) is written
  p_in_bf16,                  // P rounded to bf16 before P.V and the row sum
  softcap_after_mask,         // softcap applied after the bias and the masks
  lse_base2,                  // LSE written as log2 instead of the natural log
  nan_hidden,                 // NaN logits are skipped like masked ones
  window_off_by_one,          // window: the left edge key i + off - left is excluded
  varlen_ignored,             // per-batch lengths ignored: every sequence uses L and S
};

// One catalog entry, for the kill table and the docs.
struct MutationInfo {
  Mutation mutation;      // the switch
  std::string_view name;  // short name, the mutant backend is "mutant.<name>"
  std::string_view bug;   // one sentence: what the kernel does wrong
};

// Every mutation except none, in enum order.
const std::vector<MutationInfo>& mutation_catalog();

}  // namespace sdpa::testing
