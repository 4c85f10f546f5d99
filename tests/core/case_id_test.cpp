// Tests of the canonical case ID (core/case_id.hpp, docs/CASE_ID.md): printing, parsing,
// round trips and errors that name the offending field.
#include "core/case_id.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace sdpa {
namespace {

Case parse_ok(const std::string& id) {
  auto r = parse_case_id(id);
  if (auto* e = std::get_if<CaseIdError>(&r)) {
    ADD_FAILURE() << "'" << id << "' did not parse: " << e->message;
    return Case{};
  }
  return std::get<Case>(r);
}

// Parsing must fail, and the error must name `field`.
::testing::AssertionResult fails_on(const std::string& id, const std::string& field) {
  auto r = parse_case_id(id);
  auto* e = std::get_if<CaseIdError>(&r);
  if (!e) {
    return ::testing::AssertionFailure()
           << "'" << id << "' parsed as '" << format_case_id(std::get<Case>(r)) << "'";
  }
  if (e->field != field) {
    return ::testing::AssertionFailure() << "'" << id << "': error names '" << e->field
                                         << "', expected '" << field << "': " << e->message;
  }
  if (e->message.find(field) == std::string::npos) {
    return ::testing::AssertionFailure() << "message does not mention the field: " << e->message;
  }
  return ::testing::AssertionSuccess();
}

constexpr const char* kMinimal = "b1.hq1.hkv1.l1.s1.dqk1.dv1.f32.seed0.gen=normal";

// Canonical IDs, one per feature and a few with everything at once. Each must print back
// exactly as written.
const std::vector<std::string>& canonical_ids() {
  static const std::vector<std::string> ids = {
      kMinimal,
      "b2.hq8.hkv2.l113.s203.dqk64.dv64.bf16.causal=br.p0.2.seed7.gen=normal",
      "b2.hq8.hkv8.l113.s203.dqk64.dv64.f16.causal=tl.seed7.gen=normal",
      "b1.hq32.hkv8.l1.s4096.dqk128.dv128.bf16.seed1.gen=normal",
      "b0.hq0.hkv0.l0.s0.dqk0.dv0.f64.seed0.gen=normal",
      "b4.hq16.hkv16.l200.s100.dqk192.dv128.f64.seed3.gen=uniform",
      // windows: both alignments, unbounded sides
      "b1.hq2.hkv2.l9.s9.dqk8.dv8.f32.win=-1_0_br.seed0.gen=normal",
      "b1.hq2.hkv2.l9.s9.dqk8.dv8.f32.win=4_-1_tl.seed0.gen=normal",
      "b1.hq2.hkv2.l9.s9.dqk8.dv8.f32.win=0_0_tl.seed0.gen=normal",
      "b1.hq2.hkv2.l9.s9.dqk8.dv8.f32.win=-1_-1_br.seed0.gen=normal",
      "b1.hq2.hkv2.l9.s17.dqk8.dv8.f32.causal=br.win=16_0_br.seed0.gen=normal",
      // masks and broadcast dimensions
      "b2.hq2.hkv1.l3.s4.dqk8.dv8.f16.mask=bool.seed0.gen=normal",
      "b2.hq2.hkv1.l3.s4.dqk8.dv8.f16.mask=add.seed0.gen=normal",
      "b2.hq2.hkv1.l3.s4.dqk8.dv8.f16.mask=bool.mbc=bh.seed0.gen=normal",
      "b2.hq2.hkv1.l3.s4.dqk8.dv8.f16.mask=add.mbc=bhls.seed0.gen=normal",
      "b2.hq2.hkv1.l3.s4.dqk8.dv8.f16.mask=add.mbc=s.seed0.gen=neg_inf_blocks",
      "b2.hq2.hkv1.l3.s4.dqk8.dv8.f16.mask=bool.mbc=hl.seed0.gen=normal",
      // variable lengths, packed
      "b3.hq2.hkv2.l8.s9.dqk8.dv8.f32.qlen=3_0_8.kvlen=9_1_0.seed5.gen=normal",
      "b3.hq2.hkv2.l8.s9.dqk8.dv8.f32.kvlen=9_1_0.seed5.gen=normal",
      "b3.hq2.hkv2.l8.s9.dqk8.dv8.f32.qlen=3_0_8.kvlen=9_1_0.packed.seed5.gen=normal",
      "b3.hq2.hkv2.l8.s9.dqk8.dv8.f32.qlen=3_0_8.kvlen=9_1_0.packed.lay=bshd.seed5.gen=normal",
      "b2.hq4.hkv2.l8.s8.dqk8.dv8.bf16.packed.seed5.gen=normal",
      // softcap, scale (negative, fractional, exponent form), dropout
      "b1.hq1.hkv1.l4.s4.dqk8.dv8.f32.softcap=30.seed0.gen=normal",
      "b1.hq1.hkv1.l4.s4.dqk8.dv8.f32.softcap=0.5.seed0.gen=normal",
      "b1.hq1.hkv1.l4.s4.dqk8.dv8.f32.scale=-0.125.seed0.gen=normal",
      "b1.hq1.hkv1.l4.s4.dqk8.dv8.f32.scale=1e-05.seed0.gen=normal",
      "b1.hq1.hkv1.l4.s4.dqk8.dv8.f32.scale=1.5e-05.seed0.gen=normal",
      "b1.hq1.hkv1.l4.s4.dqk8.dv8.f32.scale=0.1.seed0.gen=normal",
      "b1.hq1.hkv1.l4.s4.dqk8.dv8.f32.scale=1e+20.seed0.gen=normal",
      "b1.hq1.hkv1.l4.s4.dqk8.dv8.f32.scale=-0.seed0.gen=normal",
      "b1.hq1.hkv1.l4.s4.dqk8.dv8.f32.scale=0.seed0.gen=normal",
      "b1.hq1.hkv1.l4.s4.dqk8.dv8.f32.scale=3.seed0.gen=normal",
      "b1.hq1.hkv1.l4.s4.dqk8.dv8.f32.p0.2.seed0.gen=normal",
      "b1.hq1.hkv1.l4.s4.dqk8.dv8.f32.p0.999.dseed42.doff7.seed0.gen=normal",
      "b1.hq1.hkv1.l4.s4.dqk8.dv8.f32.p1e-05.seed0.gen=normal",
      "b1.hq1.hkv1.l4.s4.dqk8.dv8.f32.p0.5.dseed18446744073709551615.doff18446744073709551615."
      "seed18446744073709551615.gen=normal",
      "b1.hq1.hkv1.l4.s4.dqk8.dv8.f32.softcap=50.scale=0.08838834764831845.p0.1.seed9.gen=x",
      // layouts
      "b2.hq4.hkv2.l5.s6.dqk8.dv4.f16.lay=bshd.seed0.gen=normal",
      "b2.hq4.hkv2.l5.s6.dqk8.dv4.f16.gap=3.seed0.gen=normal",
      "b2.hq4.hkv2.l5.s6.dqk8.dv4.f16.off=1.seed0.gen=normal",
      "b2.hq4.hkv2.l5.s6.dqk8.dv4.f16.gap=3.off=1.seed0.gen=normal",
      "b2.hq4.hkv2.l5.s6.dqk8.dv4.f16.lay=bshd.gap=2.off=5.seed0.gen=normal",
      "b2.hq4.hkv2.l5.s6.dqk8.dv4.f16.lay=bshd.off=1.seed0.gen=normal",
      // explicit strides: K and V broadcast over heads, Q with odd strides, O permuted
      "b2.hq4.hkv2.l5.s6.dqk8.dv4.f16.qst=200_50_9_1_3.kst=48_0_8_1_0.vst=24_0_4_1_0."
      "ost=80_1_16_4_0.seed0.gen=normal",
      "b1.hq1.hkv1.l2.s2.dqk2.dv2.f32.qst=0_0_0_0_0.kst=4_4_2_1_0.vst=4_4_2_1_0."
      "ost=4_4_2_1_0.seed0.gen=normal",
      // outputs
      "b1.hq1.hkv1.l4.s4.dqk8.dv8.f32.lse.seed0.gen=normal",
      "b1.hq1.hkv1.l4.s4.dqk8.dv8.f32.attnw.seed0.gen=normal",
      "b1.hq1.hkv1.l4.s4.dqk8.dv8.f32.lse.attnw.seed0.gen=normal",
      "b1.hq1.hkv1.l4.s4.dqk8.dv8.f32.lse.bwd.seed0.gen=normal",
      "b1.hq1.hkv1.l4.s4.dqk8.dv8.f32.lse.attnw.bwd.seed0.gen=normal",
      "b1.hq1.hkv1.l4.s4.dqk8.dv8.f32.bwd.seed0.gen=normal",
      "b2.hq2.hkv2.l4.s4.dqk8.dv8.f32.mask=add.mbc=h.bwd.dbias.seed0.gen=normal",
      // everything
      "b3.hq6.hkv3.l7.s11.dqk24.dv12.bf16.causal=br.win=5_2_br.mask=add.mbc=hl.qlen=7_0_3."
      "kvlen=11_2_0.softcap=20.scale=-0.3.p0.25.dseed99.doff1000.lay=bshd.gap=1.off=2.lse."
      "attnw.seed12345.gen=adversarial_large_logits",
  };
  return ids;
}

TEST(CaseId, CanonicalIdsRoundTrip) {
  for (const std::string& id : canonical_ids()) {
    const Case c = parse_ok(id);
    EXPECT_EQ(format_case_id(c), id);
  }
}

TEST(CaseId, FieldsOfAFullId) {
  const Case c = parse_ok(canonical_ids().back());
  const Problem& p = c.problem;
  EXPECT_EQ(p.batch, 3);
  EXPECT_EQ(p.heads_q, 6);
  EXPECT_EQ(p.heads_kv, 3);
  EXPECT_EQ(p.len_q, 7);
  EXPECT_EQ(p.len_kv, 11);
  EXPECT_EQ(p.head_dim_qk, 24);
  EXPECT_EQ(p.head_dim_v, 12);
  EXPECT_EQ(p.dtype, DType::bf16);
  EXPECT_EQ(p.causal, Causal::bottom_right);
  EXPECT_TRUE(p.window.enabled);
  EXPECT_EQ(p.window.left, 5);
  EXPECT_EQ(p.window.right, 2);
  EXPECT_EQ(p.window.align, Align::bottom_right);
  EXPECT_EQ(p.mask, MaskKind::additive);
  EXPECT_EQ(p.mask_broadcast, kBroadcastH | kBroadcastL);
  EXPECT_EQ(p.seqlens_q, (std::vector<std::int64_t>{7, 0, 3}));
  EXPECT_EQ(p.seqlens_kv, (std::vector<std::int64_t>{11, 2, 0}));
  EXPECT_FALSE(p.packed);
  EXPECT_EQ(p.softcap, 20.0);
  ASSERT_TRUE(p.scale.has_value());
  EXPECT_EQ(*p.scale, -0.3);
  EXPECT_EQ(p.dropout_p, 0.25);
  EXPECT_EQ(p.dropout_seed, 99u);
  EXPECT_EQ(p.dropout_offset, 1000u);
  Problem expect = p;
  apply_layout(expect, LayoutKind::bshd, 1, 2);
  EXPECT_EQ(p.q.stride, expect.q.stride);
  EXPECT_EQ(p.o.stride, expect.o.stride);
  EXPECT_EQ(p.q.stride, (std::array<std::int64_t, 4>{7 * 145, 24, 145, 1}));
  EXPECT_EQ(p.v.base_offset, 2);
  EXPECT_TRUE(p.want_lse);
  EXPECT_TRUE(p.want_weights);
  EXPECT_EQ(c.data.seed, 12345u);
  EXPECT_EQ(c.data.generator, "adversarial_large_logits");
  EXPECT_EQ(validate(p), "");
}

TEST(CaseId, DefaultsOfAMinimalId) {
  const Case c = parse_ok("b2.hq4.l3.s5.dqk16.f16");
  const Problem& p = c.problem;
  EXPECT_EQ(p.heads_kv, 4);     // hkv defaults to hq
  EXPECT_EQ(p.head_dim_v, 16);  // dv defaults to dqk
  EXPECT_EQ(p.causal, Causal::none);
  EXPECT_FALSE(p.window.enabled);
  EXPECT_EQ(p.mask, MaskKind::none);
  EXPECT_EQ(p.mask_broadcast, 0);
  EXPECT_TRUE(p.seqlens_q.empty());
  EXPECT_TRUE(p.seqlens_kv.empty());
  EXPECT_FALSE(p.packed);
  EXPECT_EQ(p.softcap, 0.0);
  EXPECT_FALSE(p.scale.has_value());
  EXPECT_EQ(p.dropout_p, 0.0);
  EXPECT_EQ(p.dropout_seed, 0u);
  EXPECT_EQ(p.dropout_offset, 0u);
  EXPECT_FALSE(p.want_lse);
  EXPECT_FALSE(p.want_weights);
  EXPECT_EQ(c.data.seed, 0u);
  EXPECT_EQ(c.data.generator, "normal");
  // Default layout: contiguous bhsd, no offset.
  EXPECT_EQ(p.q.stride, contiguous_strides({2, 4, 3, 16}));
  EXPECT_EQ(p.o.stride, contiguous_strides({2, 4, 3, 16}));
  EXPECT_EQ(p.q.base_offset, 0);
  // Printing fills in every default-valued required field, in canonical order.
  EXPECT_EQ(format_case_id(c), "b2.hq4.hkv4.l3.s5.dqk16.dv16.f16.seed0.gen=normal");
}

TEST(CaseId, NonCanonicalSpellingsParseToTheCanonicalForm) {
  // Any order, defaults omitted, explicit lay=bhsd / gap=0 / off=0.
  const std::string canonical =
      "b2.hq8.hkv2.l113.s203.dqk64.dv64.bf16.causal=br.p0.2.seed7.gen=normal";
  for (const std::string id : {
           "gen=normal.seed7.p0.2.causal=br.bf16.dv64.dqk64.s203.l113.hkv2.hq8.b2",
           "b2.hq8.hkv2.l113.s203.dqk64.bf16.causal=br.p0.2.seed7",
           "b2.hq8.hkv2.l113.s203.dqk64.dv64.bf16.causal=br.p0.20.lay=bhsd.gap=0.off=0.seed7",
       }) {
    const Case c = parse_ok(id);
    EXPECT_EQ(format_case_id(c), canonical) << id;
  }
}

TEST(CaseId, ExplicitStridesThatMatchANamedLayoutPrintAsNamed) {
  Case c = parse_ok("b2.hq4.hkv2.l5.s6.dqk8.dv4.f16.lay=bshd.gap=2.off=5.seed0.gen=normal");
  const std::string explicit_id =
      "b2.hq4.hkv2.l5.s6.dqk8.dv4.f16.qst=" + std::to_string(c.problem.q.stride[0]) + "_8_34_1_5" +
      ".kst=" + std::to_string(c.problem.k.stride[0]) + "_8_18_1_5" +
      ".vst=" + std::to_string(c.problem.v.stride[0]) + "_4_10_1_5" +
      ".ost=" + std::to_string(c.problem.o.stride[0]) + "_4_18_1_5.seed0.gen=normal";
  const Case e = parse_ok(explicit_id);
  EXPECT_EQ(e.problem.q.stride, c.problem.q.stride);
  EXPECT_EQ(format_case_id(e), format_case_id(c));
}

TEST(CaseId, NumbersContinueAcrossDots) {
  // A segment that starts with a digit continues the previous token.
  Case c = parse_ok("b1.hq1.l1.s1.dqk1.f32.scale=0.125.softcap=12.5.p0.75");
  EXPECT_EQ(*c.problem.scale, 0.125);
  EXPECT_EQ(c.problem.softcap, 12.5);
  EXPECT_EQ(c.problem.dropout_p, 0.75);
  c = parse_ok("b1.hq1.l1.s1.dqk1.f32.scale=-1.5e-07");
  EXPECT_EQ(*c.problem.scale, -1.5e-07);
  // Shortest round-trip printing: 0.1 prints as 0.1, and every double comes back exactly.
  for (double x : {0.1, 1.0 / 3.0, -2.0 / 3.0, 1e-300, 5e-324, 1.7976931348623157e308, 0.3,
                   123456.789, std::nextafter(1.0, 2.0), 1e21, 1e-5, 0.0001}) {
    c.problem.scale = x;
    const std::string id = format_case_id(c);
    const Case back = parse_ok(id);
    ASSERT_TRUE(back.problem.scale.has_value()) << id;
    EXPECT_EQ(*back.problem.scale, x) << id;
    EXPECT_EQ(format_case_id(back), id);
  }
  c.problem.scale = 0.1;
  EXPECT_NE(format_case_id(c).find(".scale=0.1."), std::string::npos) << format_case_id(c);
}

TEST(CaseId, ParseOrThrow) {
  EXPECT_EQ(format_case_id(parse_case_id_or_throw(kMinimal)), kMinimal);
  try {
    parse_case_id_or_throw("b1.hq1.l1.s1.dqk1.f32.win=1_2");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("win"), std::string::npos) << e.what();
  }
}

