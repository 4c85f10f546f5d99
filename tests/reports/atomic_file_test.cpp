// Atomic report writing: a failure never leaves a partial file, never damages the previous one,
// never leaves a temporary file, and says which path it could not write.
#include "reports/atomic_file.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "reports/reports.hpp"
#include "tests/reports/sample_run.hpp"

namespace sdpa {

using namespace sdpa::conformance;
using namespace sdpa::reports;
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void put(const fs::path& p, const std::string& content) {
  std::ofstream(p, std::ios::binary) << content;
}

std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

// Expects `f` to throw std::runtime_error whose message contains every one of `parts`.
template <class F>
void expect_error(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    for (const auto& p : parts) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "'" << e.what() << "' does not contain '" << p << "'";
    }
  }
}

class AtomicFile : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("sdpa-reports-" + std::to_string(::getpid()) + "-" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir_, ec);
  }
  fs::path dir_;
};

TEST_F(AtomicFile, WritesAndReplacesLeavingNoTemporaryFile) {
  fs::path f = dir_ / "out.txt";
  write_file_atomically(f.string(), "one");
  EXPECT_EQ(read(f), "one");
  write_file_atomically(f.string(), std::string(100000, 'z'));
  EXPECT_EQ(read(f), std::string(100000, 'z'));
  write_file_atomically(f.string(), "");
  EXPECT_EQ(read(f), "");
  EXPECT_EQ(listing(dir_), (std::set<std::string>{"out.txt"}));
  EXPECT_EQ(fs::status(f).permissions() & fs::perms::others_write, fs::perms::none);
  EXPECT_NE(fs::status(f).permissions() & fs::perms::owner_read, fs::perms::none);
}

TEST_F(AtomicFile, MissingParentGivesAClearError) {
  fs::path f = dir_ / "missing" / "sub" / "out.txt";
  expect_error([&] { write_file_atomically(f.string(), "x"); },
               {"cannot write '" + f.string() + "'", "No such file or directory"});
  EXPECT_FALSE(fs::exists(dir_ / "missing"));
  EXPECT_TRUE(listing(dir_).empty());
}

TEST_F(AtomicFile, ParentIsAFile) {
  put(dir_ / "file", "keep");
  fs::path f = dir_ / "file" / "out.txt";
  expect_error([&] { write_file_atomically(f.string(), "x"); }, {f.string(), "Not a directory"});
  EXPECT_EQ(read(dir_ / "file"), "keep");
  EXPECT_EQ(listing(dir_), (std::set<std::string>{"file"}));
}

TEST_F(AtomicFile, TargetIsADirectory) {
  fs::create_directories(dir_ / "target");
  put(dir_ / "target" / "inside", "keep");
  fs::path f = dir_ / "target";
  expect_error([&] { write_file_atomically(f.string(), "x"); }, {f.string(), "renaming"});
  EXPECT_EQ(read(dir_ / "target" / "inside"), "keep");
  EXPECT_EQ(listing(dir_), (std::set<std::string>{"target"}));  // no temporary file left
}

TEST_F(AtomicFile, ReadOnlyDirectoryKeepsTheOldFile) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into read-only directories";
  fs::path f = dir_ / "out.txt";
  write_file_atomically(f.string(), "old");
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
  expect_error([&] { write_file_atomically(f.string(), "new"); },
               {"cannot write '" + f.string() + "'", "Permission denied"});
  fs::permissions(dir_, fs::perms::owner_all);
  EXPECT_EQ(read(f), "old");
  EXPECT_EQ(listing(dir_), (std::set<std::string>{"out.txt"}));
}

// The same failure for every user, root included (CI runs as root, which writes into
// read-only directories): a name whose temporary file's name is too long for the file
// system (NAME_MAX), so the temporary file cannot be created. The old file stays.
TEST_F(AtomicFile, UncreatableTemporaryFileKeepsTheOldFile) {
  const fs::path f = dir_ / std::string(250, 'x');  // its ".<name>.tmp-PID-N" is > 255 bytes
  {
    std::ofstream old(f);
    ASSERT_TRUE(old << "old") << "cannot create " << f;
  }
  expect_error([&] { write_file_atomically(f.string(), "new"); },
               {"cannot write '" + f.string() + "'", "cannot create the temporary file",
                "File name too long"});
  EXPECT_EQ(read(f), "old");
  EXPECT_EQ(listing(dir_), (std::set<std::string>{f.filename().string()}));
}

