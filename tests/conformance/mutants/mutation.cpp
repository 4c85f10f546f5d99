#include "tests/conformance/mutants/mutation.hpp"

namespace sdpa::testing {

const std::vector<MutationInfo>& mutation_catalog() {
  static const std::vector<MutationInfo> catalog = {
      {Mutation::missing_rescale, "missing_rescale",
       "online softmax does not rescale the accumulator when the running max grows"},
      {Mutation::causal_off_by_one, "causal_off_by_one",
       "causal mask attends j < i + off (the diagonal key is dropped)"},
      {Mutation::causal_tl_br_swapped, "causal_tl_br_swapped",
       "causal top-left and bottom-right alignments swapped"},
      {Mutation::last_partial_tile_dropped, "last_partial_tile_dropped",
       "the keys of a last, partial key block are skipped"},
      {Mutation::gqa_tiled, "gqa_tiled", "GQA kv head h % Hkv (ONNX tile) instead of h / group"},
      {Mutation::scale_from_dv, "scale_from_dv", "default scale 1/sqrt(Dv) instead of 1/sqrt(Dqk)"},
      {Mutation::dropout_scale_missing, "dropout_scale_missing",
       "kept probabilities are not scaled by 1/(1-p)"},
      {Mutation::masked_row_nan, "masked_row_nan", "a fully masked row gives NaN (0/0)"},
      {Mutation::masked_row_mean_v, "masked_row_mean_v",
       "a fully masked row gives the mean of V (-inf replaced by a finite minimum)"},
      {Mutation::split_combine_unweighted, "split_combine_unweighted",
       "split-KV partial outputs averaged without their LSE weights"},
      {Mutation::mask_batch_broadcast, "mask_batch_broadcast",
       "the mask tensor is read as if broadcast over the batch (batch 0's mask for all)"},
      {Mutation::stride_assumed_contiguous, "stride_assumed_contiguous",
       "Q, K, V and O addressed with contiguous strides whatever the layout"},
      {Mutation::row_unwritten, "row_unwritten",
       "the last query row of the last (b, h) is never written"},
      {Mutation::write_past_end, "write_past_end",
       "one element past the last row of the last (b, h) is written"},
      {Mutation::p_in_bf16, "p_in_bf16",
       "P rounded to bf16 before the row sum and P.V while the contract says f32"},
      {Mutation::softcap_after_mask, "softcap_after_mask",
       "softcap applied after the bias and the masks (masked keys get -c, not -inf)"},
      {Mutation::lse_base2, "lse_base2", "LSE written in base 2 instead of the natural log"},
      {Mutation::nan_hidden, "nan_hidden",
       "NaN logits skipped like masked keys (a NaN input gives a finite output)"},
      {Mutation::window_off_by_one, "window_off_by_one",
       "sliding window excludes its left edge key i + off - left"},
      {Mutation::varlen_ignored, "varlen_ignored",
       "per-batch lengths ignored: every sequence uses L and S"},
  };
  return catalog;
}

}  // namespace sdpa::testing
