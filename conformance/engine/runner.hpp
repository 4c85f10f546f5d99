// The conformance runner: runs jobs (case x backend x SIMD target x thread count) in
// isolated worker processes, so a crash or a hang becomes a CRASH or TIMEOUT record and
// the run goes on, and collects the records in job order.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/case_id.hpp"
#include "core/device.hpp"
#include "kernels/backend.hpp"
#include "reports/records/run_record.hpp"

namespace sdpa::conformance {

// One unit of work: a parsed case on one backend on one resolved device.
struct Job {
  Case c;                   // the case, parsed once
  std::string case_id;      // its canonical ID
  std::string golden_file;  // "" = generated data; else the golden file holding the case
  std::string backend;      // backend name
  Device device;            // the device it runs on, resolved (for a CPU: its ISA target)
  int threads = 0;          // OpenMP threads for the backend (0 = default)
  std::string plugin;       // the plugin file providing the backend ("" = built in)
};

// A job for case `id` (parsed here; throws std::invalid_argument for a bad ID).
Job make_job(const std::string& id, std::string golden_file, std::string backend, Device device,
             int threads);

struct RunnerOptions {
  int jobs = 1;                       // worker processes at once
  std::uint64_t max_case_memory = 0;  // host memory the harness may use for one job, in bytes;
                                      // 0 = default_case_memory_limit(jobs) (case_memory.hpp)
  double timeout_seconds = 300;       // per job
  bool isolate = true;  // false: run in this process (no CRASH/TIMEOUT detection; for gdb)
  std::function<void(std::size_t done, std::size_t total, const CaseRecord&)> progress;
  // Finds a backend by name; default: the built-in registry (tests add their own backends).
  std::function<const Backend*(std::string_view)> lookup;
  // Runs once in each worker process before its first job (isolated runs), or once before
  // the first job in this process: where plugins are loaded, so plugin code runs only in
  // workers. An exception makes every job of that worker a FAIL naming it.
  std::function<void()> worker_init;
  // Runs before each job, where the job runs (in its worker for isolated runs): binds what the
  // job's backend needs that its name does not say (the Python package binds the case's
  // Python object to the function it judges). An exception is the job's FAIL.
  std::function<void(const Job&)> before_job;
};

// The paste-able command reproducing one job.
std::string repro_command(const Job& job);

// Runs one job in the current process and returns its record (never throws). INVALID and
// NOT_SUPPORTED come first; then a case whose harness memory (case_memory.hpp) exceeds the
// options' limit is NOT_JUDGED without allocating, and so is one whose harness allocation
// fails (std::bad_alloc outside the backend's run); other errors become FAIL records naming
// the error.
CaseRecord run_job(const Job& job, const RunnerOptions& options = {});

// Runs every job and returns the records in job order. Isolated workers are fork()ed: the
// calling process must not have run an OpenMP parallel region before (libgomp's thread pool
// does not survive fork, and the child would hang). The sdpa-cts command never does; tests
// of the runner live in their own binary for this reason.
std::vector<CaseRecord> run_jobs(const std::vector<Job>& jobs, const RunnerOptions& options);

}  // namespace sdpa::conformance
