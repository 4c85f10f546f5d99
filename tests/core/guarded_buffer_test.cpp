// Tests of guarded buffers: poison, margins, gaps, unwritten elements and modified inputs
// (core/guarded_buffer.hpp).
#include "core/guarded_buffer.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>
#include <utility>

namespace sdpa {
namespace {

using Kind = GuardViolation::Kind;

StridedView make(std::array<std::int64_t, 4> shape, std::array<std::int64_t, 4> stride) {
  StridedView v;
  v.shape = shape;
  v.stride = stride;
  return v;
}

// [1, 2, 3, 4] with rows of 4 elements every 6 (gap of 2), heads every 18 elements.
StridedView gapped_view() { return make({1, 2, 3, 4}, {36, 18, 6, 1}); }

// Writes a value that is not poison (all-zero bytes) into element `offset` of the buffer,
// which may be outside the view (negative or past the extent).
void write_at(GuardedBuffer& g, std::int64_t offset) {
  auto* p =
      static_cast<unsigned char*>(g.data()) + offset * static_cast<std::int64_t>(g.element_size());
  std::memset(p, 0, g.element_size());
}

// Writes every element of the view.
void write_view(GuardedBuffer& g) {
  const auto& v = g.view();
  for (std::int64_t a = 0; a < v.shape[0]; ++a)
    for (std::int64_t b = 0; b < v.shape[1]; ++b)
      for (std::int64_t c = 0; c < v.shape[2]; ++c)
        for (std::int64_t d = 0; d < v.shape[3]; ++d)
          write_at(g, a * v.stride[0] + b * v.stride[1] + c * v.stride[2] + d * v.stride[3]);
}

TEST(GuardedBuffer, PoisonPatterns) {
  EXPECT_EQ(poison_pattern(1), (std::vector<unsigned char>{0xA5}));
  EXPECT_EQ(poison_pattern(2), (std::vector<unsigned char>{0xA5, 0x7F}));
  EXPECT_EQ(poison_pattern(4), (std::vector<unsigned char>{0xA5, 0xA5, 0xA5, 0x7F}));
  EXPECT_EQ(poison_pattern(8),
            (std::vector<unsigned char>{0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xF5, 0x7F}));
  EXPECT_THROW(poison_pattern(3), std::invalid_argument);
  // The float poisons are signalling NaNs (exponent all ones, quiet bit clear, payload != 0).
  std::uint32_t f32;
  std::memcpy(&f32, poison_pattern(4).data(), 4);
  EXPECT_EQ(f32 & 0x7f800000u, 0x7f800000u);
  EXPECT_EQ(f32 & 0x00400000u, 0u);
  std::uint64_t f64;
  std::memcpy(&f64, poison_pattern(8).data(), 8);
  EXPECT_EQ(f64 & 0x7ff0000000000000ull, 0x7ff0000000000000ull);
  EXPECT_EQ(f64 & 0x0008000000000000ull, 0u);
  // 0x7FA5 is a signalling NaN in bf16 (exponent 0xff, quiet bit 6 clear). In binary16 it is
  // a NaN with the quiet bit (9) set and an unusual payload: no 16-bit pattern can be a
  // signalling NaN in both formats, since bf16's exponent field covers binary16's quiet bit.
  EXPECT_EQ(0x7FA5 & 0x7f80, 0x7f80);
  EXPECT_EQ(0x7FA5 & 0x0040, 0);
  EXPECT_EQ(0x7FA5 & 0x7c00, 0x7c00);
  EXPECT_NE(0x7FA5 & 0x03ff, 0);
  EXPECT_NE(0x7FA5, 0x7E00);  // not the canonical NaN binary16 arithmetic produces
}

TEST(GuardedBuffer, FreshBufferIsPoisonedAndReportsFirstUnwrittenElement) {
  GuardedBuffer g("o", 4, gapped_view());
  const auto pat = poison_pattern(4);
  EXPECT_EQ(std::memcmp(g.data(), pat.data(), 4), 0);
  const GuardViolation r = g.check();
  ASSERT_TRUE(r);
  EXPECT_EQ(r.kind, Kind::unwritten);
  EXPECT_EQ(r.byte_offset, 0);
}

TEST(GuardedBuffer, FullWritePassesForEveryElementSize) {
  for (std::size_t es : {1u, 2u, 4u, 8u}) {
    GuardedBuffer g("o", es, gapped_view());
    write_view(g);
    const GuardViolation r = g.check();
    EXPECT_FALSE(r) << es << ": " << r.message;
    EXPECT_EQ(r.kind, Kind::none);
  }
}

TEST(GuardedBuffer, UnwrittenElementIsReportedWithItsOffset) {
  const auto v = gapped_view();
  // Leave out element (0, 1, 2, 3): offset 18 + 12 + 3 = 33.
  for (std::size_t es : {1u, 2u, 4u, 8u}) {
    GuardedBuffer g("out", es, v);
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::int64_t c = 0; c < 3; ++c)
        for (std::int64_t d = 0; d < 4; ++d)
          if (!(b == 1 && c == 2 && d == 3)) write_at(g, b * 18 + c * 6 + d);
    const GuardViolation r = g.check();
    ASSERT_TRUE(r) << es;
    EXPECT_EQ(r.kind, Kind::unwritten);
    EXPECT_EQ(r.byte_offset, 33 * static_cast<std::int64_t>(es));
    EXPECT_NE(r.message.find("out"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("33"), std::string::npos) << r.message;
  }
}

TEST(GuardedBuffer, WritingPoisonCountsAsUnwritten) {
  GuardedBuffer g("o", 2, make({1, 1, 1, 3}, {3, 3, 3, 1}));
  write_view(g);
  std::memcpy(static_cast<unsigned char*>(g.data()) + 2, poison_pattern(2).data(), 2);
  const GuardViolation r = g.check();
  EXPECT_EQ(r.kind, Kind::unwritten);
  EXPECT_EQ(r.byte_offset, 2);
}

TEST(GuardedBuffer, WritePastTheEnd) {
  const auto v = gapped_view();
  const std::int64_t extent = view_extent(v);  // 18 + 12 + 3 + 1 = 34
  ASSERT_EQ(extent, 34);
  for (std::size_t es : {1u, 2u, 4u, 8u}) {
    for (std::int64_t past : {std::int64_t{0}, std::int64_t{5}}) {
      GuardedBuffer g("o", es, v);
      write_view(g);
      write_at(g, extent + past);
      const GuardViolation r = g.check();
      ASSERT_TRUE(r);
      EXPECT_EQ(r.kind, Kind::out_of_bounds);
      EXPECT_EQ(r.byte_offset, (extent + past) * static_cast<std::int64_t>(es));
      EXPECT_NE(r.message.find("after"), std::string::npos) << r.message;
    }
  }
}

TEST(GuardedBuffer, WriteBeforeTheStart) {
  for (std::size_t es : {1u, 2u, 4u, 8u}) {
    GuardedBuffer g("o", es, gapped_view());
    write_view(g);
    write_at(g, -1);
    const GuardViolation r = g.check();
    ASSERT_TRUE(r);
    EXPECT_EQ(r.kind, Kind::out_of_bounds);
    EXPECT_EQ(r.byte_offset, -static_cast<std::int64_t>(es));
    EXPECT_NE(r.message.find("before"), std::string::npos) << r.message;
  }
}

TEST(GuardedBuffer, WriteIntoTheBaseOffsetRegion) {
  GuardedBuffer g("q", 4, gapped_view(), /*base_offset=*/3);
  write_view(g);
  EXPECT_FALSE(g.check());
  write_at(g, -3);  // the first element of the base offset, still in front of element 0
  const GuardViolation r = g.check();
  EXPECT_EQ(r.kind, Kind::out_of_bounds);
  EXPECT_EQ(r.byte_offset, -12);
}

TEST(GuardedBuffer, WriteFarIntoTheMargins) {
  // Default margins are 256 bytes; a stray write at the far end of either margin is seen.
  GuardedBuffer g("o", 4, gapped_view());
  write_view(g);
  write_at(g, -64);
  GuardViolation r = g.check();
  EXPECT_EQ(r.kind, Kind::out_of_bounds);
  EXPECT_EQ(r.byte_offset, -256);

  GuardedBuffer h("o", 4, gapped_view());
  write_view(h);
  write_at(h, 34 + 63);
  r = h.check();
  EXPECT_EQ(r.kind, Kind::out_of_bounds);
  EXPECT_EQ(r.byte_offset, (34 + 63) * 4);
}

TEST(GuardedBuffer, WriteIntoAGapBetweenRows) {
  // Gaps of the view: offsets 4, 5 (after row 0), 10, 11, then 16, 17 (between heads).
  for (std::int64_t gap : {4, 5, 10, 11, 16, 17}) {
    GuardedBuffer g("o", 4, gapped_view());
    write_view(g);
    write_at(g, gap);
    const GuardViolation r = g.check();
    ASSERT_TRUE(r) << gap;
    EXPECT_EQ(r.kind, Kind::out_of_bounds) << gap;
    EXPECT_EQ(r.byte_offset, gap * 4);
    EXPECT_NE(r.message.find("gap"), std::string::npos) << r.message;
  }
}

TEST(GuardedBuffer, OutOfBoundsIsReportedBeforeUnwritten) {
  // A kernel that writes one row shifted by one element both misses an element and writes
  // into a gap; the stray write is the one reported.
  GuardedBuffer g("o", 4, make({1, 1, 2, 4}, {12, 12, 6, 1}));
  for (std::int64_t d = 1; d <= 4; ++d) write_at(g, d);  // row 0 shifted: 1..4, 4 is a gap
  for (std::int64_t d = 0; d < 4; ++d) write_at(g, 6 + d);
  const GuardViolation r = g.check();
  EXPECT_EQ(r.kind, Kind::out_of_bounds);
  EXPECT_EQ(r.byte_offset, 16);
}

TEST(GuardedBuffer, BroadcastViewElementsShareOneSlot) {
  // Stride 0: four logical elements live in one slot; writing it once is a full write.
  GuardedBuffer g("mask", 1, make({1, 4, 1, 3}, {3, 0, 3, 1}));
  EXPECT_EQ(g.check().kind, Kind::unwritten);
  write_view(g);
  EXPECT_FALSE(g.check());
}

TEST(GuardedBuffer, EmptyViewHasOnlyMargins) {
  GuardedBuffer g("o", 4, make({2, 0, 3, 4}, {0, 12, 4, 1}));
  EXPECT_FALSE(g.check());
  write_at(g, 0);  // element 0 does not exist: this is the back margin
  EXPECT_EQ(g.check().kind, Kind::out_of_bounds);
  EXPECT_EQ(g.check().byte_offset, 0);
}

TEST(GuardedBuffer, ModifiedInputAfterSnapshot) {
  for (std::int64_t where : {0, 7, 33, -1, 34, 4}) {  // in the view, before, after, in a gap
    GuardedBuffer g("k", 2, gapped_view());
    write_view(g);  // fill the input with data
    g.snapshot();
    EXPECT_FALSE(g.check_unchanged());
    static_cast<unsigned char*>(g.data())[where * 2 + 1] ^= 0x01;  // flip one bit
    const GuardViolation r = g.check_unchanged();
    ASSERT_TRUE(r) << where;
    EXPECT_EQ(r.kind, Kind::modified_input);
    EXPECT_EQ(r.byte_offset, where * 2 + 1);
    EXPECT_NE(r.message.find("k"), std::string::npos);
  }
}

TEST(GuardedBuffer, RewritingTheSameBytesIsNotAModification) {
  GuardedBuffer g("v", 8, gapped_view());
  write_view(g);
  g.snapshot();
  write_view(g);  // same bytes again
  EXPECT_FALSE(g.check_unchanged());
}

TEST(GuardedBuffer, CheckUnchangedWithoutSnapshotThrows) {
  GuardedBuffer g("v", 4, gapped_view());
  EXPECT_THROW(g.check_unchanged(), std::logic_error);
}

TEST(GuardedBuffer, PoisonRestoresAFreshState) {
  GuardedBuffer g("o", 4, gapped_view());
  write_view(g);
  write_at(g, -1);
  g.poison();
  EXPECT_EQ(g.check().kind, Kind::unwritten);
  write_view(g);
  EXPECT_FALSE(g.check());
}

TEST(GuardedBuffer, BaseOffsetMisalignsData) {
  for (std::size_t es : {1u, 2u, 4u, 8u}) {
    for (std::int64_t off : {0, 1, 3, 7, 16}) {
      GuardedBuffer g("q", es, gapped_view(), off);
      const auto addr = reinterpret_cast<std::uintptr_t>(g.data());
      EXPECT_EQ(addr % 64, (static_cast<std::uintptr_t>(off) * es) % 64) << es << " " << off;
      EXPECT_EQ(addr % es, 0u);  // still aligned to the element
    }
  }
  // Margins are rounded up to 64 bytes, so a small margin still gives a 64-aligned element 0.
  GuardedBuffer g("q", 4, gapped_view(), 0, 10);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(g.data()) % 64, 0u);
  write_view(g);
  write_at(g, -16);  // 64 bytes before element 0: the first byte of the rounded-up margin
  EXPECT_EQ(g.check().byte_offset, -64);
}

TEST(GuardedBuffer, RejectsBadArguments) {
  EXPECT_THROW(GuardedBuffer("o", 3, gapped_view()), std::invalid_argument);
  EXPECT_THROW(GuardedBuffer("o", 4, gapped_view(), -1), std::invalid_argument);
  EXPECT_THROW(GuardedBuffer("o", 4, make({1, 1, 1, 2}, {1, 1, 1, -1})), std::invalid_argument);
}

TEST(GuardedBuffer, MoveKeepsDataValid) {
  GuardedBuffer a("o", 4, gapped_view(), 1);
  write_view(a);
  void* before = a.data();
  GuardedBuffer b(std::move(a));
  EXPECT_EQ(b.data(), before);  // the allocation moved, it was not copied
  EXPECT_EQ(b.element_size(), 4u);
  EXPECT_EQ(b.view().stride, gapped_view().stride);
  EXPECT_FALSE(b.check());
  write_at(b, 4);
  EXPECT_EQ(b.check().kind, Kind::out_of_bounds);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % 64, 4u);

