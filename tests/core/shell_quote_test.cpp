#include "core/shell_quote.hpp"

#include <gtest/gtest.h>

namespace sdpa {
namespace {

TEST(ShellQuote, SingleQuotesAndEscapesTheQuote) {
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("$HOME;`x`"), "'$HOME;`x`'");
}

}  // namespace
}  // namespace sdpa
