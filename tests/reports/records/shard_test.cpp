// Sharding (reports/records/shard.hpp): --shard K/N and the TEST_* environment parse or say what
// is wrong, and the shards of any run are disjoint and together the whole run.
#include "reports/records/shard.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "tests/error_of.hpp"

namespace sdpa {

using namespace sdpa::conformance;
namespace {

namespace fs = std::filesystem;

using sdpa::testing_util::error_of;

TEST(Shard, ParsesKOverN) {
  for (const auto& [text, k, n] : std::vector<std::tuple<const char*, int, int>>{
           {"0/1", 0, 1}, {"0/3", 0, 3}, {"2/3", 2, 3}, {"41/42", 41, 42}}) {
    const Shard s = parse_shard(text);
    EXPECT_EQ(s.index, k) << text;
    EXPECT_EQ(s.count, n) << text;
    EXPECT_EQ(shard_name(s), text);
  }
  EXPECT_TRUE(parse_shard("0/1").whole());
  EXPECT_FALSE(parse_shard("0/2").whole());
}

TEST(Shard, BadTextIsNamed) {
  EXPECT_EQ(error_of([] { parse_shard("3/3"); }),
            "--shard '3/3': shard index 3 is outside [0, 2] (indices are 0-based)");
  EXPECT_EQ(error_of([] { parse_shard("-1/2"); }),
            "--shard '-1/2': shard index -1 is outside [0, 1] (indices are 0-based)");
  EXPECT_EQ(error_of([] { parse_shard("1/0"); }),
            "--shard '1/0': the number of shards must be at least 1");
  for (const char* bad :
       {"x/2", "1/2/3", "", "/", "1/", "/2", "1", " 1/2", "1/2 ", "1.0/2", "99999999999/2"}) {
    EXPECT_EQ(
        error_of([&] { parse_shard(bad); }),
        std::string("--shard '") + bad + "': expected K/N, two integers with 0 <= K < N (e.g. 0/3)")
        << bad;
  }
}

// Sets the TEST_* variables for one test and restores them after it.
class ShardEnvironment : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kNames) {
      const char* v = std::getenv(name);
      saved_.emplace_back(v ? std::optional<std::string>(v) : std::nullopt);
      ::unsetenv(name);
    }
    status_ = fs::temp_directory_path() / ("sdpa_shard_status_" + std::to_string(::getpid()));
    fs::remove(status_);
  }
  void TearDown() override {
    for (std::size_t i = 0; i < std::size(kNames); ++i) {
      if (saved_[i]) {
        ::setenv(kNames[i], saved_[i]->c_str(), 1);
      } else {
        ::unsetenv(kNames[i]);
      }
    }
    fs::remove(status_);
  }
  static void set(const char* name, const char* value) { ::setenv(name, value, 1); }

  static constexpr const char* kNames[] = {"TEST_TOTAL_SHARDS", "TEST_SHARD_INDEX",
                                           "TEST_SHARD_STATUS_FILE"};
  std::vector<std::optional<std::string>> saved_;  // the variables before the test
  fs::path status_;                                // a status file path for the test
};

TEST_F(ShardEnvironment, UnsetIsTheWholeRun) {
  const Shard s = shard_from_environment();
  EXPECT_EQ(s.index, 0);
  EXPECT_EQ(s.count, 1);
  set("TEST_TOTAL_SHARDS", "");
  EXPECT_TRUE(shard_from_environment().whole());
}

TEST_F(ShardEnvironment, ReadsTheShardAndTouchesTheStatusFile) {
  set("TEST_TOTAL_SHARDS", "4");
  set("TEST_SHARD_INDEX", "3");
  Shard s = shard_from_environment();
  EXPECT_EQ(s.index, 3);
  EXPECT_EQ(s.count, 4);
  EXPECT_FALSE(fs::exists(status_));
  set("TEST_SHARD_STATUS_FILE", status_.c_str());
  s = shard_from_environment();
  EXPECT_EQ(s.index, 3);
  EXPECT_TRUE(fs::exists(status_));
}

TEST_F(ShardEnvironment, BadValuesAreNamed) {
  set("TEST_TOTAL_SHARDS", "three");
  EXPECT_EQ(error_of([] { shard_from_environment(); }),
            "TEST_TOTAL_SHARDS='three' is not an integer");
  set("TEST_TOTAL_SHARDS", "3");
  EXPECT_EQ(error_of([] { shard_from_environment(); }),
            "TEST_SHARD_INDEX='' is not an integer (TEST_TOTAL_SHARDS is set)");
  set("TEST_SHARD_INDEX", "x");
  EXPECT_EQ(error_of([] { shard_from_environment(); }),
            "TEST_SHARD_INDEX='x' is not an integer (TEST_TOTAL_SHARDS is set)");
  set("TEST_SHARD_INDEX", "3");
  EXPECT_EQ(error_of([] { shard_from_environment(); }),
            "TEST_SHARD_INDEX=3 TEST_TOTAL_SHARDS=3: shard index 3 is outside [0, 2] (indices "
            "are 0-based)");
  set("TEST_TOTAL_SHARDS", "0");
  set("TEST_SHARD_INDEX", "0");
  EXPECT_EQ(error_of([] { shard_from_environment(); }),
            "TEST_SHARD_INDEX=0 TEST_TOTAL_SHARDS=0: the number of shards must be at least 1");
  set("TEST_TOTAL_SHARDS", "2");
  const std::string unwritable = (status_ / "no" / "such" / "dir").string();
  set("TEST_SHARD_STATUS_FILE", unwritable.c_str());
  EXPECT_EQ(error_of([] { shard_from_environment(); }),
            "TEST_SHARD_STATUS_FILE: cannot write '" + unwritable + "'");
}

TEST(Shard, ShardsPartitionEveryRun) {
  for (std::size_t total = 0; total <= 50; ++total) {
    for (int n = 1; n <= 9; ++n) {
      SCOPED_TRACE(std::to_string(total) + " jobs, " + std::to_string(n) + " shards");
      std::vector<int> owners(total, 0);
      std::size_t sizes = 0;
      for (int k = 0; k < n; ++k) {
        const Shard s{k, n};
        std::size_t mine = 0;
        for (std::size_t j = 0; j < total; ++j) {
          if (!s.has(j)) continue;
          ++owners[j];
          // Record m of shard k is job k + m*n: what a merge relies on.
          EXPECT_EQ(j, static_cast<std::size_t>(k) + mine * static_cast<std::size_t>(n));
          ++mine;
        }
        EXPECT_EQ(shard_size(total, s), mine) << "shard " << k;
        sizes += mine;
      }
      EXPECT_EQ(sizes, total);
      for (std::size_t j = 0; j < total; ++j) EXPECT_EQ(owners[j], 1) << "job " << j;
    }
  }
}

TEST(Shard, ShardSize) {
  EXPECT_EQ(shard_size(10, {0, 3}), 4u);
  EXPECT_EQ(shard_size(10, {1, 3}), 3u);
  EXPECT_EQ(shard_size(10, {2, 3}), 3u);
  EXPECT_EQ(shard_size(2, {2, 3}), 0u);
  EXPECT_EQ(shard_size(0, {0, 1}), 0u);
  EXPECT_EQ(shard_size(7, {0, 1}), 7u);
}

}  // namespace
}  // namespace sdpa
