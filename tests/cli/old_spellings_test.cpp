// The old spellings of moved commands are answered with the new command line, and no current
// command line is taken for an old one.
#include "cli/old_spellings.hpp"

#include <gtest/gtest.h>

namespace sdpa::cli {
namespace {

TEST(OldSpellings, JudgeIsCasesJudge) {
  EXPECT_EQ(new_spelling({"judge", "--results", "r.h5", "--no-lse"}),
            "sdpa-cts cases judge --results r.h5 --no-lse");
}

TEST(OldSpellings, VerifyBundleIsBundleVerify) {
  EXPECT_EQ(new_spelling({"verify-bundle", "my bundle", "--rerun", "3"}),
            "sdpa-cts bundle verify 'my bundle' --rerun 3");
}

TEST(OldSpellings, GoldenVerifyOfABackendIsRunGolden) {
  EXPECT_EQ(new_spelling({"golden", "verify", "--quiet", "--backend", "cpu.math", "--device",
                          "cpu-scalar", "--max-ulps", "4", "a.h5", "b.h5"}),
            "sdpa-cts run --backend cpu.math --device cpu-scalar --golden a.h5 --golden b.h5");
  EXPECT_EQ(new_spelling({"golden", "verify", "--backend=minimal.naive", "--plugin", "p.so",
                          "--precision=binary128", "s.h5"}),
            "sdpa-cts run --backend=minimal.naive --plugin p.so --golden s.h5");
}

TEST(OldSpellings, CurrentCommandLinesAreNotOld) {
  EXPECT_EQ(new_spelling({}), std::nullopt);
  EXPECT_EQ(new_spelling({"golden", "verify", "s.h5"}), std::nullopt);
  EXPECT_EQ(new_spelling({"cases", "judge", "--results", "r.h5"}), std::nullopt);
  EXPECT_EQ(new_spelling({"bundle", "verify", "d"}), std::nullopt);
  EXPECT_EQ(new_spelling({"run", "--backend", "cpu.math", "--golden", "s.h5"}), std::nullopt);
  EXPECT_EQ(new_spelling({"report", "merge", "a", "--out", "b"}), std::nullopt);
}

}  // namespace
}  // namespace sdpa::cli