TEST(CaseId, ErrorsNameTheField) {
  const std::string ok = "b1.hq2.l3.s4.dqk8.f32";
  parse_ok(ok);
  EXPECT_TRUE(fails_on("", "<id>"));
  EXPECT_TRUE(fails_on(ok + "..seed1", "<id>"));  // double dot
  EXPECT_TRUE(fails_on("." + ok, "<id>"));        // leading dot
  EXPECT_TRUE(fails_on(ok + ".", "<id>"));        // trailing dot
  EXPECT_TRUE(fails_on(ok + ".foo=1", "foo"));    // unknown field with a value
  EXPECT_TRUE(fails_on(ok + ".bar7", "bar"));     // unknown numeric field
  EXPECT_TRUE(fails_on(ok + ".x", "x"));          // unknown flag
  EXPECT_TRUE(fails_on(ok + ".f8", "f"));         // unknown dtype reads as a field "f"
  EXPECT_TRUE(fails_on(ok + ".B2", "B2"));        // not a lower-case name
  EXPECT_TRUE(fails_on(ok + ".=5", "=5"));        // no name at all
  EXPECT_TRUE(fails_on("=b1.hq2.l3.s4.dqk8.f32", "=b1"));
  EXPECT_TRUE(fails_on(ok + ".l5", "l"));         // duplicate
  EXPECT_TRUE(fails_on(ok + ".f16", "dtype"));    // duplicate dtype
  EXPECT_TRUE(fails_on(ok + ".lse.lse", "lse"));  // duplicate flag
  EXPECT_TRUE(fails_on(ok + ".seed1.seed2", "seed"));
  // Missing required fields.
  EXPECT_TRUE(fails_on("hq2.l3.s4.dqk8.f32", "b"));
  EXPECT_TRUE(fails_on("b1.l3.s4.dqk8.f32", "hq"));
  EXPECT_TRUE(fails_on("b1.hq2.s4.dqk8.f32", "l"));
  EXPECT_TRUE(fails_on("b1.hq2.l3.dqk8.f32", "s"));
  EXPECT_TRUE(fails_on("b1.hq2.l3.s4.f32", "dqk"));
  EXPECT_TRUE(fails_on("b1.hq2.l3.s4.dqk8", "dtype"));
  EXPECT_TRUE(fails_on("b1.hq2.l3.s4.dqk8.dtype=f8", "dtype"));
  EXPECT_TRUE(fails_on("b1.hq2.l3.s4.dqk8.dtype=", "dtype"));
  // Bad numbers.
  EXPECT_TRUE(fails_on("b1.hq2x.l3.s4.dqk8.f32", "hq"));
  EXPECT_TRUE(fails_on("b.hq2.l3.s4.dqk8.f32", "b"));
  EXPECT_TRUE(fails_on("b1.hq2.l-3.s4.dqk8.f32", "l"));
  EXPECT_TRUE(fails_on("b1.hq2.l3.s4x.dqk8.f32", "s"));
  EXPECT_TRUE(fails_on("b1.hq2.l3.s4.dqk8.f32.dv99999999999999999999", "dv"));
  EXPECT_TRUE(fails_on("b1.hq2.l3.s4.dqk8.f32.hkv=2", "hkv"));  // numeric fields take no '='
  EXPECT_TRUE(fails_on("b1.hq2.l3.s4.dqk2.5.f32", "dqk"));      // integers only
  EXPECT_TRUE(fails_on(ok + ".p0.2x", "p"));
  EXPECT_TRUE(fails_on(ok + ".p", "p"));
  EXPECT_TRUE(fails_on(ok + ".p-", "p"));
  EXPECT_TRUE(fails_on(ok + ".pinf", "pinf"));  // letters run on: an unknown field "pinf"
  EXPECT_TRUE(fails_on(ok + ".p+0.5", "p"));
  EXPECT_TRUE(fails_on(ok + ".scale=", "scale"));
  EXPECT_TRUE(fails_on(ok + ".scale=inf", "scale"));
  EXPECT_TRUE(fails_on(ok + ".scale=nan", "scale"));
  EXPECT_TRUE(fails_on(ok + ".softcap=-inf", "softcap"));
  EXPECT_TRUE(fails_on(ok + ".scale=1e999", "scale"));
  EXPECT_TRUE(fails_on(ok + ".softcap=abc", "softcap"));
  EXPECT_TRUE(fails_on(ok + ".seed-1", "seed"));
  EXPECT_TRUE(fails_on(ok + ".seed18446744073709551616", "seed"));
  EXPECT_TRUE(fails_on(ok + ".dseed1x", "dseed"));
  EXPECT_TRUE(fails_on(ok + ".doff-2", "doff"));
  // Structured fields.
  EXPECT_TRUE(fails_on(ok + ".causal=xx", "causal"));
  EXPECT_TRUE(fails_on(ok + ".causal", "causal"));
  EXPECT_TRUE(fails_on(ok + ".win=1_2", "win"));
  EXPECT_TRUE(fails_on(ok + ".win=1_2_3_tl", "win"));
  EXPECT_TRUE(fails_on(ok + ".win=1_2_up", "win"));
  EXPECT_TRUE(fails_on(ok + ".win=-2_0_tl", "win"));
  EXPECT_TRUE(fails_on(ok + ".win=a_0_tl", "win"));
  EXPECT_TRUE(fails_on(ok + ".mask=foo", "mask"));
  EXPECT_TRUE(fails_on(ok + ".mask=bool.mbc=x", "mbc"));
  EXPECT_TRUE(fails_on(ok + ".mask=bool.mbc=", "mbc"));
  EXPECT_TRUE(fails_on(ok + ".mask=bool.mbc=bb", "mbc"));
  EXPECT_TRUE(fails_on("b2.hq2.l3.s4.dqk8.f32.qlen=1_", "qlen"));
  EXPECT_TRUE(fails_on("b2.hq2.l3.s4.dqk8.f32.qlen=1_-1", "qlen"));
  EXPECT_TRUE(fails_on("b2.hq2.l3.s4.dqk8.f32.kvlen=", "kvlen"));
  EXPECT_TRUE(fails_on(ok + ".packed=1", "packed"));
  EXPECT_TRUE(fails_on(ok + ".lse1", "lse"));
  EXPECT_TRUE(fails_on(ok + ".lay=bsdh", "lay"));
  EXPECT_TRUE(fails_on(ok + ".gap=-1", "gap"));
  EXPECT_TRUE(fails_on(ok + ".off=x", "off"));
  EXPECT_TRUE(fails_on(ok + ".gen=", "gen"));
  EXPECT_TRUE(fails_on(ok + ".gen=Normal", "gen"));
  EXPECT_TRUE(fails_on(ok + ".gen=a-b", "gen"));
  // Explicit strides: five values each, all four tensors, never with lay/gap/off.
  const std::string st = ".qst=1_1_1_1_0.kst=1_1_1_1_0.vst=1_1_1_1_0.ost=1_1_1_1_0";
  parse_ok(ok + st);
  EXPECT_TRUE(fails_on(ok + ".qst=1_1_1_1.kst=1_1_1_1_0.vst=1_1_1_1_0.ost=1_1_1_1_0", "qst"));
  EXPECT_TRUE(fails_on(ok + ".qst=1_1_1_1_0.kst=1_1_1_-1_0.vst=1_1_1_1_0.ost=1_1_1_1_0", "kst"));
  EXPECT_TRUE(fails_on(ok + ".qst=1_1_1_1_0.kst=1_1_1_1_0.vst=1_1_1_1_0", "ost"));
  EXPECT_TRUE(fails_on(ok + ".kst=1_1_1_1_0.vst=1_1_1_1_0.ost=1_1_1_1_0", "qst"));
  for (const std::string mix : {".lay=bshd", ".gap=1", ".off=1", ".lay=bhsd"}) {
    auto r = parse_case_id(ok + st + mix);
    auto* e = std::get_if<CaseIdError>(&r);
    ASSERT_NE(e, nullptr) << mix;
    const std::set<std::string> allowed = {"qst", "kst", "vst", "ost", "lay", "gap", "off"};
    EXPECT_TRUE(allowed.count(e->field)) << e->field;
    EXPECT_NE(e->message.find("lay"), std::string::npos) << e->message;
  }
}

