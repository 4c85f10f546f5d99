#include "kernels/cpu/isa_target.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace sdpa::cpu {

IsaTarget isa_to_run(const Device& device) {
  static const std::vector<IsaTarget> here = available_isa_targets(detect_cpu().cpu);
  if (std::find(here.begin(), here.end(), device.cpu.isa) == here.end()) {
    throw std::runtime_error("ISA target " + std::string(isa_target_name(device.cpu.isa)) +
                             " of device '" + device.name + "' is not available on this CPU");
  }
  return device.cpu.isa;
}

}  // namespace sdpa::cpu
