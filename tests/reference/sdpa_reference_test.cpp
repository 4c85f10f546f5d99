#include "reference/sdpa_reference.hpp"

#include <gtest/gtest.h>

#include "conformance/data_gen.hpp"

namespace sdpa {
namespace {

TEST(Reference, Smoke) {
  Case c = parse_case_id_or_throw("b1.hq2.l5.s7.dqk8.f32.seed1.gen=normal");
  auto in = make_inputs(c);
  auto r = reference::run_sdpa(c.problem, in.pointers());
  auto r2 = reference::run_sdpa(c.problem, in.pointers(), reference::Precision::binary128);
  for (size_t x = 0; x < r.o.size(); ++x) EXPECT_NEAR(r.o[x], r2.o[x], 1e-15);
}

}  // namespace
}  // namespace sdpa