// IDs of invalid problems parse (the problem is reported INVALID later, by validate()).
TEST(CaseId, InvalidProblemsStillParse) {
  for (const std::string id : {
           "b1.hq3.hkv2.l1.s1.dqk1.dv1.f32.seed0.gen=normal",
           "b1.hq1.hkv1.l1.s1.dqk1.dv1.f32.mbc=b.seed0.gen=normal",
           "b1.hq1.hkv1.l1.s1.dqk1.dv1.f32.p1.seed0.gen=normal",
           "b1.hq1.hkv1.l1.s1.dqk1.dv1.f32.softcap=-1.seed0.gen=normal",
           "b2.hq1.hkv1.l1.s1.dqk1.dv1.f32.qlen=5_0.seed0.gen=normal",
           "b2.hq1.hkv1.l1.s1.dqk1.dv1.f32.mask=bool.packed.seed0.gen=normal",
           "b1.hq1.hkv1.l2.s2.dqk2.dv2.f32.qst=4_4_2_1_0.kst=4_4_2_1_0.vst=4_4_2_1_0."
           "ost=0_0_1_1_0.seed0.gen=normal",
       }) {
    const Case c = parse_ok(id);
    EXPECT_NE(validate(c.problem), "") << id;
    EXPECT_EQ(format_case_id(c), id);
  }
}

