// RapidCheck generators of conformance cases. Header-only, so that only test and fuzz
// targets (which link rapidcheck) depend on RapidCheck, not the conformance library.
//
// gen_case(options) draws CaseChoices (conformance/engine/case_sampler.hpp) with RapidCheck
// generators, the shape first and the data seed last, and turns them into a valid case
// with build_case(). Every draw shrinks toward the simplest value: sizes toward 1, every
// family flag toward off, table indices toward the first entry, the generator toward
// "normal" and the seed toward 0. A failing property therefore shrinks toward the smallest
// legal problem, and showValue() prints it as its canonical, paste-able case ID.
#pragma once

#include <rapidcheck.h>

#include <algorithm>
#include <cstdint>
#include <ostream>

#include "conformance/engine/case_sampler.hpp"
#include "core/case_id.hpp"

namespace sdpa {

// How RapidCheck prints a case (found by argument-dependent lookup): its canonical ID.
inline void showValue(const Case& c, std::ostream& os) { os << format_case_id(c); }

namespace conformance {
namespace rc_detail {

// true with probability percent / 100; shrinks to false.
inline rc::Gen<bool> flag(int percent) {
  return [percent](const rc::Random& random, int) {
    rc::Random r(random);
    const bool on = static_cast<int>(r.next() % 100) < percent;
    return rc::shrinkable::shrinkRecur(
        on, [](bool b) { return b ? rc::seq::just(false) : rc::Seq<bool>(); });
  };
}

// 0 with probability (100 - percent) / 100, else a value in [1, n); shrinks toward 0.
inline rc::Gen<int> choice(int percent, int n) {
  return [percent, n](const rc::Random& random, int) {
    rc::Random r(random);
    const bool on = n > 1 && static_cast<int>(r.next() % 100) < percent;
    const int value = on ? 1 + static_cast<int>(r.next() % static_cast<std::uint64_t>(n - 1)) : 0;
    return rc::shrinkable::shrinkRecur(value, [](int x) { return rc::shrink::towards(x, 0); });
  };
}

// A size in [1, max] (size-scaled by RapidCheck); shrinks toward 1.
inline rc::Gen<std::int64_t> dim(std::int64_t max) {
  return rc::gen::inRange<std::int64_t>(1, std::max<std::int64_t>(max, 1) + 1);
}

}  // namespace rc_detail

// Raw choices for build_case(), drawn by RapidCheck (see the file comment).
inline rc::Gen<CaseChoices> gen_case_choices(const SamplerOptions& options) {
  check_sampler_options(options);
  return rc::gen::exec([options] {
    using namespace rc_detail;
    CaseChoices c;
    // The shape.
    c.batch = *dim(4);
    c.heads_kv = *dim(4);
    c.group = *dim(4);
    const std::int64_t max_len = std::min(options.max_len, kSamplerMaxLen);
    const std::int64_t max_dim = std::min(options.max_head_dim, kSamplerMaxDim);
    c.len_q = *dim(max_len);
    c.len_kv = *dim(max_len);
    c.head_dim_qk = *dim(max_dim);
    c.head_dim_v = *choice(25, static_cast<int>(max_dim) + 1);
    c.dtype = *rc::gen::inRange<int>(0, static_cast<int>(options.dtypes.size()));
    c.preset = *choice(10, kModelPresetCount);
    // Families, each off unless drawn on. Every field is drawn whether or not its family is
    // on, so that switching one off while shrinking leaves the draws of the others alone.
    c.causal = *choice(30, 3);
    c.window = *flag(20);
    c.window_left = *rc::gen::inRange<std::int64_t>(-1, c.len_kv + 2);
    c.window_right = *rc::gen::inRange<std::int64_t>(-1, c.len_kv + 2);
    c.window_bottom_right = *flag(50);
    c.mask = *choice(30, 3);
    c.mask_broadcast = *choice(30, 16);
    c.varlen = *choice(25, 3);
    c.seqlens_q = *rc::gen::container<std::vector<std::int64_t>>(
        static_cast<std::size_t>(c.batch), rc::gen::inRange<std::int64_t>(0, c.len_q + 1));
    c.seqlens_kv = *rc::gen::container<std::vector<std::int64_t>>(
        static_cast<std::size_t>(c.batch), rc::gen::inRange<std::int64_t>(0, c.len_kv + 1));
    c.softcap = *choice(15, 5);
    c.scale = *choice(10, 6);
    c.dropout = *choice(15, 6);
    c.dropout_seed = *rc::gen::arbitrary<std::uint64_t>();
    c.dropout_offset = *rc::gen::arbitrary<std::uint64_t>();
    c.layout_bshd = *flag(20);
    c.gap = *choice(20, 8);
    c.offset = *choice(20, 8);
    c.stride_kind = *choice(10, kStrideKindCount);
    c.lse = *flag(30);
    c.weights = *flag(15);
    // The data: the generator (an index into sampler_generators, reduced there) and the
    // seed, drawn last.
    c.generator = *choice(50, 64);
    c.seed = *rc::gen::arbitrary<std::uint64_t>();
    c.backward = *flag(15);
    return c;
  });
}

// Valid cases (see the file comment).
inline rc::Gen<Case> gen_case(const SamplerOptions& options = {}) {
  return rc::gen::map(gen_case_choices(options),
                      [options](const CaseChoices& c) { return build_case(c, options); });
}

}  // namespace conformance
}  // namespace sdpa
