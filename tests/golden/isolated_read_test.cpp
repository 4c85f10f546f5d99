// Reading in a child process: what the child returns, throws, or dies of reaches the caller
// as the documented outcome, naming the file, and the caller's process goes on.
#include "golden/isolated_read.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>

namespace sdpa::golden {
namespace {

const std::string kPath = "some/file.h5";

// The message of the ChildReadError `read` ends in; fails the test when it ends otherwise.
std::string child_error(const std::function<std::string()>& read, int timeout_seconds = 60) {
  try {
    read_in_child(kPath, read, timeout_seconds);
  } catch (const ChildReadError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected a ChildReadError, got: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected a ChildReadError, the child returned";
  return "";
}

TEST(IsolatedRead, ReturnsWhatTheChildReturnedAndLeavesTheCallerAlone) {
  int touched = 0;
  EXPECT_EQ(read_in_child(kPath,
                          [&] {
                            touched = 1;
                            return std::string("report\0with a zero", 18);
                          }),
            std::string("report\0with a zero", 18));
  EXPECT_EQ(touched, 0) << "the read ran in this process";
  EXPECT_EQ(read_in_child(kPath, [] { return std::string(); }), "");
}

TEST(IsolatedRead, RethrowsTheChildsErrorWithItsKind) {
  try {
    read_in_child(kPath, []() -> std::string {
      throw std::invalid_argument("some/file.h5: group '/x': bad");
    });
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "some/file.h5: group '/x': bad");
  }
  try {
    read_in_child(kPath,
                  []() -> std::string { throw std::runtime_error("some/file.h5: truncated"); });
    FAIL() << "no exception";
  } catch (const ChildReadError& e) {
    FAIL() << "a clean error became a ChildReadError: " << e.what();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "some/file.h5: truncated");
  }
  // A long message arrives whole (more than one pipe read).
  const std::string long_message(100000, 'x');
  try {
    read_in_child(kPath, [&]() -> std::string { throw std::runtime_error(long_message); });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(e.what(), long_message);
  }
}

TEST(IsolatedRead, ACrashIsAnErrorNamingTheFileAndTheSignal) {
  const std::string m = child_error([] {
    std::raise(SIGSEGV);
    return std::string();
  });
  EXPECT_NE(m.find(kPath), std::string::npos) << m;
  EXPECT_NE(m.find("SIGSEGV"), std::string::npos) << m;
  EXPECT_NE(m.find("crashed"), std::string::npos) << m;
  const std::string a = child_error([]() -> std::string { std::abort(); });
  EXPECT_NE(a.find("SIGABRT"), std::string::npos) << a;
}

TEST(IsolatedRead, AnExitWithoutAnErrorIsAnErrorNamingTheStatus) {
  const std::string m = child_error([]() -> std::string { std::_Exit(7); });
  EXPECT_NE(m.find(kPath), std::string::npos) << m;
  EXPECT_NE(m.find("status 7"), std::string::npos) << m;
}

TEST(IsolatedRead, AHangIsKilledAtTheTimeout) {
  const std::string m = child_error(
      []() -> std::string {
        for (;;) pause();
      },
      1);
  EXPECT_NE(m.find(kPath), std::string::npos) << m;
  EXPECT_NE(m.find("did not finish within 1 s"), std::string::npos) << m;
}

}  // namespace
}  // namespace sdpa::golden
