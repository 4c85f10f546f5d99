#include "core/guarded_buffer.hpp"

#include <cstring>
#include <new>
#include <stdexcept>

namespace sdpa {

std::vector<unsigned char> poison_pattern(std::size_t element_size) {
  std::uint64_t v = 0;
  switch (element_size) {
    case 1:
      v = 0xA5;
      break;
    case 2:
      v = 0x7FA5;
      break;
    case 4:
      v = 0x7FA5A5A5u;
      break;
    case 8:
      v = 0x7FF5A5A5A5A5A5A5ull;
      break;
    default:
      throw std::invalid_argument("poison_pattern: unsupported element size " +
                                  std::to_string(element_size));
  }
  std::vector<unsigned char> out(element_size);
  std::memcpy(out.data(), &v, element_size);  // little-endian host
  return out;
}

namespace {

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r;
  return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}
std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
std::size_t rounded_margin(std::size_t margin_bytes) { return (margin_bytes + 63) / 64 * 64; }
constexpr std::size_t kAlignmentSlack = 64;

}  // namespace

std::uint64_t GuardedBufferFootprint::held() const { return saturating_add(allocation, view_map); }

GuardedBufferFootprint guarded_buffer_footprint(std::size_t element_size, const StridedView& view,
                                                std::int64_t base_offset,
                                                std::size_t margin_bytes) {
  const std::uint64_t margin = rounded_margin(margin_bytes);
  const std::int64_t extent = view_extent(view);
  const std::uint64_t elements = extent < 0 ? UINT64_MAX : static_cast<std::uint64_t>(extent);
  const std::uint64_t offset = base_offset < 0 ? 0 : static_cast<std::uint64_t>(base_offset);
  GuardedBufferFootprint f;
  f.region = saturating_add(saturating_add(margin, saturating_mul(offset, element_size)),
                            saturating_add(saturating_mul(elements, element_size), margin));
  f.allocation = saturating_add(f.region, kAlignmentSlack);
  f.view_map = elements;
  return f;
}

GuardedBuffer::GuardedBuffer(std::string name, std::size_t element_size, const StridedView& view,
                             std::int64_t base_offset, std::size_t margin_bytes)
    : name_(std::move(name)), element_size_(element_size), view_(view) {
  if (auto r = validate_view(view, name_); !r.empty()) throw std::invalid_argument(r);
  if (base_offset < 0) throw std::invalid_argument(name_ + ": negative base offset");
  poison_pattern(element_size);  // validates the size
  margin_bytes = rounded_margin(margin_bytes);
  extent_ = view_extent(view);
  front_ = margin_bytes + static_cast<std::size_t>(base_offset) * element_size;
  const GuardedBufferFootprint footprint =
      guarded_buffer_footprint(element_size, view, base_offset, margin_bytes);
  // Beyond what a vector can hold (a saturated size): an allocation failure like any other.
  if (footprint.allocation >= raw_.max_size()) throw std::bad_alloc();
  size_ = static_cast<std::size_t>(footprint.region);
  raw_.assign(static_cast<std::size_t>(footprint.allocation), 0);
  align_pad_ = (64 - reinterpret_cast<std::uintptr_t>(raw_.data()) % 64) % 64;
  in_view_.assign(static_cast<std::size_t>(extent_), 0);
  if (view_numel(view) > 0) {
    for (std::int64_t a = 0; a < view.shape[0]; ++a)
      for (std::int64_t b = 0; b < view.shape[1]; ++b)
        for (std::int64_t c = 0; c < view.shape[2]; ++c)
          for (std::int64_t d = 0; d < view.shape[3]; ++d)
            in_view_[static_cast<std::size_t>(a * view.stride[0] + b * view.stride[1] +
                                              c * view.stride[2] + d * view.stride[3])] = 1;
  }
  poison();
}

void GuardedBuffer::poison() {
  const auto pat = poison_pattern(element_size_);
  // Align the pattern to element 0 so every element slot holds one whole pattern.
  for (std::size_t i = 0; i < size_; ++i) {
    const std::size_t phase = (i + element_size_ * 1024 - front_ % element_size_) % element_size_;
    bytes()[i] = pat[phase];
  }
}

void GuardedBuffer::snapshot() { snapshot_.assign(bytes(), bytes() + size_); }

GuardViolation GuardedBuffer::check() const {
  const auto pat = poison_pattern(element_size_);
  const auto byte_is_poison = [&](std::size_t i) {
    const std::size_t phase = (i + element_size_ * 1024 - front_ % element_size_) % element_size_;
    return bytes()[i] == pat[phase];
  };
  // Outside the view: front margin + base offset, gaps, back margin.
  for (std::size_t i = 0; i < size_; ++i) {
    const std::int64_t rel = static_cast<std::int64_t>(i) - static_cast<std::int64_t>(front_);
    const bool inside = rel >= 0 && rel < extent_ * static_cast<std::int64_t>(element_size_) &&
                        in_view_[static_cast<std::size_t>(rel) / element_size_];
    if (!inside && !byte_is_poison(i)) {
      const char* where = rel < 0 ? "before the view"
                          : rel >= extent_ * static_cast<std::int64_t>(element_size_)
                              ? "after the view"
                              : "in a gap between view elements";
      return {
          GuardViolation::Kind::out_of_bounds, rel,
          name_ + ": byte " + std::to_string(rel) + " relative to element 0 was written " + where};
    }
  }
  for (std::int64_t e = 0; e < extent_; ++e) {
    if (!in_view_[static_cast<std::size_t>(e)]) continue;
    const unsigned char* p = bytes() + front_ + static_cast<std::size_t>(e) * element_size_;
    if (std::memcmp(p, pat.data(), element_size_) == 0) {
      return {GuardViolation::Kind::unwritten, e * static_cast<std::int64_t>(element_size_),
              name_ + ": element at offset " + std::to_string(e) + " was never written"};
    }
  }
  return {};
}

GuardViolation GuardedBuffer::check_unchanged() const {
  if (snapshot_.size() != size_) {
    throw std::logic_error(name_ + ": check_unchanged() without snapshot()");
  }
  for (std::size_t i = 0; i < size_; ++i) {
    if (bytes()[i] != snapshot_[i]) {
      const std::int64_t rel = static_cast<std::int64_t>(i) - static_cast<std::int64_t>(front_);
      return {
          GuardViolation::Kind::modified_input, rel,
          name_ + ": input byte " + std::to_string(rel) + " relative to element 0 was modified"};
    }
  }
  return {};
}

}  // namespace sdpa
