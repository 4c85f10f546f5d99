// Copies of guarded buffers in a backend's memory space. The judge allocates, fills and
// poisons every buffer in host memory; for a backend whose run() expects another space
// (Backend::run_memory_space; the space's operations are its family's,
// kernels/device_memory.hpp) it mirrors each whole guarded region there (margins, gaps and
// poison included), runs, and copies the regions back, so the same guard checks see any
// write outside a view or into an input.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "core/case_buffers.hpp"
#include "core/guarded_buffer.hpp"
#include "kernels/backend.hpp"
#include "kernels/device_memory.hpp"

namespace sdpa::conformance {

// One guarded buffer mirrored in a device memory: the region is copied there on
// construction; copy_back() brings it home (outputs) so the guards can be checked.
class Mirror {
 public:
  Mirror(const DeviceMemory& memory, GuardedBuffer& host);
  ~Mirror();
  Mirror(const Mirror&) = delete;
  Mirror& operator=(const Mirror&) = delete;
  void* data() const;  // element 0 in device memory
  void copy_back();

 private:
  const DeviceMemory& memory_;
  GuardedBuffer& host_;
  unsigned char* device_ = nullptr;
};

// The Buffers a backend's run() gets for a case's guarded inputs and outputs: the host
// buffers themselves for host memory, else a mirror of each in `space` (the judge and the
// bench share this). copy_back() brings the mirrored regions home; for host memory it does
// nothing. Throws std::runtime_error as device_memory() does.
class PlacedBuffers {
 public:
  PlacedBuffers(MemorySpace space, const Problem& p, InputBuffers& in, OutputBuffers& out);
  const Buffers& get() const { return buffers_; }
  void copy_back();

 private:
  std::vector<std::unique_ptr<Mirror>> mirrors_;
  Buffers buffers_;
};

}  // namespace sdpa::conformance
