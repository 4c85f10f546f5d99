// Nothing outside a backend's own folder knows a backend by its name: what the dispatcher, pair
// coverage and the judge need is data the backend declares (capabilities, traits, tiling
// cuts). A copy of cpu.flash registered under another name therefore gets the same
// explanation, the same pair dimensions and covering set, and the same verdicts.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "conformance/engine/check_case.hpp"
#include "conformance/engine/pair_coverage.hpp"
#include "core/case_id.hpp"
#include "core/device.hpp"
#include "dispatcher/dispatcher.hpp"
#include "kernels/lowered_problem.hpp"
#include "kernels/registry.hpp"

namespace sdpa {
namespace {

constexpr const char* kRenamed = "vendor.renamed_flash";

class Renamed final : public Backend {
 public:
  explicit Renamed(const Backend& inner) : inner_(inner) {}
  std::string_view name() const override { return kRenamed; }
  const Capabilities& capabilities() const override { return inner_.capabilities(); }
  PrecisionContract precision(DType t) const override { return inner_.precision(t); }
  Support supports(const LoweredProblem& lowered, const Device& d) const override {
    const Problem& p = lowered.source();
    return inner_.supports(p, d);
  }
  void run(const LoweredProblem& lowered, const Device& d, const RunOptions& o) const override {
    const Problem& p = lowered.source();
    const Buffers b = lowered.buffers();
    inner_.run(LoweredProblem(p, b), d, o);
  }

 private:
  const Backend& inner_;
};

// The original and its renamed copy, registered once for the whole binary.
const Backend& original() { return find_backend_or_throw("cpu.flash"); }
const Backend& renamed() {
  static const Backend* b = [] {
    backend_registry().add(std::make_unique<Renamed>(original()));
    return find_backend(kRenamed);
  }();
  return *b;
}

// `text` with the copy's name written as the original's.
std::string as_original(std::string text) {
  const std::string from = kRenamed, to = "cpu.flash";
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

const std::vector<std::string> kCases = {
    "b1.hq2.l17.s33.dqk64.f32.seed1.gen=normal",
    "b2.hq4.hkv2.l33.s47.dqk64.dv32.bf16.causal=br.lse.seed2.gen=normal",
    "b1.hq2.l9.s65.dqk32.f32.win=4_2_br.seed3.gen=normal",
    "b2.hq2.l16.s16.dqk32.f16.mask=add.mbc=h.seed4.gen=normal",
    "b2.hq2.l20.s30.dqk16.f32.qlen=20_5.kvlen=7_0.packed.seed5.gen=normal",
    "b1.hq2.l32.s32.dqk32.f32.p0.25.dseed9.seed6.gen=normal",
    "b1.hq1.l1.s4097.dqk128.bf16.seed10.gen=normal",
    "b1.hq2.l8.s8.dqk8.f64.seed9.gen=normal",
    "b1.hq2.l8.s8.dqk8.f32.attnw.seed9.gen=normal",
};

TEST(RenamedBackend, ExplainIsTheSameUnderTheNewName) {
  renamed();
  for (const char* device_name : {"cpu", "cpu-avx2", "sm90"}) {
    const Device device = parse_device_or_throw(device_name);
    for (const auto& id : kCases) {
      const Problem p = parse_case_id_or_throw(id).problem;
      {
        // The suite policy (the PyTorch policy picks among PyTorch's kernels, none of ours),
        // each alone: the copy is registered last, and a registry position is not a name.
        dispatcher::Policy a, b;
        a.enabled = std::vector<std::string>{"cpu.flash"};
        b.enabled = std::vector<std::string>{kRenamed};
        const auto ea = dispatcher::explain(p, device, a);
        const auto eb = dispatcher::explain(p, device, b);
        const std::string where = id + " on " + device_name;
        EXPECT_EQ(ea.outcome, eb.outcome) << where;
        EXPECT_EQ(ea.chosen, as_original(eb.chosen)) << where;
        ASSERT_EQ(ea.rules.size(), eb.rules.size()) << where;
        for (std::size_t r = 0; r < ea.rules.size(); ++r) {
          EXPECT_EQ(ea.rules[r].name, eb.rules[r].name) << where;
        }
        for (const auto& va : ea.backends) {
          if (va.name != "cpu.flash") continue;
          for (const auto& vb : eb.backends) {
            if (vb.name != kRenamed) continue;
            EXPECT_EQ(va.verdict, vb.verdict) << where;
            ASSERT_EQ(va.reasons.size(), vb.reasons.size()) << where;
            for (std::size_t r = 0; r < va.reasons.size(); ++r) {
              EXPECT_EQ(va.reasons[r], as_original(vb.reasons[r])) << where;
            }
          }
        }
        ASSERT_EQ(ea.pytorch.has_value(), eb.pytorch.has_value()) << where;
        if (ea.pytorch) {
          EXPECT_EQ(ea.pytorch->choice, eb.pytorch->choice) << where;
          EXPECT_EQ(ea.pytorch->departs, eb.pytorch->departs) << where;
          ASSERT_EQ(ea.pytorch->why.size(), eb.pytorch->why.size()) << where;
          for (std::size_t r = 0; r < ea.pytorch->why.size(); ++r) {
            EXPECT_EQ(ea.pytorch->why[r], as_original(eb.pytorch->why[r])) << where;
          }
        }
      }
    }
  }
}

TEST(RenamedBackend, PairCoverageIsTheSameUnderTheNewName) {
  const auto da = conformance::pair_dimensions(original());
  const auto db = conformance::pair_dimensions(renamed());
  ASSERT_EQ(da.size(), db.size());
  for (std::size_t i = 0; i < da.size(); ++i) {
    EXPECT_EQ(da[i].name, db[i].name);
    EXPECT_EQ(da[i].values, db[i].values) << da[i].name;
  }
  const Device scalar = with_isa_target(detect_cpu(), "scalar");
  const auto sa = conformance::generate_covering_set({&original()}, scalar);
  const auto sb = conformance::generate_covering_set({&renamed()}, scalar);
  EXPECT_EQ(sa.case_ids, sb.case_ids);
}

TEST(RenamedBackend, VerdictsAreTheSameUnderTheNewName) {
  const Device cpu = detect_cpu();
  for (const auto& id : kCases) {
    const Case c = parse_case_id_or_throw(id);
    const auto a = conformance::check_case(original(), c, cpu);
    const auto b = conformance::check_case(renamed(), c, cpu);
    EXPECT_EQ(a.status, b.status) << id;
    EXPECT_EQ(a.max_abs_error, b.max_abs_error) << id;
    EXPECT_EQ(a.message, as_original(b.message)) << id;
  }
}

}  // namespace
}  // namespace sdpa
