// The MHA spec grammar (reference/mha_spec.hpp): defaults, every field, errors naming the
// field, and the call's consistency rules.
#include "reference/mha_spec.hpp"

#include <gtest/gtest.h>

namespace sdpa::reference {
namespace {

std::string spec_error(const std::string& spec) {
  auto r = parse_mha_spec(spec);
  if (auto* e = std::get_if<std::string>(&r)) return *e;
  return "(parsed)";
}

TEST(MhaSpec, DefaultsAndFields) {
  const MhaCall c = parse_mha_spec_or_throw("e64.h4");
  EXPECT_EQ(c.mha.embed_dim, 64);
  EXPECT_EQ(c.mha.num_heads, 4);
  EXPECT_EQ(c.mha.batch, 1);
  EXPECT_EQ(c.mha.len_q, 1);
  EXPECT_EQ(c.mha.len_kv, 1);
  EXPECT_TRUE(c.mha.need_weights);
  EXPECT_FALSE(c.need_weights_explicit);
  EXPECT_EQ(c.dtype, DType::f32);
  EXPECT_TRUE(c.self_attention);
  EXPECT_FALSE(c.mha.batch_first);
  const MhaCall k = parse_mha_spec_or_throw("e64.h4.l5.s7.kdim=32.vdim=16");
  EXPECT_FALSE(k.self_attention);
  EXPECT_TRUE(k.mha.use_separate_proj_weight);
  const MhaCall all = parse_mha_spec_or_throw(
      "e64.h4.b3.l6.s6.bf16.wdtype=f32.bias=0.add_bias_kv=1.add_zero_attn=1.kpm=bool.mask=float."
      "mask_rank=3.need_weights=0.avg=0.is_causal=1.p=0.25.batch_first=1.training=1.self=0."
      "batched=1.fastpath=0.autocast=1.grad=1.nested=0");
  EXPECT_EQ(all.dtype, DType::bf16);
  EXPECT_EQ(all.param_dtype, DType::f32);
  EXPECT_EQ(all.mha.attn_mask_rank, 3);
  EXPECT_EQ(all.mha.dropout_p, 0.25);
  EXPECT_FALSE(all.mha.average_attn_weights);
  EXPECT_TRUE(all.need_weights_explicit);
  EXPECT_FALSE(all.fastpath_enabled);
  EXPECT_EQ(format_mha_spec(all),
            "e64.h4.b3.l6.s6.bf16.wdtype=f32.bias=0.add_bias_kv=1.add_zero_attn=1.kpm=bool.mask="
            "float.mask_rank=3.need_weights=0.avg=0.is_causal=1.p=0.25.batch_first=1.training=1."
            "self=0.fastpath=0.autocast=1.grad=1");
}

TEST(MhaSpec, ErrorsNameTheField) {
  EXPECT_EQ(spec_error(""), "MHA spec field '<spec>': the MHA spec is empty");
  EXPECT_EQ(spec_error("e64"), "MHA spec field 'h': missing (required fields: e, h)");
  EXPECT_EQ(spec_error("e64.h4.need_weights=2"),
            "MHA spec field 'need_weights': expected 0 or 1, got '2'");
  EXPECT_EQ(spec_error("e64.h4.mask=maybe"),
            "MHA spec field 'mask': expected none, bool or float, got 'maybe'");
  EXPECT_EQ(spec_error("e64.h4.mask_rank=4"),
            "MHA spec field 'mask_rank': expected 2 or 3, got '4'");
  EXPECT_EQ(spec_error("e64.h4.p=x"), "MHA spec field 'p': expected a number, got 'x'");
  EXPECT_EQ(spec_error("eX.h4"), "MHA spec field 'e': expected a non-negative integer, got 'X'");
  EXPECT_EQ(spec_error("e64.h4.h2"), "MHA spec field 'h': given twice");
  EXPECT_EQ(spec_error("e64.h4..b2"),
            "MHA spec field '<spec>': empty field (two dots in a row, or a leading/trailing dot)");
  EXPECT_EQ(spec_error("e64.h4.dtype=f8"),
            "MHA spec field 'dtype': expected f64, f32, f16 or bf16, got 'f8'");
  EXPECT_EQ(spec_error("e64.h4.q5"),
            "MHA spec field 'q': unknown field 'q5' (sizes are e, h, b, l, s; other fields are "
            "key=value)");
  EXPECT_EQ(spec_error("e64.h4.need_wieghts=0"),
            "MHA spec field 'need_wieghts': unknown field (known: e, h, b, l, s, dtype, wdtype, "
            "kdim, vdim, bias, add_bias_kv, add_zero_attn, kpm, mask, mask_rank, need_weights, "
            "avg, is_causal, p, batch_first, training, self, batched, fastpath, autocast, grad, "
            "nested)");
  EXPECT_EQ(spec_error("e64.h5"),
            "MHA spec: invalid call: num_heads: embed_dim (64) is not divisible by num_heads (5)");
  EXPECT_EQ(spec_error("e64.h4.l5.s6.self=1"),
            "MHA spec: invalid call: self: self-attention (query is key is value) needs l == s and "
            "kdim == vdim == e");
  EXPECT_EQ(spec_error("e64.h4.b2.batched=0"),
            "MHA spec: invalid call: batched: unbatched (2-D) inputs have batch 1, got b2");
  EXPECT_THROW(parse_mha_spec_or_throw("e64.h4.is_causal=1"), std::invalid_argument);
}

}  // namespace
}  // namespace sdpa::reference
