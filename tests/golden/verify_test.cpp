// The C++ reference against every committed golden case, in both precisions, and the
// backend judge against golden cases with fake backends.
#include "golden/verify.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>

#include "golden/golden_file.hpp"

namespace sdpa::golden {
namespace {

// The largest c (in f64 ulps of the error magnitude) a reference result may show. Both the
// reference and the golden values are the exact result rounded once, up to the reference's
// own few-ulp error (REFERENCE.md), so agreement is a handful of ulps; the worst seen is
// printed by the test.
constexpr double kMaxUlps = 16;

std::string golden_path(const std::string& name) {
  return std::string(SDPA_GOLDEN_DIR) + "/" + name;
}

struct Param {
  const char* file;
  reference::Precision precision;
  int shard, shards;
};

std::string param_name(const testing::TestParamInfo<Param>& info) {
  std::string f = info.param.file;
  f = f.substr(0, f.find('.'));
  return f + (info.param.precision == reference::Precision::f64 ? "_f64" : "_binary128") + "_" +
         std::to_string(info.param.shard);
}

class ReferenceAgreesWithGolden : public testing::TestWithParam<Param> {};

TEST_P(ReferenceAgreesWithGolden, EveryCaseWithinAFewUlps) {
  const Param& prm = GetParam();
  const GoldenFile file(golden_path(prm.file));
  ASSERT_FALSE(file.case_ids().empty());
  std::map<std::string, std::pair<double, std::string>> worst;  // output -> (c, case)
  int checked = 0;
  const auto& ids = file.case_ids();
  for (std::size_t n = 0; n < ids.size(); ++n) {
    if (static_cast<int>(n % static_cast<std::size_t>(prm.shards)) != prm.shard) continue;
    const GoldenCase g = file.load(ids[n]);
    const Agreement a = compare_with_reference(g, prm.precision, 1);
    EXPECT_TRUE(a.mismatch.empty()) << ids[n] << ": " << a.mismatch;
    EXPECT_LE(a.worst(), kMaxUlps) << ids[n] << ": c = " << a.worst() << " at " << a.worst_where();
    for (auto [name, c, where] : {std::tuple{"o", a.o, a.o_where},
                                  {"lse", a.lse, a.lse_where},
                                  {"weights", a.weights, a.weights_where}}) {
      if (c >= worst[name].first) worst[name] = {c, ids[n] + " " + where};
    }
    ++checked;
  }
  for (const auto& [name, w] : worst) {
    std::printf("worst c(%s) = %.3g ulps of magnitude: %s\n", name.c_str(), w.first,
                w.second.c_str());
  }
  std::printf("%d cases checked\n", checked);
}

std::vector<Param> params() {
  std::vector<Param> v;
  for (const char* f : {"smoke.h5", "ci.h5"}) {
    const int shards = std::string(f) == "ci.h5" ? 4 : 1;
    for (auto prec : {reference::Precision::f64, reference::Precision::binary128}) {
      for (int s = 0; s < shards; ++s) v.push_back({f, prec, s, shards});
    }
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Golden, ReferenceAgreesWithGolden, testing::ValuesIn(params()),
                         param_name);

}  // namespace
}  // namespace sdpa::golden
