#include "conformance/engine/runner.hpp"

#include <omp.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <new>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "conformance/engine/case_memory.hpp"
#include "conformance/engine/check_case.hpp"
#include "conformance/engine/golden_verify.hpp"
#include "conformance/engine/outcome_record.hpp"
#include "core/shell_quote.hpp"
#include "golden/golden_file.hpp"
#include "kernels/registry.hpp"
#include "reports/records/record_json.hpp"

namespace sdpa::conformance {
namespace {

using Clock = std::chrono::steady_clock;

// The ISA target a record names: the one chosen by name ("" = the device's best).
std::string isa_of(const Job& job) {
  if (job.device.kind != DeviceKind::cpu || !job.device.cpu.isa_chosen) return "";
  return std::string(isa_target_name(job.device.cpu.isa));
}

CaseRecord base_record(const Job& job) {
  CaseRecord r;
  r.case_id = job.case_id;
  r.backend = job.backend;
  r.device = job.device.name;
  r.simd_target = isa_of(job);
  // The threads the backend runs with (RunOptions: 0 asks for the OpenMP default), so that
  // a record says what ran (pair coverage reads it).
  r.threads = job.threads > 0 ? job.threads : omp_get_max_threads();
  r.repro = repro_command(job);
  r.features = case_features(job.c.problem);
  return r;
}

// Runs options.worker_init; "" on success, else the error every job then reports.
std::string initialise_worker(const RunnerOptions& options) {
  if (!options.worker_init) return "";
  try {
    options.worker_init();
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

CaseRecord failed_init(const Job& job, const std::string& why) {
  CaseRecord r = base_record(job);
  r.status = Status::fail;
  r.message = "error: the worker could not be set up: " + why;
  return r;
}

// A worker process: reads job indices (one per line) from `in_fd`, writes one JSON record
// per line to `out_fd`, exits at end of input.
[[noreturn]] void worker_main(const std::vector<Job>& jobs, const RunnerOptions& options, int in_fd,
                              int out_fd) {
  FILE* in = fdopen(in_fd, "r");
  const std::string init_error = initialise_worker(options);
  char line[64];
  while (in && std::fgets(line, sizeof line, in)) {
    const std::size_t index = std::strtoull(line, nullptr, 10);
    CaseRecord r = init_error.empty() ? run_job(jobs.at(index), options)
                                      : failed_init(jobs.at(index), init_error);
    std::string out = record_json_line(r) + "\n";
    const char* p = out.data();
    std::size_t left = out.size();
    while (left > 0) {
      const ssize_t n = write(out_fd, p, left);
      if (n <= 0) _exit(3);
      p += n;
      left -= static_cast<std::size_t>(n);
    }
  }
  _exit(0);
}

struct Worker {
  pid_t pid = -1;
  int to_child = -1;    // we write job indices here
  int from_child = -1;  // we read JSON lines here
  std::string buffer;   // partial line read so far
  long in_flight = -1;  // job index being run, -1 = idle
  Clock::time_point started;
};

Worker spawn(const std::vector<Job>& jobs, const RunnerOptions& options) {
  int down[2], up[2];
  if (pipe(down) != 0 || pipe(up) != 0) throw std::runtime_error("runner: pipe() failed");
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("runner: fork() failed");
  if (pid == 0) {
    // Keep only this worker's two pipe ends: an inherited write end of another worker's
    // input would keep that worker from ever seeing end-of-input, and the parent waiting
    // for it to exit would hang.
    const long max_fd = sysconf(_SC_OPEN_MAX) > 0 ? std::min(sysconf(_SC_OPEN_MAX), 65536L) : 1024;
    for (int fd = 3; fd < max_fd; ++fd) {
      if (fd != down[0] && fd != up[1]) close(fd);
    }
    worker_main(jobs, options, down[0], up[1]);
  }
  close(down[0]);
  close(up[1]);
  Worker w;
  w.pid = pid;
  w.to_child = down[1];
  w.from_child = up[0];
  return w;
}

void stop(Worker& w, bool kill_it) {
  if (w.pid < 0) return;
  if (kill_it) kill(w.pid, SIGKILL);
  close(w.to_child);
  close(w.from_child);
  int status = 0;
  waitpid(w.pid, &status, 0);
  w = Worker{};
}

void assign(Worker& w, long index) {
  const std::string line = std::to_string(index) + "\n";
  if (write(w.to_child, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    throw std::runtime_error("runner: cannot send a job to a worker");
  }
  w.in_flight = index;
  w.started = Clock::now();
}

}  // namespace

Job make_job(const std::string& id, std::string golden_file, std::string backend, Device device,
             int threads) {
  Job job;
  job.c = parse_case_id_or_throw(id);
  job.case_id = id;
  job.golden_file = std::move(golden_file);
  job.backend = std::move(backend);
  job.device = std::move(device);
  job.threads = threads;
  return job;
}

std::string repro_command(const Job& job) {
  std::string cmd = "sdpa-cts run --backend " + job.backend + " --case " + shell_quote(job.case_id);
  if (!job.plugin.empty()) cmd += " --plugin " + shell_quote(job.plugin);
  if (!job.golden_file.empty()) cmd += " --golden " + shell_quote(job.golden_file);
  if (const std::string isa = isa_of(job); !isa.empty()) cmd += " --simd " + isa;
  if (job.threads > 0) cmd += " --threads " + std::to_string(job.threads);
  // The device's name carries its overrides; the ISA target is --simd above.
  std::string device = job.device.name;
  if (const auto at = device.find(":isa="); at != std::string::npos) {
    const auto end = device.find(':', at + 1);
    device.erase(at, end == std::string::npos ? std::string::npos : end - at);
  }
  if (device != "cpu") cmd += " --device " + shell_quote(device);
  return cmd;
}

CaseRecord run_job(const Job& job, const RunnerOptions& runner) {
  CaseRecord r = base_record(job);
  const auto t0 = Clock::now();
  try {
    if (runner.before_job) runner.before_job(job);
    const Backend* backend = runner.lookup ? runner.lookup(job.backend) : find_backend(job.backend);
    if (!backend) throw std::invalid_argument("unknown backend '" + job.backend + "'");
    RunOptions options;
    options.threads = job.threads;
    const std::uint64_t limit = case_memory_limit(runner.max_case_memory, runner.jobs);
    CaseOutcome o;
    if (auto early = precheck(*backend, job.c.problem, job.device)) {
      o = *early;  // INVALID or NOT_SUPPORTED whatever the case's size: nothing is allocated
    } else if (const std::string refusal =
                   memory_refusal(harness_memory(job.c.problem, !job.golden_file.empty()), limit);
               !refusal.empty()) {
      o.status = Status::not_judged;
      o.message = "not run: the case " + refusal;
    } else if (job.golden_file.empty()) {
      o = check_case(*backend, job.c, job.device, options);
    } else {
      const golden::GoldenFile file(job.golden_file);
      golden::GoldenCase g = file.load(job.case_id);
      o = conformance::judge_backend(*backend, g, job.device, options);
    }
    set_outcome(r, o);
  } catch (const std::bad_alloc& e) {
    // The judge keeps the backend's own exceptions (a FAIL); one that reaches here is the
    // harness's: its buffers, the reference or a golden file's data did not fit.
    r.status = Status::not_judged;
    r.message = std::string("harness error: the harness's own allocation failed (") + e.what() +
                "); the backend is not judged on this case";
  } catch (const std::exception& e) {
    r.status = Status::fail;
    r.message = std::string("error: ") + e.what();
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

std::vector<CaseRecord> run_jobs(const std::vector<Job>& jobs, const RunnerOptions& options) {
  std::vector<CaseRecord> records(jobs.size());
  std::size_t done = 0;
  const auto report = [&](std::size_t index, CaseRecord r) {
    records[index] = std::move(r);
    ++done;
    if (options.progress) options.progress(done, jobs.size(), records[index]);
  };
  if (!options.isolate) {
    const std::string init_error = initialise_worker(options);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      report(i, init_error.empty() ? run_job(jobs[i], options) : failed_init(jobs[i], init_error));
    }
    return records;
  }
  std::deque<long> pending;
  for (std::size_t i = 0; i < jobs.size(); ++i) pending.push_back(static_cast<long>(i));
  std::vector<Worker> workers(static_cast<std::size_t>(std::max(1, options.jobs)));
  const auto give_work = [&](Worker& w) {
    if (pending.empty()) return;
    if (w.pid < 0) w = spawn(jobs, options);
    assign(w, pending.front());
    pending.pop_front();
  };
  const auto lost = [&](Worker& w, Status status, const std::string& why) {
    CaseRecord r = base_record(jobs[static_cast<std::size_t>(w.in_flight)]);
    r.status = status;
    r.message = why;
    r.seconds = std::chrono::duration<double>(Clock::now() - w.started).count();
    const long index = w.in_flight;
    stop(w, true);
    report(static_cast<std::size_t>(index), std::move(r));
  };
  for (auto& w : workers) give_work(w);
  while (done < jobs.size()) {
    std::vector<pollfd> fds;
    for (auto& w : workers) fds.push_back({w.pid >= 0 ? w.from_child : -1, POLLIN, 0});
    poll(fds.data(), fds.size(), 200);
    for (std::size_t k = 0; k < workers.size(); ++k) {
      Worker& w = workers[k];
      if (w.pid < 0 || w.in_flight < 0) continue;
      if (fds[k].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buf[65536];
        const ssize_t n = read(w.from_child, buf, sizeof buf);
        if (n > 0) {
          w.buffer.append(buf, static_cast<std::size_t>(n));
          const auto nl = w.buffer.find('\n');
          if (nl != std::string::npos) {
            CaseRecord r = record_from_json(nlohmann::json::parse(w.buffer.substr(0, nl)));
            w.buffer.erase(0, nl + 1);
            const long index = w.in_flight;
            w.in_flight = -1;
            report(static_cast<std::size_t>(index), std::move(r));
            give_work(w);
            if (w.in_flight < 0) stop(w, false);
          }
          continue;
        }
        // End of output without a record: the worker died.
        int status = 0;
        waitpid(w.pid, &status, 0);
        std::string why = "the worker process died";
        if (WIFSIGNALED(status)) {
          why = std::string("the backend crashed: signal ") + std::to_string(WTERMSIG(status)) +
                " (" + strsignal(WTERMSIG(status)) + ")";
        } else if (WIFEXITED(status)) {
          why = "the worker process exited with status " + std::to_string(WEXITSTATUS(status));
        }
        w.pid = -1;  // already reaped
        close(w.to_child);
        close(w.from_child);
        CaseRecord r = base_record(jobs[static_cast<std::size_t>(w.in_flight)]);
        r.status = Status::crash;
        r.message = why;
        const long index = w.in_flight;
        w = Worker{};
        report(static_cast<std::size_t>(index), std::move(r));
        give_work(w);
        continue;
      }
      const double elapsed = std::chrono::duration<double>(Clock::now() - w.started).count();
      if (elapsed > options.timeout_seconds) {
        lost(w, Status::timeout,
             "no result within the per-case timeout of " + std::to_string(options.timeout_seconds) +
                 " s");
        give_work(w);
      }
    }
  }
  for (auto& w : workers) stop(w, false);
  return records;
}

}  // namespace sdpa::conformance
