// The dispatcher's view of devices: parsing a --device name (with property overrides),
// detection, and a one-line description. The Device value itself is core/device.hpp.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "core/device.hpp"

namespace sdpa::dispatch {

// Parses a device name:
//   "cpu"            this machine's CPU (detected)
//   "cuda"           the detected GPU (an error in a build without CUDA, as here)
//   "auto"           the detected GPU if any, else the CPU
//   a simulated name cpu-scalar, cpu-avx2, cpu-avx512, cpu-avx512bf16, sm50 ... sm121,
//   or any smN with 30 <= N <= 199 (a generic GPU of that compute capability)
// optionally followed by ":key=value" overrides, separated by ':':
//   cudnn=MAJOR.MINOR.PATCH (or "none"), cuda=MAJOR.MINOR, sms=N (GPUs), cores=N (CPUs).
// Example: "sm90:cudnn=9.12.0:sms=66". The error names the device and the part at fault.
std::variant<Device, std::string> parse_device(std::string_view text);

// parse_device, or throws std::invalid_argument with its message.
Device parse_device_or_throw(std::string_view text);

// The GPU of this process: always nullopt, this build has no CUDA runtime.
std::optional<Device> detect_cuda();

// detect_cuda() if it finds one, else detect_cpu().
Device default_device();

// One line: "sm80 (simulated): CUDA sm80, 108 SMs, CUDA 12.8, cuDNN 9.16.0" or
// "cpu (detected): CPU, AVX2 FMA F16C, 2 cores".
std::string describe_device(const Device& d);

}  // namespace sdpa::dispatch