// Packed rows with a wrong number of lengths: parsing must not index past the list.
TEST(CaseId, PackedWithWrongLengthCountParses) {
  for (const std::string id : {
           "b3.hq1.hkv1.l4.s4.dqk8.dv8.f32.qlen=1_2.packed.seed0.gen=normal",
           "b1.hq1.hkv1.l4.s4.dqk8.dv8.f32.qlen=1_2_3_4.kvlen=4.packed.seed0.gen=normal",
           "b5.hq1.hkv1.l4.s4.dqk8.dv8.f32.kvlen=1.packed.lay=bshd.seed0.gen=normal",
       }) {
    const Case c = parse_ok(id);
    EXPECT_EQ(format_case_id(c), id);
    EXPECT_NE(validate(c.problem), "") << id;
  }
}

// Sizes whose strides or element counts overflow int64: the ID parses (no signed overflow,
// no huge allocation), prints back the same, and the problem is INVALID. Strides saturate at
// INT64_MAX, so a gap that saturates a stride reads back smaller (the printed ID is then a
// fixed point, and INVALID all the same).
TEST(CaseId, HugeSizesParseAndAreInvalid) {
  {
    const Case c = parse_ok("b1.hq1.hkv1.l2.s2.dqk2.dv2.f32.gap=9223372036854775807");
    const std::string once = format_case_id(c);
    EXPECT_EQ(format_case_id(parse_ok(once)), once);
    EXPECT_NE(validate(c.problem), "");
  }
  for (const std::string id : {
           "b1.hq1000000.hkv1.l100000000000.s1.dqk100000000.dv1.f32.seed0.gen=normal",
           "b2.hq1.hkv1.l4611686018427387904.s1.dqk4.dv4.f32.seed0.gen=normal",
           "b3000000000.hq1.hkv1.l3000000000.s1.dqk2.dv2.f32.packed.seed0.gen=normal",
           "b1.hq4611686018427387904.hkv1.l2.s2.dqk4.dv4.f32.lay=bshd.seed0.gen=normal",
           "b9223372036854775807.hq9223372036854775807.hkv1.l9223372036854775807."
           "s9223372036854775807.dqk9223372036854775807.dv1.f16.mask=add.seed0.gen=normal",
       }) {
    const Case c = parse_ok(id);
    EXPECT_EQ(format_case_id(c), id);
    EXPECT_NE(validate(c.problem), "") << id;
  }
}

