#include "golden/isolated_read.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <stdexcept>

// A sanitizer runtime (the fuzz and tsan builds) calls a death callback before it exits on
// a report; libFuzzer installs one that saves the input as a crash. The child removes it:
// its failure is the caller's clear error, not a finding of the fuzzer around it.
extern "C" void __sanitizer_set_death_callback(void (*)(void)) __attribute__((weak));

namespace sdpa::golden {
namespace {

// What the child writes to the pipe before it exits: one kind byte, then what `read`
// returned, or the message of the exception it threw.
constexpr char kReturned = 'O';
constexpr char kInvalidArgument = 'I';
constexpr char kRuntimeError = 'R';
constexpr int kChildThrew = 3;

[[noreturn]] void child(int out, const std::function<std::string()>& read) {
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(nullptr);
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE}) std::signal(sig, SIG_DFL);
  // What libhdf5 or a sanitizer prints on the way down is not the caller's output.
  const int null = open("/dev/null", O_WRONLY);
  if (null >= 0) dup2(null, STDERR_FILENO);
  char kind = kReturned;
  std::string message;
  int code = 0;
  try {
    message = read();
  } catch (const std::invalid_argument& e) {
    kind = kInvalidArgument;
    message = e.what();
    code = kChildThrew;
  } catch (const std::exception& e) {
    kind = kRuntimeError;
    message = e.what();
    code = kChildThrew;
  } catch (...) {
    kind = kRuntimeError;
    message = "an unknown exception";
    code = kChildThrew;
  }
  std::string packet(1, kind);
  packet += message;
  const char* p = packet.data();
  std::size_t left = packet.size();
  while (left > 0) {
    const ssize_t n = write(out, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  _exit(code);
}

std::string system_error(const std::string& path, const char* what) {
  return path + ": cannot read the file in a child process (" + what + ": " + std::strerror(errno) +
         ")";
}

std::string signal_name(int sig) {
  const char* name = sigabbrev_np(sig);
  return name ? std::string("SIG") + name : "signal " + std::to_string(sig);
}

}  // namespace

std::string read_in_child(const std::string& path, const std::function<std::string()>& read,
                          int timeout_seconds) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw ChildReadError(system_error(path, "pipe"));
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    throw ChildReadError(system_error(path, "fork"));
  }
  if (pid == 0) {
    close(fds[0]);
    child(fds[1], read);
  }
  close(fds[1]);

  std::string packet;
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the deadline check above ends the wait
    char buf[4096];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // end of file: the child exited (or closed its end)
    packet.append(buf, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }

  const std::string corrupt = ": the file is corrupt, or not one this loader can read";
  if (timed_out) {
    throw ChildReadError(path + ": reading the file did not finish within " +
                         std::to_string(timeout_seconds) + " s (the child was killed)" + corrupt);
  }
  if (WIFSIGNALED(status)) {
    throw ChildReadError(path + ": libhdf5 crashed reading the file (" +
                         signal_name(WTERMSIG(status)) + " in a child process)" + corrupt);
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 0 && !packet.empty() && packet[0] == kReturned) return packet.substr(1);
  if (code == kChildThrew && !packet.empty()) {
    const std::string message = packet.substr(1);
    if (packet[0] == kInvalidArgument) throw std::invalid_argument(message);
    throw std::runtime_error(message);
  }
  throw ChildReadError(path + ": reading the file ended the child process with status " +
                       std::to_string(code) + " (an abort or a sanitizer report inside libhdf5)" +
                       corrupt);
}

}  // namespace sdpa::golden
