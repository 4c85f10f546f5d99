#include "conformance/judge/memory_space.hpp"

#include <stdexcept>
#include <string>

namespace sdpa::conformance {

Mirror::Mirror(const DeviceMemory& memory, GuardedBuffer& host) : memory_(memory), host_(host) {
  device_ = static_cast<unsigned char*>(memory_.allocate(host_.region_size()));
  memory_.to_device(device_, host_.region(), host_.region_size());
}

Mirror::~Mirror() { memory_.release(device_); }

void* Mirror::data() const { return device_ + host_.data_offset(); }

void Mirror::copy_back() { memory_.to_host(host_.region(), device_, host_.region_size()); }

PlacedBuffers::PlacedBuffers(MemorySpace space, const Problem& p, InputBuffers& in,
                             OutputBuffers& out) {
  const DeviceMemory* memory = device_memory(space);
  auto place = [&](GuardedBuffer& g) -> void* {
    if (!memory) return g.data();
    mirrors_.push_back(std::make_unique<Mirror>(*memory, g));
    return mirrors_.back()->data();
  };
  buffers_.q = place(in.q);
  buffers_.k = place(in.k);
  buffers_.v = place(in.v);
  buffers_.mask = in.mask ? place(*in.mask) : nullptr;
  buffers_.o = place(out.o);
  buffers_.lse = p.want_lse ? static_cast<float*>(place(out.lse)) : nullptr;
  buffers_.weights = p.want_weights ? place(out.weights) : nullptr;
  buffers_.memory = space;
}

void PlacedBuffers::copy_back() {
  for (auto& m : mirrors_) m->copy_back();
}

}  // namespace sdpa::conformance
