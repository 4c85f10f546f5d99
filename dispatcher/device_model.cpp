#include "dispatcher/device_model.hpp"

#include <charconv>
#include <stdexcept>
#include <vector>

#include "kernels/cuda/cuda_backends.hpp"

namespace sdpa::dispatch {
namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

std::optional<int> to_int(std::string_view s) {
  int v = 0;
  if (s.empty()) return std::nullopt;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

std::string known_names() {
  std::string s = "cpu, cuda, auto";
  for (const auto& n : simulated_device_names()) s += ", " + n;
  return s + ", smN (30 <= N <= 199)";
}

// "MAJOR.MINOR.PATCH" (patch optional) to major * 10000 + minor * 100 + patch.
std::optional<int> parse_version(std::string_view s, bool want_patch) {
  auto parts = split(s, '.');
  if (parts.size() < 2 || parts.size() > 3) return std::nullopt;
  int v[3] = {0, 0, 0};
  for (std::size_t i = 0; i < parts.size(); ++i) {
    auto x = to_int(parts[i]);
    if (!x || (i > 0 && *x > 99)) return std::nullopt;
    v[i] = *x;
  }
  return want_patch ? v[0] * 10000 + v[1] * 100 + v[2] : v[0] * 1000 + v[1] * 10;
}

}  // namespace

std::optional<Device> detect_cuda() { return std::nullopt; }

Device default_device() {
  if (auto d = detect_cuda()) return *d;
  return detect_cpu();
}

std::variant<Device, std::string> parse_device(std::string_view text) {
  const std::string whole(text);
  auto parts = split(text, ':');
  const std::string_view base = parts[0];
  std::optional<Device> dev;
  if (base == "cpu") {
    dev = detect_cpu();
  } else if (base == "cuda") {
    dev = detect_cuda();
    if (!dev) return "device 'cuda': no CUDA device detected (this build has no CUDA runtime)";
  } else if (base == "auto") {
    dev = default_device();
  } else if (auto sim = simulated_device(base)) {
    dev = sim;
  } else if (base.size() > 2 && base.substr(0, 2) == "sm") {
    auto sm = to_int(base.substr(2));
    if (!sm || *sm < 30 || *sm > 199) {
      return "device '" + whole + "': '" + std::string(base) +
             "' is not a compute capability smN with 30 <= N <= 199";
    }
    // A generic GPU of this compute capability, with the same defaults as the named ones.
    Device d = *simulated_device("sm80");
    d.name = std::string(base);
    d.cuda.sm = *sm;
    d.cuda.sm_count = 80;
    dev = d;
  } else {
    return "unknown device '" + std::string(base) + "' (known: " + known_names() + ")";
  }
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::string_view opt = parts[i];
    const auto eq = opt.find('=');
    if (eq == std::string_view::npos) {
      return "device '" + whole + "': option '" + std::string(opt) + "' is not key=value";
    }
    const std::string key(opt.substr(0, eq));
    const std::string_view value = opt.substr(eq + 1);
    const bool gpu = dev->kind == DeviceKind::cuda;
    auto bad = [&](const std::string& what) {
      return "device '" + whole + "': option '" + key + "': " + what + ", got '" +
             std::string(value) + "'";
    };
    if (key == "cudnn" && gpu) {
      if (value == "none") {
        dev->cuda.cudnn_version = 0;
      } else {
        auto v = parse_version(value, true);
        if (!v) return bad("expected a version MAJOR.MINOR.PATCH or 'none'");
        dev->cuda.cudnn_version = *v;
      }
    } else if (key == "cuda" && gpu) {
      auto v = parse_version(value, false);
      if (!v) return bad("expected a version MAJOR.MINOR");
      dev->cuda.cuda_runtime = *v;
    } else if (key == "sms" && gpu) {
      auto v = to_int(value);
      if (!v || *v < 1) return bad("expected a positive SM count");
      dev->cuda.sm_count = *v;
    } else if (key == "cores" && !gpu) {
      auto v = to_int(value);
      if (!v || *v < 1) return bad("expected a positive core count");
      dev->cpu.cores = *v;
    } else {
      return "device '" + whole + "': unknown option '" + key + "' for a " +
             (gpu ? "GPU (known: cudnn, cuda, sms)" : "CPU (known: cores)");
    }
    dev->name.append(":").append(opt);
  }
  return *dev;
}

Device parse_device_or_throw(std::string_view text) {
  auto r = parse_device(text);
  if (auto* e = std::get_if<std::string>(&r)) throw std::invalid_argument(*e);
  return std::get<Device>(std::move(r));
}

std::string describe_device(const Device& d) {
  std::string s = d.name + (d.simulated ? " (simulated): " : " (detected): ");
  if (d.kind == DeviceKind::cuda) {
    s.append("CUDA ").append(cuda::sm_name(d.cuda.sm)).append(", ");
    s.append(std::to_string(d.cuda.sm_count)).append(" SMs, CUDA ");
    s.append(std::to_string(d.cuda.cuda_runtime / 1000)).append(".");
    s.append(std::to_string(d.cuda.cuda_runtime / 10 % 100)).append(", cuDNN ");
    s.append(cuda::cudnn_version_name(d.cuda.cudnn_version));
    return s;
  }
  std::string isa;
  const std::pair<bool, const char*> feats[] = {{d.cpu.avx2, "AVX2"},
                                                {d.cpu.fma, "FMA"},
                                                {d.cpu.f16c, "F16C"},
                                                {d.cpu.avx512f, "AVX-512"},
                                                {d.cpu.avx512_bf16, "AVX512-BF16"},
                                                {d.cpu.avx512_fp16, "AVX512-FP16"}};
  for (auto [on, n] : feats) {
    if (on) isa.append(isa.empty() ? "" : " ").append(n);
  }
  s.append("CPU, ").append(isa.empty() ? std::string("scalar only") : isa).append(", ");
  s.append(std::to_string(d.cpu.cores)).append(" cores");
  return s;
}

}  // namespace sdpa::dispatch
