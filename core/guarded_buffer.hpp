// Guarded buffers: an allocation around a strided view, pre-filled with a poison
// pattern, with margins before and after. After a kernel ran, check() reports the first
// view element left unwritten and the first byte outside the view (margins, the base
// offset, gaps between strided rows) that changed; check_unchanged() reports the first
// modified byte of an input.
//
// Poison: a NaN with an unusual payload in every float type (f64 0x7FF5A5A5A5A5A5A5,
// f32 0x7FA5A5A5, f16 and bf16 0x7FA5). It is a signalling NaN in f64, f32 and bf16; in
// f16 the same bits are a quiet NaN (no 16-bit pattern signals in both f16 and bf16), but
// with a payload that arithmetic never produces from the canonical NaNs data generators
// use. So a computed value is not mistaken for poison, and a kernel that reads a gap and
// copies its NaN through is reported, as unwritten.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor_view.hpp"

namespace sdpa {

// Bytes of margin before and after a view, unless a buffer asks for others.
inline constexpr std::size_t kGuardMarginBytes = 256;

// The host memory a GuardedBuffer holds, computed without allocating it (to refuse a case
// whose buffers cannot fit before any is made). Sums saturate at UINT64_MAX.
struct GuardedBufferFootprint {
  std::uint64_t region = 0;      // the guarded region: margins, base offset, view (region_size())
  std::uint64_t allocation = 0;  // the region plus the slack that aligns it to 64 bytes
  std::uint64_t view_map = 0;    // the map of which element offsets the view covers, 1 byte each
  std::uint64_t held() const;    // allocation + view_map: what a buffer holds before snapshot()
};
// For a GuardedBuffer(name, element_size, view, base_offset, margin_bytes) of a valid view.
GuardedBufferFootprint guarded_buffer_footprint(std::size_t element_size, const StridedView& view,
                                                std::int64_t base_offset = 0,
                                                std::size_t margin_bytes = kGuardMarginBytes);

struct GuardViolation {
  enum class Kind { none, unwritten, out_of_bounds, modified_input };
  Kind kind = Kind::none;        // what went wrong
  std::int64_t byte_offset = 0;  // offset from the view's element 0 (negative: before it)
  std::string message;           // one sentence naming the tensor and the place
  explicit operator bool() const { return kind != Kind::none; }
};

class GuardedBuffer {
 public:
  // `element_size` in bytes (1, 2, 4 or 8); `base_offset` elements of poison between the
  // front margin and element 0; margins of `margin_bytes` (rounded up to 64) both sides.
  GuardedBuffer(std::string name, std::size_t element_size, const StridedView& view,
                std::int64_t base_offset = 0, std::size_t margin_bytes = kGuardMarginBytes);

  GuardedBuffer(GuardedBuffer&&) = default;
  GuardedBuffer& operator=(GuardedBuffer&&) = default;
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  void* data() { return bytes() + front_; }  // element 0 of the view
  const void* data() const { return bytes() + front_; }
  const StridedView& view() const { return view_; }
  // The whole guarded region (front margin, base offset, view with its gaps, back margin),
  // for copying to and from another memory space; element 0 lies data_offset() bytes in.
  unsigned char* region() { return bytes(); }
  const unsigned char* region() const { return bytes(); }
  std::size_t region_size() const { return size_; }
  std::size_t data_offset() const { return front_; }
  std::size_t element_size() const { return element_size_; }

  // Fills the whole allocation (margins, gaps and view) with poison.
  void poison();
  // Remembers the current bytes for check_unchanged().
  void snapshot();

  // For an output: every view element differs from poison and every other byte is poison.
  GuardViolation check() const;
  // For an input: no byte differs from the snapshot.
  GuardViolation check_unchanged() const;

 private:
  std::string name_;
  std::size_t element_size_;
  StridedView view_;
  std::size_t front_ = 0;  // bytes from the allocation start to element 0
  std::int64_t extent_ = 0;
  std::vector<unsigned char> raw_;  // allocation; the guarded region starts 64-aligned in it
  std::size_t align_pad_ = 0;       // bytes from raw_.data() to the 64-aligned start
  std::size_t size_ = 0;            // bytes of the guarded region
  unsigned char* bytes() { return raw_.data() + align_pad_; }
  const unsigned char* bytes() const { return raw_.data() + align_pad_; }
  std::vector<unsigned char> snapshot_;
  std::vector<std::uint8_t> in_view_;  // 1 for element offsets [0, extent) the view covers
};

// The poison bit pattern of one element of the given size, little-endian bytes.
std::vector<unsigned char> poison_pattern(std::size_t element_size);

}  // namespace sdpa
