#include "conformance/data_gen.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace sdpa {
namespace {

std::vector<unsigned char> bytes_of(const GuardedBuffer& b) {
  const auto n = static_cast<std::size_t>(view_extent(b.view())) * b.element_size();
  const auto* p = static_cast<const unsigned char*>(b.data());
  return {p, p + n};
}

TEST(DataGen, SameIdGivesSameBytes) {
  const Case c =
      parse_case_id_or_throw("b2.hq4.hkv2.l9.s13.dqk8.dv5.bf16.mask=add.mbc=h.seed3.gen=normal");
  const InputBuffers a = make_inputs(c), b = make_inputs(c);
  EXPECT_EQ(bytes_of(a.q), bytes_of(b.q));
  EXPECT_EQ(bytes_of(a.k), bytes_of(b.k));
  EXPECT_EQ(bytes_of(a.v), bytes_of(b.v));
  EXPECT_EQ(bytes_of(*a.mask), bytes_of(*b.mask));
}

TEST(DataGen, SeedsAndTensorsGiveDifferentStreams) {
  const Case c = parse_case_id_or_throw("b1.hq1.l2.s2.dqk4.f32.seed7.gen=normal");
  const InputBuffers in = make_inputs(c);
  const auto* q = static_cast<const float*>(in.q.data());
  const auto* k = static_cast<const float*>(in.k.data());
  // A different seed gives different data.
  const InputBuffers other =
      make_inputs(parse_case_id_or_throw("b1.hq1.l2.s2.dqk4.f32.seed8.gen=normal"));
  EXPECT_NE(bytes_of(in.q), bytes_of(other.q));
  // Q and K streams differ (tensor id is part of the counter).
  EXPECT_NE(std::memcmp(q, k, 8 * sizeof(float)), 0);
  for (int x = 0; x < 8; ++x) {
    EXPECT_LT(std::fabs(q[x]), 3.47f);  // Irwin-Hall(4) scaled to unit variance is bounded
  }
}

TEST(DataGen, GeneratorsHaveTheirDocumentedRanges) {
  for (const char* gen : {"uniform", "int", "sparse", "normal"}) {
    const Case c = parse_case_id_or_throw(std::string("b1.hq2.l64.s64.dqk16.f32.seed1.gen=") + gen);
    const InputBuffers in = make_inputs(c);
    const auto* q = static_cast<const float*>(in.q.data());
    int zeros = 0;
    const int n = 2 * 64 * 16;
    for (int x = 0; x < n; ++x) {
      if (q[x] == 0) ++zeros;
      if (std::string(gen) == "uniform") EXPECT_TRUE(q[x] >= -1 && q[x] < 1);
      if (std::string(gen) == "int") {
        EXPECT_TRUE(q[x] == std::nearbyint(q[x]) && std::fabs(q[x]) <= 2);
      }
    }
    if (std::string(gen) == "sparse") EXPECT_NEAR(zeros / double(n), 0.8, 0.05);
    if (std::string(gen) == "normal") EXPECT_LT(zeros, 3);
  }
}

TEST(DataGen, GapsAndMarginsKeepPoison) {
  const Case c = parse_case_id_or_throw("b1.hq2.l5.s6.dqk8.f16.gap=3.off=1.seed1.gen=normal");
  const InputBuffers in = make_inputs(c);
  // The gap elements after each row of Q are still poison (0x7FA5).
  const auto* q = static_cast<const std::uint16_t*>(in.q.data());
  for (int row = 0; row < 10; ++row)
    for (int g = 8; g < 11; ++g) EXPECT_EQ(q[row * 11 + g], 0x7FA5) << row << " " << g;
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(in.q.data()) % 64, 2u);  // offset by one f16
  EXPECT_FALSE(in.q.check_unchanged());
}

TEST(DataGen, UnknownGeneratorAndInvalidProblemAreClearErrors) {
  try {
    make_inputs(parse_case_id_or_throw("b1.hq1.l2.s2.dqk4.f32.seed1.gen=gaussian"));
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("gen"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("gaussian"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_inputs(parse_case_id_or_throw("b1.hq3.hkv2.l2.s2.dqk4.f32.seed1.gen=normal")),
               std::invalid_argument);
}

}  // namespace
}  // namespace sdpa
