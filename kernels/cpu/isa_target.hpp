// The ISA target a CPU backend runs: the device's (core/device.hpp), checked against the
// CPU this process really runs on, so that a device value never makes a kernel execute
// instructions the machine lacks.
#pragma once

#include "core/device.hpp"

namespace sdpa::cpu {

// device.cpu.isa; throws std::runtime_error when this CPU cannot run it.
IsaTarget isa_to_run(const Device& device);

}  // namespace sdpa::cpu
