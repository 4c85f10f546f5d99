#include "plugins/host/plugin_loader.hpp"

#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "kernels/backend_json.hpp"
#include "plugins/host/plugin_backend.hpp"

namespace sdpa::plugins {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::invalid_argument("plugin '" + path + "': " + what);
}

const std::string kHostAbi =
    std::to_string(SDPA_CTS_PLUGIN_ABI_MAJOR) + "." + std::to_string(SDPA_CTS_PLUGIN_ABI_MINOR);

// "MAJOR.MINOR" of what a plugin's entry returned.
std::string abi_of(const sdpa_cts_plugin& pl) {
  return std::to_string(pl.abi_major) + "." + std::to_string(pl.abi_minor);
}

// dlopen + the entry symbol + the ABI checks; the returned description lives as long as the
// process (plugins are never unloaded).
const sdpa_cts_plugin& open_plugin(const std::string& path) {
  if (access(path.c_str(), R_OK) != 0)
    fail(path, std::string("cannot read the file: ") + std::strerror(errno));
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) fail(path, std::string("cannot load it: ") + dlerror());
  auto entry =
      reinterpret_cast<sdpa_cts_plugin_entry_fn>(dlsym(handle, SDPA_CTS_PLUGIN_ENTRY_SYMBOL));
  if (!entry) fail(path, "no symbol " SDPA_CTS_PLUGIN_ENTRY_SYMBOL " (is it an sdpa-cts plugin?)");
  const sdpa_cts_plugin* pl = entry(SDPA_CTS_PLUGIN_ABI_MAJOR, SDPA_CTS_PLUGIN_ABI_MINOR);
  if (!pl) {
    // A plugin built for another major returns NULL to this host when it follows the
    // template. Asked as a host of an older major would ask, it says which one it was built
    // for (abi_major and abi_minor come first in every ABI version): only to name it.
    for (uint32_t major = SDPA_CTS_PLUGIN_ABI_MAJOR - 1; major >= 1 && !pl; --major) {
      pl = entry(major, 0);
    }
    if (!pl) {
      fail(path, SDPA_CTS_PLUGIN_ENTRY_SYMBOL " returned NULL for this host (ABI " + kHostAbi +
                     ") and for hosts of every older ABI major");
    }
    if (pl->abi_major == SDPA_CTS_PLUGIN_ABI_MAJOR) {
      fail(path, SDPA_CTS_PLUGIN_ENTRY_SYMBOL " returned NULL for this host (ABI " + kHostAbi +
                     "), though it was built for ABI " + abi_of(*pl));
    }
  }
  if (pl->abi_major < SDPA_CTS_PLUGIN_ABI_MAJOR) {
    fail(path, "it was built for plugin ABI " + abi_of(*pl) + "; this sdpa-cts speaks ABI " +
                   kHostAbi + ": rebuild it against the new sdpa_cts/plugin.h (docs/PLUGINS.md, " +
                   "\"Migrating a plugin to ABI " + std::to_string(SDPA_CTS_PLUGIN_ABI_MAJOR) +
                   "\")");
  }
  if (pl->abi_major > SDPA_CTS_PLUGIN_ABI_MAJOR) {
    fail(path, "it was built for plugin ABI " + abi_of(*pl) + "; this sdpa-cts speaks ABI " +
                   kHostAbi + ": use an sdpa-cts that speaks ABI " + std::to_string(pl->abi_major) +
                   ", or rebuild the plugin against this one's " + "sdpa_cts/plugin.h");
  }
  // A plugin of this major may be built against any minor: its structs are at least as
  // large as this major's first version, never smaller.
  const std::pair<const char*, std::pair<uint32_t, std::size_t>> sizes[] = {
      {"sdpa_cts_params", {pl->sizeof_params, kParamsSizeAbi20}},
      {"sdpa_cts_device", {pl->sizeof_device, sizeof(sdpa_cts_device)}},
      {"sdpa_cts_capabilities", {pl->sizeof_capabilities, sizeof(sdpa_cts_capabilities)}},
      {"sdpa_cts_precision", {pl->sizeof_precision, kPrecisionSizeAbi20}},
      {"sdpa_cts_backend", {pl->sizeof_backend, kBackendSizeAbi20}}};
  for (const auto& [name, size] : sizes) {
    if (size.first < size.second) {
      fail(path, std::string("sizeof(") + name + ") is " + std::to_string(size.first) +
                     " in the plugin, " + std::to_string(size.second) +
                     " in this host: built against a different header?");
    }
  }
  if (pl->backend_count == 0 || !pl->backends) fail(path, "it describes no backend");
  for (uint32_t i = 0; i < pl->backend_count; ++i) {
    // Backends are laid out with the plugin's own struct size.
    const auto& b = *reinterpret_cast<const sdpa_cts_backend*>(
        reinterpret_cast<const char*>(pl->backends) + std::size_t(i) * pl->sizeof_backend);
    if (auto why = check_description(b); !why.empty()) fail(path, why);
  }
  return *pl;
}

const sdpa_cts_backend& backend_at(const sdpa_cts_plugin& pl, uint32_t i) {
  return *reinterpret_cast<const sdpa_cts_backend*>(reinterpret_cast<const char*>(pl.backends) +
                                                    std::size_t(i) * pl.sizeof_backend);
}