  GuardedBuffer c("other", 2, make({1, 1, 1, 1}, {1, 1, 1, 1}));
  c = std::move(b);
  EXPECT_EQ(c.data(), before);
  EXPECT_EQ(c.element_size(), 4u);
  EXPECT_EQ(c.check().kind, Kind::out_of_bounds);
  EXPECT_EQ(c.check().byte_offset, 16);
  EXPECT_NE(c.check().message.find("o:"), std::string::npos);  // the name moved along
  c.snapshot();
  static_cast<unsigned char*>(c.data())[0] ^= 0x80;
  EXPECT_EQ(c.check_unchanged().kind, Kind::modified_input);
}

// The footprint computed without allocating is what a buffer holds: its region, 64 bytes of
// alignment slack, and one map byte per element offset of the extent.
TEST(GuardedBufferFootprint, MatchesTheBufferItDescribes) {
  struct Shape {
    std::size_t element_size;
    StridedView view;
    std::int64_t base_offset;
    std::size_t margin;
  };
  for (const Shape& s : {Shape{4, gapped_view(), 0, kGuardMarginBytes},
                         Shape{2, gapped_view(), 3, 100},  // margin rounded up to 128
                         Shape{8, make({2, 1, 5, 3}, {15, 15, 3, 1}), 7, 0},
                         Shape{1, make({1, 1, 0, 8}, {8, 8, 8, 1}), 0, 64}}) {  // empty view
    const GuardedBuffer b("t", s.element_size, s.view, s.base_offset, s.margin);
    const GuardedBufferFootprint f =
        guarded_buffer_footprint(s.element_size, s.view, s.base_offset, s.margin);
    // The layout: a margin (rounded up to 64 bytes), the base offset, the extent, a margin.
    const std::uint64_t margin = (s.margin + 63) / 64 * 64;
    const auto front =
        static_cast<std::uint64_t>(static_cast<const unsigned char*>(b.data()) - b.region());
    EXPECT_EQ(front, margin + s.base_offset * s.element_size);
    EXPECT_EQ(f.region, front + view_extent(s.view) * s.element_size + margin);
    EXPECT_EQ(f.region, b.region_size());
    EXPECT_EQ(f.allocation, b.region_size() + 64);
    EXPECT_EQ(f.view_map, static_cast<std::uint64_t>(view_extent(s.view)));
    EXPECT_EQ(f.held(), f.allocation + f.view_map);
  }
}

// Sizes beyond 64 bits saturate instead of wrapping: a view of 2^61 f64 elements (more than
// validate_view() lets a buffer have), and a base offset of 2^62 elements, for which the
// buffer fails as an allocation (std::bad_alloc) before touching memory.
TEST(GuardedBufferFootprint, SaturatesAndTheBufferIsABadAlloc) {
  const StridedView huge = make({1, 1, std::int64_t{1} << 55, 64}, {0, 0, 64, 1});
  const GuardedBufferFootprint f = guarded_buffer_footprint(8, huge);
  EXPECT_EQ(f.region, UINT64_MAX);
  EXPECT_EQ(f.allocation, UINT64_MAX);
  EXPECT_EQ(f.view_map, std::uint64_t{1} << 61);
  EXPECT_EQ(f.held(), UINT64_MAX);
  const std::int64_t far = std::int64_t{1} << 62;
  EXPECT_EQ(guarded_buffer_footprint(8, gapped_view(), far).region, UINT64_MAX);
  EXPECT_THROW(GuardedBuffer("q", 8, gapped_view(), far), std::bad_alloc);
}

}  // namespace
}  // namespace sdpa
