#include "cli/libfuzzer_engine.hpp"

#include <stdexcept>

#ifdef SDPA_CTS_LIBFUZZER
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <vector>

#include "conformance/engine/check_case.hpp"
#include "core/case_id.hpp"
#include "fuzz/case_from_bytes.hpp"

extern "C" int LLVMFuzzerRunDriver(int* argc, char*** argv,
                                   int (*callback)(const std::uint8_t* data, std::size_t size));
// AddressSanitizer calls this with its report before the process dies.
extern "C" void __asan_set_error_report_callback(void (*)(const char*)) __attribute__((weak));
#endif

namespace sdpa::cli {

#ifndef SDPA_CTS_LIBFUZZER

bool libfuzzer_linked() { return false; }

void run_libfuzzer(
    const SearchTarget&, const LibFuzzerOptions&,
    const std::function<bool(conformance::Status, const std::string&, const std::string&)>&,
    const std::function<int(std::size_t)>&) {
  throw std::invalid_argument(
      "--engine libfuzzer: this build has no libFuzzer; build sdpa-cts with the `fuzz` preset "
      "(Clang), or use --engine search (docs/FUZZING.md)");
}

#else

bool libfuzzer_linked() { return true; }

namespace {

// The one run in progress (LLVMFuzzerRunDriver takes a plain function).
struct Run {
  const SearchTarget* target = nullptr;
  const Backend* backend = nullptr;
  std::function<bool(conformance::Status, const std::string&, const std::string&)> on_failure;
  std::function<int(std::size_t)> finish;
  std::size_t executions = 0;
};
Run* g_run = nullptr;

// The line written when the process dies inside a case: formatted before the case runs,
// written with write(2) from a signal handler.
char g_dying_line[8192];
std::size_t g_dying_length = 0;

void write_dying_line() {
  if (g_dying_length > 0) {
    [[maybe_unused]] const ssize_t n = write(STDERR_FILENO, g_dying_line, g_dying_length);
    g_dying_length = 0;  // once, whether the signal or the sanitizer's report comes first
  }
}

// A fresh corpus starts from random inputs (from the seed), so that the first cases are as
// varied as the sampler's rather than all grown from the one empty input.
constexpr int kSeedInputs = 64;
constexpr std::size_t kSeedInputBytes = 96;

void seed_corpus(const std::string& dir, std::uint64_t seed) {
  namespace fs = std::filesystem;
  if (!fs::is_empty(dir)) return;
  std::mt19937_64 random(seed);
  for (int i = 0; i < kSeedInputs; ++i) {
    std::string bytes(kSeedInputBytes, '\0');
    for (char& b : bytes) b = static_cast<char>(random() & 0xff);
    std::ofstream(fs::path(dir) / ("seed-" + std::to_string(i)), std::ios::binary) << bytes;
  }
}

struct sigaction g_previous[NSIG];
constexpr int kDeadlySignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

void on_deadly_signal(int sig, siginfo_t* info, void* context) {
  write_dying_line();
  const struct sigaction& prev = g_previous[sig];
  if (prev.sa_flags & SA_SIGINFO) {
    if (prev.sa_sigaction) prev.sa_sigaction(sig, info, context);
  } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN && prev.sa_handler) {
    prev.sa_handler(sig);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

// Chained in front of libFuzzer's (and the sanitizer's) handlers, which are installed by the
// time the first input runs.
void install_dying_line_handlers() {
  for (int sig : kDeadlySignals) {
    struct sigaction sa {};
    sa.sa_sigaction = on_deadly_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, &g_previous[sig]);
  }
  if (__asan_set_error_report_callback) {
    __asan_set_error_report_callback([](const char*) { write_dying_line(); });
  }
}

// Prints the summary and ends the process with its exit code.
[[noreturn]] void finish_now() {
  std::cout << std::flush;
  std::cerr << std::flush;
  const int code = g_run->finish(g_run->executions);
  std::cout << std::flush;
  std::cerr << std::flush;
  std::_Exit(code);
}

// libFuzzer ends its driver with exit(0) when the time is up: the summary and the exit code
// are ours.
void finish_at_exit() {
  if (g_run) finish_now();
}

int one_input(const std::uint8_t* data, std::size_t size) {
  Run& run = *g_run;
  if (run.executions++ == 0) install_dying_line_handlers();
  fuzz::FuzzInput in(data, size);
  const Case c = fuzz::case_from_bytes(in);
  if (!run.backend->supports(c.problem, run.target->device()).ok()) return 0;
  const std::string id = format_case_id(c);
  const std::string line = "sdpa-cts fuzz: the process died in case " + id +
                           "\n  repro: " + run.target->repro(id) +
                           "\n  shrink: sdpa-cts shrink --backend " + run.target->backend() +
                           " --case " + id + " (with the same --plugin, --device, --simd)\n";
  g_dying_length = std::min(line.size(), sizeof g_dying_line);
  std::memcpy(g_dying_line, line.data(), g_dying_length);
  RunOptions options;
  options.threads = run.target->threads();
  const conformance::CaseOutcome out =
      conformance::check_case(*run.backend, c, run.target->device(), options);
  g_dying_length = 0;
  if (conformance::is_failure(out.status) && run.on_failure(out.status, id, out.message)) {
    finish_now();  // not exit(): libFuzzer calls an exit inside an input a crash
  }
  return 0;
}

}  // namespace

void run_libfuzzer(const SearchTarget& target, const LibFuzzerOptions& options,
                   const std::function<bool(conformance::Status, const std::string&,
                                            const std::string&)>& on_failure,
                   const std::function<int(std::size_t)>& finish) {
  Run run;
  run.target = &target;
  run.backend = &target.load_here();
  run.on_failure = on_failure;
  run.finish = finish;
  g_run = &run;
  std::atexit(finish_at_exit);
  seed_corpus(options.work_dir + "/corpus", options.seed);
  std::vector<std::string> args = {
      "sdpa-cts-fuzz",
      "-max_total_time=" + std::to_string(static_cast<long long>(options.seconds + 0.5)),
      "-seed=" + std::to_string(options.seed == 0 ? 1 : options.seed),
      "-timeout=" + std::to_string(static_cast<long long>(options.timeout + 0.5)),
      "-max_len=256",
      "-print_final_stats=0",
      "-artifact_prefix=" + options.work_dir + "/",
      options.work_dir + "/corpus"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  char** argv_ptr = argv.data();
  LLVMFuzzerRunDriver(&argc, &argv_ptr, one_input);
  std::exit(0);  // the driver exits by itself; should it return, finish here all the same
}

#endif

}  // namespace sdpa::cli