// A plugin backend's capabilities and precision contracts as JSON (what the probe reports and
// a certification manifest records): backend_json() without the trait a built-in backend's
// Capabilities can hold and the ABI cannot declare (isa_targets: a plugin backend has one
// code path, run once per job whatever `--simd all` asks), so that it lists only what the
// plugin declared.
std::string description_json(const sdpa_cts_backend& b) {
  nlohmann::ordered_json j = backend_json(*make_plugin_backend(b));
  j["capabilities"]["traits"].erase("isa_targets");
  return j.dump();
}

ProbedPlugin describe(const std::string& path, const sdpa_cts_plugin& pl) {
  ProbedPlugin out;
  out.path = path;
  out.name = pl.name ? pl.name : "";
  out.version = pl.version ? pl.version : "";
  out.abi = abi_of(pl);
  for (uint32_t i = 0; i < pl.backend_count; ++i) {
    const sdpa_cts_backend& b = backend_at(pl, i);
    out.backends.push_back(
        {b.name,
         b.capabilities.device_kind == SDPA_CTS_DEVICE_CUDA ? DeviceKind::cuda : DeviceKind::cpu,
         description_json(b)});
  }
  return out;
}

void write_all(int fd, const std::string& s) {
  const char* p = s.data();
  std::size_t left = s.size();
  while (left > 0) {
    const ssize_t n = write(fd, p, left);
    if (n <= 0) return;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace

std::vector<std::string> plugin_paths(const std::vector<std::string>& from_flags) {
  std::vector<std::string> out;
  auto add = [&](const std::string& p) {
    if (p.empty()) return;
    for (const auto& q : out) {
      if (q == p) return;
    }
    out.push_back(p);
  };
  for (const auto& p : from_flags) add(p);
  if (const char* env = std::getenv("SDPA_CTS_PLUGINS")) {
    std::stringstream ss(env);
    std::string item;
    while (std::getline(ss, item, ':')) add(item);
  }
  return out;
}

ProbedPlugin probe_plugin(const std::string& path, double timeout_seconds) {
  int fds[2];
  if (pipe(fds) != 0) fail(path, "cannot create a pipe to probe it");
  const pid_t pid = fork();
  if (pid < 0) fail(path, "cannot fork a process to probe it");
  if (pid == 0) {
    close(fds[0]);
    // Per backend "B <kind> <name>" and "J <description JSON>", then "A <abi>" and
    // "OK <name>\t<version>", or "E <message>".
    std::string out;
    try {
      const ProbedPlugin p = describe(path, open_plugin(path));
      for (const auto& b : p.backends) {
        out += "B " + std::to_string(b.device == DeviceKind::cuda ? 1 : 0) + " " + b.name + "\n";
        out += "J " + b.description + "\n";
      }
      out += "A " + p.abi + "\n";
      out += "OK " + p.name + "\t" + p.version + "\n";
    } catch (const std::exception& e) {
      out = std::string("E ") + e.what() + "\n";
    }
    write_all(fds[1], out);
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  const auto start = std::chrono::steady_clock::now();
  bool timed_out = false;
  for (;;) {
    pollfd pfd{fds[0], POLLIN, 0};
    const double left =
        timeout_seconds -
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    if (poll(&pfd, 1, static_cast<int>(left * 1000) + 1) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  if (timed_out) {
    fail(path, "loading it did not finish within " + std::to_string(int(timeout_seconds)) + " s");
  }
  if (WIFSIGNALED(status)) {
    fail(path, std::string("it crashed while loading: signal ") + std::to_string(WTERMSIG(status)) +
                   " (" + strsignal(WTERMSIG(status)) + ")");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fail(path, "loading it ended the process with status " + std::to_string(WEXITSTATUS(status)));
  }
  ProbedPlugin out;
  out.path = path;
  std::stringstream lines(text);
  std::string line;
  bool ok = false;
  while (std::getline(lines, line)) {
    if (line.rfind("E ", 0) == 0) throw std::invalid_argument(line.substr(2));
    if (line.rfind("B ", 0) == 0 && line.size() > 4) {
      out.backends.push_back(
          {line.substr(4), line[2] == '1' ? DeviceKind::cuda : DeviceKind::cpu, ""});
    } else if (line.rfind("J ", 0) == 0 && !out.backends.empty()) {
      out.backends.back().description = line.substr(2);
    } else if (line.rfind("A ", 0) == 0) {
      out.abi = line.substr(2);
    } else if (line.rfind("OK ", 0) == 0) {
      const auto tab = line.find('\t');
      out.name = line.substr(3, tab == std::string::npos ? std::string::npos : tab - 3);
      if (tab != std::string::npos) out.version = line.substr(tab + 1);
      ok = true;
    }
  }
  if (!ok) fail(path, "loading it ended the process without a description");
  return out;
}

ProbedPlugin load_plugin(const std::string& path, BackendRegistry& registry) {
  const sdpa_cts_plugin& pl = open_plugin(path);
  for (uint32_t i = 0; i < pl.backend_count; ++i) {
    const sdpa_cts_backend& b = backend_at(pl, i);
    for (uint32_t k = 0; k < i; ++k) {
      if (std::strcmp(backend_at(pl, k).name, b.name) == 0) {
        fail(path, std::string("it describes backend '") + b.name + "' twice");
      }
    }
    if (registry.find(b.name)) {
      fail(path, std::string("backend '") + b.name + "' is already registered (a built-in " +
                     "backend or another plugin has that name)");
    }
  }
  for (uint32_t i = 0; i < pl.backend_count; ++i)
    registry.add(make_plugin_backend(backend_at(pl, i)));
  return describe(path, pl);
}

}  // namespace sdpa::plugins