// A write that fails half way (the file size limit, which binds root too): the old file is
// intact and the partial temporary file is gone.
TEST_F(AtomicFile, FailureHalfWayKeepsTheOldFile) {
  fs::path f = dir_ / "out.txt";
  write_file_atomically(f.string(), "old content");
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  bool threw = false;
  std::string what;
  try {
    write_file_atomically(f.string(), std::string(1 << 20, 'n'));
  } catch (const std::runtime_error& e) {
    threw = true;
    what = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  ASSERT_TRUE(threw);
  EXPECT_NE(what.find("cannot write '" + f.string() + "'"), std::string::npos) << what;
  EXPECT_NE(what.find("File too large"), std::string::npos) << what;
  EXPECT_EQ(read(f), "old content");
  EXPECT_EQ(listing(dir_), (std::set<std::string>{"out.txt"}));
}

TEST_F(AtomicFile, NotAFileName) {
  expect_error([&] { write_file_atomically((dir_ / "").string() + "/", "x"); },
               {"not a file name"});
}

// ---- write_reports
// --------------------------------------------------------------------------------

std::set<std::string> report_names() { return {kReportFiles.begin(), kReportFiles.end()}; }

TEST_F(AtomicFile, WriteReportsCreatesTheDirectoryAndEveryFile) {
  RunSummary run = testing::tricky_run();
  fs::path out = dir_ / "a" / "b";
  write_reports(run, out.string());
  EXPECT_EQ(listing(out), report_names());
  EXPECT_EQ(read(out / "results.jsonl"), render_jsonl(run));
  EXPECT_EQ(read(out / "summary.json"), render_summary_json(run));
  EXPECT_EQ(read(out / "junit.xml"), render_junit_xml(run));
  EXPECT_EQ(read(out / "summary.md"), render_markdown(run));
  EXPECT_EQ(read(out / "report.html"), render_html(run));

  // A second run replaces every file.
  RunSummary empty;
  write_reports(empty, out.string());
  EXPECT_EQ(listing(out), report_names());
  EXPECT_EQ(read(out / "results.jsonl"), "");
  EXPECT_EQ(read(out / "report.html"), render_html(empty));
}

TEST_F(AtomicFile, WriteReportsIntoAnUnwritablePath) {
  put(dir_ / "file", "keep");
  fs::path out = dir_ / "file" / "reports";
  expect_error([&] { write_reports(testing::tricky_run(), out.string()); },
               {"cannot create the report directory '" + out.string() + "'"});
  EXPECT_EQ(read(dir_ / "file"), "keep");
}

// A failure on the third file: the first two are complete new reports, the third and the rest
// keep their previous content, and the error names the third.
TEST_F(AtomicFile, WriteReportsFailingMidWayLeavesEveryFileWhole) {
  RunSummary old_run = testing::realistic_run(50);
  RunSummary new_run = testing::tricky_run();
  write_reports(old_run, dir_.string());
  fs::remove(dir_ / "junit.xml");
  fs::create_directories(dir_ / "junit.xml" / "blocker");
  expect_error([&] { write_reports(new_run, dir_.string()); },
               {"cannot write '" + (dir_ / "junit.xml").string() + "'"});
  EXPECT_EQ(read(dir_ / "results.jsonl"), render_jsonl(new_run));
  EXPECT_EQ(read(dir_ / "summary.json"), render_summary_json(new_run));
  EXPECT_TRUE(fs::is_directory(dir_ / "junit.xml" / "blocker"));
  EXPECT_EQ(read(dir_ / "summary.md"), render_markdown(old_run));
  EXPECT_EQ(read(dir_ / "report.html"), render_html(old_run));
  EXPECT_EQ(listing(dir_), report_names());
}

}  // namespace
}  // namespace sdpa
