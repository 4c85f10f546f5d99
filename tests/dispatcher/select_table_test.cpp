// The dispatcher's choice for representative (problem, device, policy) triples across the
// simulated architectures: one row per decision, the expected backend written out.
#include <gtest/gtest.h>

#include <sstream>

#include "dispatcher/dispatcher.hpp"
#include "test_backends.hpp"

namespace sdpa {
namespace {

using dispatcher::Policy;

struct Row {
  std::string case_id;  // without seed and generator
  std::string device;   // a --device name
  std::string policy;   // "" default, "only=a,b", "prio=a,b", "none", "norules", "det",
                        // "pytorch" (the PyTorch policy's model)
  std::string expect;   // backend name, "error:none" (none viable), "error:disabled" (none enabled)
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');) out.push_back(x);
  return out;
}

Policy make_policy(const std::string& spec) {
  Policy p;
  if (spec.rfind("only=", 0) == 0) {
    p.enabled = split(spec.substr(5));
  } else if (spec.rfind("prio=", 0) == 0) {
    p.enabled = split(spec.substr(5));
    p.priority = *p.enabled;
  } else if (spec == "none") {
    p.enabled = std::vector<std::string>{};
  } else if (spec == "norules") {
    p.heuristics = false;
  } else if (spec == "det") {
    p.require_deterministic = true;
  } else if (spec == "pytorch") {
    p.model = dispatcher::PolicyModel::pytorch;
  } else if (!spec.empty()) {
    throw std::invalid_argument("bad policy spec in the table: " + spec);
  }
  return p;
}

const std::string C = "b2.hq8.l128.s128.dqk64";
const std::string D256 = "b2.hq8.l128.s128.dqk256";
const std::string P = "qlen=64_128.kvlen=100_128.packed";

const std::vector<Row>& rows() {
  static const std::vector<Row> r = {
      // sm80: flash for f16/bf16, mem-efficient for f32 and masks, math for the rest.
      {C + ".f16", "sm80", "", "cuda.flash"},
      {C + ".bf16", "sm80", "", "cuda.flash"},
      {C + ".f32", "sm80", "", "cuda.mem_efficient"},
      {C + ".f64", "sm80", "", "cuda.math"},
      {C + ".f16.mask=bool", "sm80", "", "cuda.mem_efficient"},
      {C + ".f16.mask=add", "sm80", "", "cuda.mem_efficient"},
      {C + ".f16.mask=add.mbc=s", "sm80", "", "cuda.math"},
      {"b2.hq8.l128.s256.dqk64.f16.causal=tl", "sm80", "", "cuda.mem_efficient"},
      {"b2.hq8.l128.s256.dqk64.f16.causal=br", "sm80", "", "cuda.flash"},
      {C + ".f16.causal=tl", "sm80", "", "cuda.flash"},
      {"b2.hq8.l128.s128.dqk64.dv32.f16", "sm80", "", "cuda.mem_efficient"},
      {"b2.hq8.l128.s128.dqk300.f16", "sm80", "", "cuda.math"},
      {"b2.hq8.l128.s128.dqk264.f16", "sm80", "", "cuda.mem_efficient"},
      {"b2.hq8.l128.s128.dqk60.f16", "sm80", "", "cuda.flash"},
      {"b2.hq8.l128.s128.dqk60.f32", "sm80", "", "cuda.mem_efficient"},
      {"b2.hq8.l128.s128.dqk62.f32", "sm80", "", "cuda.math"},
      {C + ".f16.p0.1", "sm80", "", "cuda.flash"},
      {"b2.hq8.hkv2.l128.s128.dqk64.f16", "sm80", "", "cuda.flash"},
      {C + ".f32.off=2", "sm80", "", "cuda.math"},
      {C + ".f16.softcap=30", "sm80", "", "cuda.flash"},  // the kernel computes them
      {C + ".f16.win=16_0_br", "sm80", "", "cuda.flash"},
      {C + ".f16.kvlen=100_128", "sm80", "", "cuda.flash"},
      {C + ".f32.kvlen=100_128", "sm80", "", "cuda.math"},
      {C + ".f16." + P, "sm80", "", "cuda.flash"},
      {"b2.hq8.l128.s128.dqk60.f16." + P, "sm80", "", "cuda.math"},
      {C + ".f16.lse", "sm80", "", "cuda.flash"},
      {C + ".f16.attnw", "sm80", "", "cuda.math"},
      {"b2.hq8.l0.s128.dqk64.f16", "sm80", "", "cuda.math"},
      {C + ".f16.gap=8", "sm80", "", "cuda.flash"},
      {"b1.hq1.l4.s4.dqk4.f16.qst=32_32_8_2_0.kst=32_32_8_2_0.vst=32_32_8_2_0.ost=16_16_4_1_0",
       "sm80", "", "cuda.math"},
      {"b1.hq1.l4.s4.dqk1.f16.qst=8_8_2_3_0.kst=8_8_2_3_0.vst=8_8_2_3_0.ost=4_4_1_1_0", "sm80", "",
       "cuda.flash"},
      // sm75 and sm50: no flash, no bf16, smaller alignments.
      {C + ".f16", "sm75", "", "cuda.mem_efficient"},
      {C + ".bf16", "sm75", "", "cuda.math"},
      {"b2.hq8.l128.s128.dqk62.f32", "sm75", "", "cuda.mem_efficient"},
      {"b2.hq8.l128.s128.dqk60.f16", "sm75", "", "cuda.math"},
      {C + ".f32.off=1", "sm75", "", "cuda.mem_efficient"},
      {"b2.hq8.l128.s128.dqk63.f32", "sm50", "", "cuda.mem_efficient"},
      {"b2.hq8.l128.s128.dqk60.f16", "sm50", "", "cuda.mem_efficient"},
      // sm86 / sm89.
      {D256 + ".f16", "sm86", "", "cuda.flash"},
      {C + ".bf16.causal=br", "sm86", "", "cuda.flash"},
      {"b2.hq8.l128.s128.dqk224.f16.p0.2", "sm89", "", "cuda.flash"},
      // sm90: PyTorch prefers cuDNN (cuDNN 9.16 > 9.15) where it can run; the suite has no
      // cuDNN kernel (cuda.cudnn only models PyTorch's choice), and its rules never promote
      // a model: it takes the next kernel.
      {C + ".f16", "sm90", "pytorch", "cuda.cudnn"},
      {C + ".f16", "sm90", "", "cuda.flash"},
      {"b2.hq8.l128.s128.dqk192.dv128.f16", "sm90", "pytorch", "cuda.cudnn"},
      {"b2.hq8.l128.s128.dqk192.dv128.f16", "sm90", "", "cuda.mem_efficient"},
      {D256 + ".f16", "sm90", "", "cuda.flash"},
      {D256 + ".f16", "sm90:cudnn=9.23.0", "pytorch", "cuda.cudnn"},
      {D256 + ".f16", "sm90:cudnn=9.23.0", "", "cuda.flash"},
      {C + ".f16.p0.1", "sm90", "", "cuda.flash"},
      {C + ".f16.p0.125", "sm90", "pytorch", "cuda.cudnn"},
      {C + ".f16.p0.125", "sm90", "", "cuda.flash"},
      {C + ".f16.p0.125", "sm90:cudnn=9.12.0", "only=cuda.cudnn,cuda.math", "cuda.math"},
      {C + ".f16", "sm90:cudnn=9.15.0", "", "cuda.flash"},
      {"b1.hq8.l1.s4096.dqk128.f16", "sm90", "", "cuda.flash"},  // decode_split_kv
      {"b2.hq8.l128.s1.dqk64.f16", "sm90", "", "cuda.flash"},
      {C + ".bf16.causal=br", "sm90", "", "cuda.flash"},
      {C + ".f16.mask=bool", "sm90", "pytorch", "cuda.cudnn"},
      {C + ".f16.mask=bool", "sm90", "", "cuda.mem_efficient"},
      {C + ".f16", "sm90", "det", "cuda.flash"},
      {C + ".f16", "sm90", "norules", "cuda.flash"},
      {"b2.hq8.l256.s256.dqk64.f16.qlen=200_256.kvlen=200_256.packed", "sm90:cudnn_nested=1", "",
       "cuda.flash"},
      {"b2.hq8.l256.s256.dqk64.f16.qlen=200_256.kvlen=200_256.packed", "sm90", "", "cuda.flash"},
      {"b2.hq8.l64.s64.dqk64.f16.qlen=64_64.kvlen=64_64.packed", "sm90", "", "cuda.flash"},
      {C + ".f32", "sm90", "", "cuda.mem_efficient"},
      {C + ".f16", "sm90:cudnn=none", "", "cuda.flash"},
      // sm10x and sm12x.
      {C + ".f16", "sm100", "pytorch", "cuda.cudnn"},
      {C + ".f16", "sm100", "", "cuda.flash"},
      {D256 + ".f16", "sm100", "", "cuda.flash"},
      {C + ".f16", "sm121", "", "cuda.flash"},
      {D256 + ".f16", "sm120", "", "cuda.flash"},  // 4-warp blocks in its 99 KiB
      {C + ".f32", "sm121", "", "cuda.mem_efficient"},
      {C + ".f16", "sm103", "pytorch", "cuda.cudnn"},
      {C + ".f16", "sm103", "", "cuda.flash"},
      {C + ".f16", "sm101", "", "cuda.flash"},
      {C + ".f16", "sm101:cuda=13.0", "pytorch", "cuda.cudnn"},
      {C + ".f16", "sm101:cuda=13.0", "", "cuda.flash"},
      {D256 + ".f16", "sm107:cudnn=9.24.0", "only=cuda.cudnn", "error:none"},
      {D256 + ".f16", "sm107:cudnn=9.26.0", "only=cuda.cudnn", "cuda.cudnn"},
      // Policies.
      {C + ".f16", "sm80", "only=cuda.math", "cuda.math"},
      {C + ".f16", "sm80", "only=cuda.mem_efficient,cuda.flash", "cuda.flash"},
      {C + ".f16", "sm80", "prio=cuda.mem_efficient,cuda.flash", "cuda.mem_efficient"},
      {C + ".f16", "sm80", "none", "error:disabled"},
      {C + ".f32", "sm80", "only=cuda.flash", "error:none"},
      {C + ".f16", "sm80", "prio=cuda.cudnn,cuda.flash", "cuda.cudnn"},
      {"b1.hq8.l1.s4096.dqk128.f16", "sm90", "prio=cuda.cudnn,cuda.flash", "cuda.cudnn"},
      {C + ".f16", "sm80", "only=cpu.flash,cpu.math", "error:none"},
      // CPUs (test doubles for the CPU backends).
      {C + ".f32", "cpu-avx2", "", "cpu.flash"},
      {"b1.hq1.l4.s4.dqk8.f32", "cpu-avx2", "", "cpu.math"},  // tiny_prefers_math
      {"b1.hq1.l4.s4.dqk8.f32", "cpu-avx2", "norules", "cpu.flash"},
      {"b1.hq1.l1.s1024.dqk64.f32", "cpu-avx2", "", "cpu.mem_efficient"},  // decode_split_kv
      {"b1.hq4.l1.s1024.dqk64.f32", "cpu-avx2", "", "cpu.flash"},
      {"b1.hq4.l1.s1024.dqk64.f32", "cpu-avx2:cores=8", "", "cpu.mem_efficient"},
      {"b1.hq1.l1.s256.dqk32.f32", "cpu-avx2", "", "cpu.math"},  // both rules; tiny wins
      {C + ".f32.p0.1", "cpu-scalar", "", "cpu.math"},
      {"b2.hq8.l128.s128.dqk64.dv32.f32", "cpu-avx512", "", "cpu.mem_efficient"},
      {C + ".bf16.attnw", "cpu-avx512bf16", "", "cpu.math"},
      {C + ".f32.win=8_0_br", "cpu-avx2", "", "cpu.mem_efficient"},
      {C + ".f32", "cpu-avx2", "prio=cpu.math,cpu.flash", "cpu.math"},
      {C + ".f32", "cpu-avx2", "det", "cpu.flash"},
      {C + ".f32", "cpu-avx2", "only=cuda.flash", "error:none"},
  };
  return r;
}

class SelectTable : public ::testing::TestWithParam<Row> {};

TEST_P(SelectTable, ChoosesTheExpectedBackend) {
  const Row& row = GetParam();
  const Problem p = testing::problem(row.case_id + ".seed1.gen=normal");
  const Device d = testing::device(row.device);
  const Policy policy = make_policy(row.policy);
  const auto& reg = testing::test_registry();
  std::string got;
  try {
    got = std::string(dispatcher::select(p, d, policy, reg).name());
  } catch (const dispatcher::NoBackendEnabledError&) {
    got = "error:disabled";
  } catch (const dispatcher::NoViableBackendError&) {
    got = "error:none";
  }
  EXPECT_EQ(got, row.expect) << row.case_id << " on " << row.device << " policy '" << row.policy
                             << "'";
  // explain() reaches the same decision.
  const auto e = dispatcher::explain(p, d, policy, reg);
  const std::string explained = e.outcome == dispatcher::Outcome::selected ? e.chosen
                                : e.outcome == dispatcher::Outcome::no_backend_enabled
                                    ? "error:disabled"
                                    : "error:none";
  EXPECT_EQ(explained, row.expect);
}

std::string row_name(const ::testing::TestParamInfo<Row>& info) {
  std::string n = std::to_string(info.index) + "_" + info.param.device + "_" + info.param.expect;
  for (char& ch : n) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return n;
}

INSTANTIATE_TEST_SUITE_P(Triples, SelectTable, ::testing::ValuesIn(rows()), row_name);

TEST(SelectTableSize, AtLeastSixtyTriplesOverEverySimulatedArch) {
  EXPECT_GE(rows().size(), 60u);
  for (const auto& name : simulated_device_names()) {
    bool seen = false;
    for (const auto& r : rows()) seen |= r.device.rfind(name, 0) == 0;
    EXPECT_TRUE(seen) << "no row for " << name;
  }
}

}  // namespace
}  // namespace sdpa
