#include "core/cuda_runtime.hpp"

#include <stdexcept>

#ifdef SDPA_CTS_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>
#include <utility>
#endif

namespace sdpa::cuda_runtime {

#ifndef SDPA_CTS_HAVE_CUDA

namespace {
constexpr const char* kNone = "this build has no CUDA runtime (SDPA_CTS_CUDA, docs/KERNELS.md)";
}

bool linked() { return false; }

std::optional<Gpu> probe(std::string* why) {
  if (why) *why = kNone;
  return std::nullopt;
}

void* allocate(std::size_t) { throw std::runtime_error(kNone); }
void release(void*) noexcept {}
void to_device(void*, const void*, std::size_t) { throw std::runtime_error(kNone); }
void to_host(void*, const void*, std::size_t) { throw std::runtime_error(kNone); }

#else

namespace {

std::string failed(const char* call, cudaError_t e) {
  return std::string(call) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

void check(const char* call, cudaError_t e) {
  if (e != cudaSuccess) throw std::runtime_error(failed(call, e));
}

// cudnnGetVersion from whichever cuDNN library loads; 0 when none does. Loaded, not
// linked: cuDNN is optional at run time.
int cudnn_version() {
  for (const char* lib : {"libcudnn.so.9", "libcudnn.so.8", "libcudnn.so"}) {
    void* h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
    if (!h) continue;
    using GetVersion = std::size_t (*)();
    const auto get = reinterpret_cast<GetVersion>(dlsym(h, "cudnnGetVersion"));
    const int v = get ? static_cast<int>(get()) : 0;
    dlclose(h);
    if (v > 0) return v;
  }
  return 0;
}

}  // namespace

bool linked() { return true; }

namespace {

// Asks the CUDA runtime in this process. Initialises CUDA here.
std::optional<Gpu> probe_here(std::string* why) {
  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    if (why) *why = failed("cudaGetDeviceCount", e);
    return std::nullopt;
  }
  if (count == 0) {
    if (why) *why = "the CUDA runtime sees no device";
    return std::nullopt;
  }
  cudaDeviceProp prop{};
  if (const cudaError_t e = cudaGetDeviceProperties(&prop, 0); e != cudaSuccess) {
    if (why) *why = failed("cudaGetDeviceProperties", e);
    return std::nullopt;
  }
  Gpu g;
  g.model = prop.name;
  g.sm = prop.major * 10 + prop.minor;
  g.sm_count = prop.multiProcessorCount;
  g.memory = prop.totalGlobalMem;
  cudaRuntimeGetVersion(&g.runtime_version);
  cudaDriverGetVersion(&g.driver_version);
  g.cudnn_version = cudnn_version();
  g.smem_per_block_optin = prop.sharedMemPerBlockOptin;
  g.regs_per_sm = prop.regsPerMultiprocessor;
  return g;
}

// The probe, in a forked child: CUDA does not survive fork(), and the conformance runner
// forks its workers after the device was parsed, so the caller's process must not
// initialise CUDA just to learn what the GPU is. One line comes back through a pipe:
// "ok <sm> <sm_count> <memory> <runtime> <driver> <cudnn> <smem> <regs> <model>" or
// "no <why>".
std::optional<Gpu> probe_in_child(std::string* why) {
  int fds[2];
  if (pipe(fds) != 0) {
    if (why) *why = "cannot probe the GPU: pipe() failed";
    return std::nullopt;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    if (why) *why = "cannot probe the GPU: fork() failed";
    return std::nullopt;
  }
  if (pid == 0) {
    close(fds[0]);
    std::string reason;
    const auto g = probe_here(&reason);
    std::ostringstream line;
    if (g) {
      line << "ok " << g->sm << ' ' << g->sm_count << ' ' << g->memory << ' ' << g->runtime_version
           << ' ' << g->driver_version << ' ' << g->cudnn_version << ' ' << g->smem_per_block_optin
           << ' ' << g->regs_per_sm << ' ' << g->model;
    } else {
      line << "no " << reason;
    }
    const std::string text = line.str();
    const char* q = text.data();
    std::size_t left = text.size();
    while (left > 0) {
      const ssize_t n = write(fds[1], q, left);
      if (n <= 0) break;
      q += n;
      left -= static_cast<std::size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buf[512];
  for (;;) {
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::istringstream in(text);
  std::string tag;
  in >> tag;
  if (tag == "ok") {
    Gpu g;
    in >> g.sm >> g.sm_count >> g.memory >> g.runtime_version >> g.driver_version >>
        g.cudnn_version >> g.smem_per_block_optin >> g.regs_per_sm;
    std::getline(in >> std::ws, g.model);
    if (in || !g.model.empty()) return g;
  }
  if (why) {
    std::string reason;
    std::getline(in >> std::ws, reason);
    *why = tag == "no" ? reason
                       : "probing the GPU failed (the probing process ended with status " +
                             std::to_string(status) + ")";
  }
  return std::nullopt;
}

}  // namespace

std::optional<Gpu> probe(std::string* why) {
  // Once per process: the answer does not change, and each probe forks.
  static const std::pair<std::optional<Gpu>, std::string> once = [] {
    std::string reason;
    auto g = probe_in_child(&reason);
    return std::make_pair(g, reason);
  }();
  if (why) *why = once.second;
  return once.first;
}

void* allocate(std::size_t bytes) {
  void* p = nullptr;
  check("cudaMalloc", cudaMalloc(&p, bytes == 0 ? 1 : bytes));
  return p;
}

void release(void* p) noexcept {
  if (p) cudaFree(p);
}

void to_device(void* dst, const void* src, std::size_t bytes) {
  if (bytes)
    check("cudaMemcpy (to the device)", cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}

void to_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes) check("cudaMemcpy (to the host)", cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

#endif

}  // namespace sdpa::cuda_runtime
