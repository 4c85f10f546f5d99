// The CPU feature flags of this machine as the OS names them (/proc/cpuinfo "flags" on x86,
// "Features" on Arm): "avx512_bf16", "amx_bf16", ... Known-failure conditions
// (reports/records/expect_condition.hpp, `cpu:FLAG`) are written in these names, so that an
// entry reads as the line a person greps /proc/cpuinfo for. CpuFeatures (core/device.hpp) is
// what kernels choose ISA targets by; this is the OS's full list, for facts about the host.
#pragma once

#include <set>
#include <string>
#include <string_view>

namespace sdpa {

// The flags of the first "flags" (or "Features") line of `cpuinfo`, the text of
// /proc/cpuinfo; empty when it has none.
std::set<std::string> parse_cpu_flags(std::string_view cpuinfo);

// This machine's flags, read from /proc/cpuinfo once; empty where it cannot be read.
const std::set<std::string>& host_cpu_flags();

}  // namespace sdpa