// ------------------------------------------------------------------ property

rc::Gen<double> finite_double() {
  return rc::gen::oneOf(
      rc::gen::element(0.0, -0.0, 1.0, -1.0, 0.5, 0.1, 1e-05, 1e20, -3.25, 5e-324,
                       1.7976931348623157e308),
      rc::gen::suchThat(rc::gen::arbitrary<double>(), [](double x) { return std::isfinite(x); }),
      rc::gen::map(rc::gen::arbitrary<std::uint64_t>(), [](std::uint64_t bits) {
        const double x = std::bit_cast<double>(bits);
        return std::isfinite(x) ? x : 0.25;
      }));
}

rc::Gen<std::vector<std::int64_t>> lengths() {
  return rc::gen::container<std::vector<std::int64_t>>(rc::gen::inRange<std::int64_t>(0, 12));
}

rc::Gen<Case> arbitrary_case() {
  return rc::gen::exec([] {
    Case c;
    Problem& p = c.problem;
    p.batch = *rc::gen::inRange<std::int64_t>(0, 6);
    p.heads_q = *rc::gen::inRange<std::int64_t>(0, 9);
    p.heads_kv = *rc::gen::inRange<std::int64_t>(0, 9);
    p.len_q = *rc::gen::inRange<std::int64_t>(0, 300);
    p.len_kv = *rc::gen::inRange<std::int64_t>(0, 300);
    p.head_dim_qk = *rc::gen::inRange<std::int64_t>(0, 257);
    p.head_dim_v = *rc::gen::inRange<std::int64_t>(0, 257);
    p.dtype = *rc::gen::element(DType::f64, DType::f32, DType::f16, DType::bf16);
    p.causal = *rc::gen::element(Causal::none, Causal::top_left, Causal::bottom_right);
    if (*rc::gen::arbitrary<bool>()) {
      p.window.enabled = true;
      p.window.left = *rc::gen::inRange<std::int64_t>(-1, 1000);
      p.window.right = *rc::gen::inRange<std::int64_t>(-1, 1000);
      p.window.align = *rc::gen::element(Align::top_left, Align::bottom_right);
    }
    p.mask = *rc::gen::element(MaskKind::none, MaskKind::boolean, MaskKind::additive);
    p.mask_broadcast = *rc::gen::inRange<std::uint8_t>(0, 16);
    p.seqlens_q = *lengths();
    p.seqlens_kv = *lengths();
    p.packed = *rc::gen::arbitrary<bool>();
    if (*rc::gen::arbitrary<bool>()) p.softcap = *finite_double();
    if (*rc::gen::arbitrary<bool>()) p.scale = *finite_double();
    if (*rc::gen::arbitrary<bool>()) p.dropout_p = *finite_double();
    p.dropout_seed = *rc::gen::arbitrary<std::uint64_t>();
    p.dropout_offset = *rc::gen::arbitrary<std::uint64_t>();
    switch (*rc::gen::inRange(0, 3)) {
      case 0:
        apply_layout(p, LayoutKind::bhsd, *rc::gen::inRange<std::int64_t>(0, 5),
                     *rc::gen::inRange<std::int64_t>(0, 5));
        break;
      case 1:
        apply_layout(p, LayoutKind::bshd, *rc::gen::inRange<std::int64_t>(0, 5),
                     *rc::gen::inRange<std::int64_t>(0, 5));
        break;
      default:
        for (TensorLayout* t : {&p.q, &p.k, &p.v, &p.o}) {
          for (auto& s : t->stride) s = *rc::gen::inRange<std::int64_t>(0, 100000);
          t->base_offset = *rc::gen::inRange<std::int64_t>(0, 100);
        }
    }
    p.want_lse = *rc::gen::arbitrary<bool>();
    p.want_weights = *rc::gen::arbitrary<bool>();
    c.data.seed = *rc::gen::arbitrary<std::uint64_t>();
    c.data.generator = *rc::gen::oneOf(
        rc::gen::element<std::string>("normal", "uniform", "small_int", "sparse", "x1"),
        rc::gen::nonEmpty(
            rc::gen::container<std::string>(rc::gen::element('a', 'b', 'z', '0', '9', '_'))));
    return c;
  });
}

bool same_bits(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

RC_GTEST_PROP(CaseIdProperty, FormatParseFormatIsStableAndExact, ()) {
  const Case c = *arbitrary_case();
  const Problem& p = c.problem;
  const std::string id = format_case_id(c);
  auto r = parse_case_id(id);
  if (auto* e = std::get_if<CaseIdError>(&r)) RC_FAIL(id + ": " + e->message);
  const Case back = std::get<Case>(r);
  const Problem& q = back.problem;
  RC_ASSERT(format_case_id(back) == id);
  RC_ASSERT(q.batch == p.batch);
  RC_ASSERT(q.heads_q == p.heads_q);
  RC_ASSERT(q.heads_kv == p.heads_kv);
  RC_ASSERT(q.len_q == p.len_q);
  RC_ASSERT(q.len_kv == p.len_kv);
  RC_ASSERT(q.head_dim_qk == p.head_dim_qk);
  RC_ASSERT(q.head_dim_v == p.head_dim_v);
  RC_ASSERT(q.dtype == p.dtype);
  const TensorLayout* before[] = {&p.q, &p.k, &p.v, &p.o};
  const TensorLayout* after[] = {&q.q, &q.k, &q.v, &q.o};
  for (int t = 0; t < 4; ++t) {
    RC_ASSERT(before[t]->stride == after[t]->stride);
    RC_ASSERT(before[t]->base_offset == after[t]->base_offset);
  }
  RC_ASSERT(q.causal == p.causal);
  RC_ASSERT(q.window.enabled == p.window.enabled);
  RC_ASSERT(q.window.left == p.window.left);
  RC_ASSERT(q.window.right == p.window.right);
  RC_ASSERT(q.window.align == p.window.align);
  RC_ASSERT(q.mask == p.mask);
  RC_ASSERT(q.mask_broadcast == p.mask_broadcast);
  RC_ASSERT(q.seqlens_q == p.seqlens_q);
  RC_ASSERT(q.seqlens_kv == p.seqlens_kv);
  RC_ASSERT(q.packed == p.packed);
  RC_ASSERT(q.softcap == p.softcap);  // -0 prints as no softcap and reads back as +0: equal
  RC_ASSERT(q.scale.has_value() == p.scale.has_value());
  if (p.scale) RC_ASSERT(same_bits(*q.scale, *p.scale));  // -0 kept
  RC_ASSERT(q.dropout_p == p.dropout_p);
  RC_ASSERT(q.dropout_seed == p.dropout_seed);
  RC_ASSERT(q.dropout_offset == p.dropout_offset);
  RC_ASSERT(q.want_lse == p.want_lse);
  RC_ASSERT(q.want_weights == p.want_weights);
  RC_ASSERT(back.data.seed == c.data.seed);
  RC_ASSERT(back.data.generator == c.data.generator);
  // validate() gives the same verdict on both.
  RC_ASSERT(validate(q) == validate(p));
}

// Any string either parses to a case whose ID is a fixed point, or gives an error with a
// non-empty field; it never crashes.
RC_GTEST_PROP(CaseIdProperty, ArbitraryStringsParseOrFailCleanly, ()) {
  const std::string base = *rc::gen::element<std::string>(
      kMinimal, "b3.hq2.hkv2.l8.s9.dqk8.dv8.f32.qlen=3_0_8.kvlen=9_1_0.packed.seed5.gen=normal",
      "b1.hq1.l4.s4.dqk8.f32.scale=-0.125.p0.2.win=4_-1_tl.mask=add.mbc=bh");
  std::string s = base;
  const int edits = *rc::gen::inRange(0, 4);
  for (int k = 0; k < edits; ++k) {
    const std::size_t at = *rc::gen::inRange<std::size_t>(0, s.size() + 1);
    const char ch = *rc::gen::element('.', '_', '=', '-', '0', '7', 'e', 'b', 'x', 'p', 's');
    if (*rc::gen::arbitrary<bool>() && at < s.size()) {
      s.erase(at, 1);
    } else {
      s.insert(at, 1, ch);
    }
  }
  auto r = parse_case_id(s);
  if (auto* e = std::get_if<CaseIdError>(&r)) {
    RC_ASSERT(!e->field.empty());
    RC_ASSERT(e->message.find(e->field) != std::string::npos);
  } else {
    const std::string id = format_case_id(std::get<Case>(r));
    const Case again = parse_case_id_or_throw(id);
    RC_ASSERT(format_case_id(again) == id);
  }
}

}  // namespace
}  // namespace sdpa
