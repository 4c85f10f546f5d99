#include "conformance/engine/case_sampler.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "core/philox.hpp"

namespace sdpa::conformance {
namespace {

// Tables the choices index (entry 0 is "off" / the default and never used).
constexpr std::array<double, 5> kSoftcaps = {0, 1, 5, 20, 50};
constexpr std::array<double, 6> kScales = {0, 0.5, -0.3, 0.001, 2, 0.0625};
constexpr std::array<double, 6> kDropouts = {0, 0.1, 0.25, 0.5, 0.9, 0.999};

// Largest values build_case accepts before the budget (it clamps to these).
constexpr std::int64_t kMaxBatch = 64;
constexpr std::int64_t kMaxHeadsKv = 64;
constexpr std::int64_t kMaxGroup = 16;
constexpr std::int64_t kMaxLen = kSamplerMaxLen;
constexpr std::int64_t kMaxDim = kSamplerMaxDim;
constexpr std::int64_t kMaxGapOffset = 16;

std::int64_t clamp(std::int64_t x, std::int64_t lo, std::int64_t hi) {
  return std::min(std::max(x, lo), hi);
}

// a * b, saturated at INT64_MAX (both operands >= 0).
std::int64_t sat_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return INT64_MAX;
  return r;
}

std::int64_t half_up(std::int64_t x) { return (x + 1) / 2; }

// The shape build_case works on before it becomes a Problem.
struct Shape {
  std::int64_t batch, heads_kv, group, len_q, len_kv, dqk, dv;
  std::int64_t work() const {
    return sat_mul(sat_mul(sat_mul(sat_mul(batch, heads_kv * group), len_q), len_kv),
                   std::max(dqk, dv));
  }
};

// Halves one dimension at a time until the shape fits the budget. A preset keeps its
// character: batch, then heads, then lengths, and its head dimensions only as a last
// resort. A random shape halves its largest of B, Hq, L, S, then the head dimensions.
void fit_budget(Shape& s, std::int64_t budget, bool preset) {
  while (s.work() > budget) {
    const std::int64_t hq = s.heads_kv * s.group;
    const auto halve_heads = [&] {
      if (s.heads_kv > 1) {
        s.heads_kv = half_up(s.heads_kv);
      } else {
        s.group = half_up(s.group);
      }
    };
    const auto halve_longer = [&] {
      if (s.len_kv >= s.len_q) {
        s.len_kv = half_up(s.len_kv);
      } else {
        s.len_q = half_up(s.len_q);
      }
    };
    if (preset) {
      if (s.batch > 1) {
        s.batch = half_up(s.batch);
      } else if (s.heads_kv > 1) {
        s.heads_kv = half_up(s.heads_kv);  // keeps the GQA group
      } else if (s.len_q > 1 || s.len_kv > 1) {
        if (s.len_q == s.len_kv) s.len_q = half_up(s.len_q);  // prefill stays L = S
        halve_longer();
      } else if (s.group > 1) {
        s.group = half_up(s.group);
      } else {
        s.dqk = half_up(s.dqk);
        s.dv = half_up(s.dv);
      }
      continue;
    }
    const std::int64_t largest = std::max({s.batch, hq, s.len_q, s.len_kv});
    if (largest <= 1) {
      s.dqk = half_up(s.dqk);
      s.dv = half_up(s.dv);
    } else if (s.len_kv == largest || s.len_q == largest) {
      halve_longer();
    } else if (hq == largest) {
      halve_heads();
    } else {
      s.batch = half_up(s.batch);
    }
  }
}

// The drawn shape, with the options and a preset applied, fitted to the budget.
Shape make_shape(const CaseChoices& c, const SamplerOptions& o, ModelPreset preset) {
  Shape s;
  s.batch = clamp(c.batch, 1, kMaxBatch);
  s.heads_kv = clamp(c.heads_kv, 1, kMaxHeadsKv);
  s.group = o.gqa ? clamp(c.group, 1, kMaxGroup) : 1;
  s.len_q = clamp(c.len_q, 1, kMaxLen);
  s.len_kv = clamp(c.len_kv, 1, kMaxLen);
  s.dqk = clamp(c.head_dim_qk, 1, kMaxDim);
  s.dv = o.different_v_dim && c.head_dim_v > 0 ? clamp(c.head_dim_v, 1, kMaxDim) : s.dqk;
  switch (preset) {
    case ModelPreset::none:
      break;
    case ModelPreset::llama:
    case ModelPreset::mistral:
      s.heads_kv = 8;
      s.group = o.gqa ? 4 : 1;
      s.dqk = s.dv = 128;
      s.len_kv = s.len_q = std::max(s.len_q, s.len_kv);  // prefill: L = S
      break;
    case ModelPreset::deepseek:
      s.heads_kv = 16;
      s.group = 1;
      s.dqk = 192;
      s.dv = o.different_v_dim ? 128 : 192;
      s.len_kv = s.len_q = std::max(s.len_q, s.len_kv);
      break;
    case ModelPreset::decode:
      s.heads_kv = 8;
      s.group = o.gqa ? 4 : 1;
      s.dqk = s.dv = 128;
      s.len_q = 1;
      s.len_kv = std::max(s.len_kv, 16 * std::min(o.max_len, kMaxLen));  // a long KV cache
      break;
  }
  fit_budget(s, o.max_work, preset != ModelPreset::none);
  return s;
}

std::vector<std::int64_t> lengths(const std::vector<std::int64_t>& raw, std::int64_t batch,
                                  std::int64_t max) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(batch), max);
  for (std::size_t b = 0; b < out.size() && b < raw.size(); ++b) out[b] = clamp(raw[b], 0, max);
  return out;
}

// Window bound: -1 (unbounded) or a count of keys up to S + 1.
std::int64_t window_bound(std::int64_t raw, std::int64_t len_kv) {
  return raw < 0 ? -1 : std::min(raw, len_kv + 1);
}

template <std::size_t N>
double table_entry(const std::array<double, N>& table, int index) {
  if (index <= 0) return 0;
  return table[1 + static_cast<std::size_t>(index - 1) % (N - 1)];
}

// Applies the families (masks, lengths, softcap, ...) to p, whose sizes are final.
void apply_families(Problem& p, const CaseChoices& c, const SamplerOptions& o, ModelPreset preset) {
  int varlen = c.varlen;
  if ((varlen == 1 && !o.varlen_padded) || (varlen == 2 && !o.varlen_packed)) varlen = 0;
  const int mask = o.masks ? ((c.mask % 3) + 3) % 3 : 0;
  if (mask != 0) {
    p.mask = mask == 1 ? MaskKind::boolean : MaskKind::additive;
    p.mask_broadcast = static_cast<std::uint8_t>(c.mask_broadcast & 15);
    if (varlen == 2) varlen = o.varlen_padded ? 1 : 0;  // a mask cannot be packed
  }
  if (varlen != 0) {
    p.seqlens_q = lengths(c.seqlens_q, p.batch, p.len_q);
    p.seqlens_kv = lengths(c.seqlens_kv, p.batch, p.len_kv);
    p.packed = varlen == 2;
  }
  if (o.causal_window) {
    const int causal = preset != ModelPreset::none ? 2 : ((c.causal % 3) + 3) % 3;
    p.causal = causal == 0 ? Causal::none : causal == 1 ? Causal::top_left : Causal::bottom_right;
    if (preset == ModelPreset::mistral) {
      p.window = {true, std::max<std::int64_t>(1, p.len_kv / 3), 0, Align::bottom_right};
    } else if (c.window) {
      p.window = {true, window_bound(c.window_left, p.len_kv),
                  window_bound(c.window_right, p.len_kv),
                  c.window_bottom_right ? Align::bottom_right : Align::top_left};
    }
  }
  if (o.softcap) p.softcap = table_entry(kSoftcaps, c.softcap);
  if (o.custom_scale && c.scale > 0) p.scale = table_entry(kScales, c.scale);
  if (o.dropout && c.dropout > 0) {
    p.dropout_p = table_entry(kDropouts, c.dropout);
    p.dropout_seed = c.dropout_seed;
    p.dropout_offset = c.dropout_offset;
  }
  p.want_lse = o.lse_output && c.lse;
  p.want_weights = o.weights_output && c.weights;
  if (o.layouts) {
    apply_layout(p, c.layout_bshd ? LayoutKind::bshd : LayoutKind::bhsd,
                 clamp(c.gap, 0, kMaxGapOffset), clamp(c.offset, 0, kMaxGapOffset));
  } else {
    apply_layout(p, LayoutKind::bhsd, 0, 0);
  }
  if (o.layouts)
    apply_stride_kind(
        p, static_cast<StrideKind>(((c.stride_kind % kStrideKindCount) + kStrideKindCount) %
                                   kStrideKindCount));
  // The backward usually with the forward's LSE (what a FlashAttention-style backward reads;
  // such a backend declines a backward case without it), sometimes without (what the public
  // ops of frameworks return); gradients are written in the inputs' layouts: a layout that
  // overlaps itself (a zero stride) keeps the case forward-only.
  if (o.backward && c.backward) {
    p.backward = true;
    p.want_lse = o.lse_output && (c.lse || !o.backward_without_lse || !c.backward_without_lse);
    if (!validate(p).empty()) {
      p.backward = false;
      p.want_lse = o.lse_output && c.lse;
    }
    p.bias_grad = o.bias_grad && c.bias_grad && p.backward && p.mask == MaskKind::additive;
  }
}

// A stream of 32-bit words: Philox4x32-10 keyed by the seed, counter (n, "SAMP").
class Draws {
 public:
  explicit Draws(std::uint64_t seed)
      : key_{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)} {}
  std::uint32_t word() {
    if (used_ == 4) {
      block_ = philox4x32_10(
          {static_cast<std::uint32_t>(n_), static_cast<std::uint32_t>(n_ >> 32), 0x53414D50u, 0},
          key_);
      ++n_;
      used_ = 0;
    }
    return block_[used_++];
  }
  std::uint64_t u64() {
    const std::uint64_t lo = word();
    return lo | (std::uint64_t(word()) << 32);
  }
  // Uniform in [0, n) for n >= 1 (multiply-shift: integer arithmetic only).
  std::int64_t below(std::int64_t n) {
    return static_cast<std::int64_t>(
        (static_cast<unsigned __int128>(u64()) * static_cast<std::uint64_t>(n)) >> 64);
  }
  bool chance(int percent) { return below(100) < percent; }
  template <typename T, std::size_t N>
  T pick(const std::array<T, N>& a) {
    return a[static_cast<std::size_t>(below(N))];
  }

 private:
  PhiloxKey key_;
  PhiloxCounter block_{};
  std::uint64_t n_ = 0;
  int used_ = 4;
};

// Lengths: a tile edge a quarter of the time, else log-uniform in [1, max].
std::int64_t draw_len(Draws& d, std::int64_t max) {
  static constexpr std::array<std::int64_t, 23> kEdges = {
      1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 113, 127, 128, 129, 203, 255, 256, 257};
  if (d.chance(25)) return std::min(d.pick(kEdges), max);
  int bits = 0;
  while ((std::int64_t(2) << bits) <= max) ++bits;  // 2^bits <= max < 2^(bits+1)
  const std::int64_t lo = std::int64_t(1) << d.below(bits + 1);
  return std::min(lo + d.below(lo), max);
}

// Head dimensions: the common powers of two, odd sizes, or anything up to max.
std::int64_t draw_dim(Draws& d, std::int64_t max) {
  static constexpr std::array<std::int64_t, 5> kCommon = {8, 16, 32, 64, 128};
  static constexpr std::array<std::int64_t, 12> kOdd = {1,  3,  5,   24,  40,  72,
                                                        80, 96, 100, 160, 192, 256};
  const std::int64_t r = d.below(10);
  if (r < 4) return std::min(d.pick(kCommon), max);
  if (r < 7) return std::min(d.pick(kOdd), max);
  return 1 + d.below(max);
}

std::int64_t draw_seqlen(Draws& d, std::int64_t max) {
  const std::int64_t r = d.below(10);
  if (r < 2) return 0;
  if (r < 5) return max;
  return d.below(max + 1);
}

std::int64_t draw_window_bound(Draws& d, std::int64_t s) {
  const std::array<std::int64_t, 7> kEdges = {-1, 0, 1, s - 2, s - 1, s, d.below(s + 1)};
  return d.pick(kEdges);  // s >= 1: every entry is >= -1
}

}  // namespace

void apply_stride_kind(Problem& p, StrideKind kind) {
  if (kind == StrideKind::head_dim_2) {
    for (TensorLayout* t : {&p.q, &p.k, &p.v, &p.o}) {
      for (auto& s : t->stride) s *= 2;
    }
  } else if (kind == StrideKind::transposed) {
    // Each (b, h) block of K and V holds [D][rows]: row stride 1, head-dim stride = rows.
    const std::int64_t rows = rows_kv(p);
    auto set = [&](TensorLayout& t, std::int64_t dim) {
      const std::int64_t head = rows * dim;
      t.stride = {p.packed ? 0 : p.heads_kv * head, head, 1, rows};
    };
    set(p.k, p.head_dim_qk);
    set(p.v, p.head_dim_v);
  }
}

const char* model_preset_name(ModelPreset p) {
  switch (p) {
    case ModelPreset::none:
      return "none";
    case ModelPreset::llama:
      return "llama";
    case ModelPreset::mistral:
      return "mistral";
    case ModelPreset::deepseek:
      return "deepseek";
    case ModelPreset::decode:
      return "decode";
  }
  return "none";
}

SamplerOptions search_sampler_options() {
  SamplerOptions s;
  s.max_len = 640;
  s.max_work = std::int64_t(1) << 18;
  s.model_shapes = false;
  return s;
}

std::int64_t problem_work(const Problem& p) {
  return sat_mul(sat_mul(sat_mul(sat_mul(p.batch, p.heads_q), p.len_q), p.len_kv),
                 std::max(p.head_dim_qk, p.head_dim_v));
}

// The generators the sampler (and through it the fuzzer's decoder) draws from. v_positive
// is left to the tiers: a generator added here changes every seeded sample, the sampled part
// of certification profiles and the fuzz corpora's cases with it.
std::vector<std::string> sampler_generators(const Problem& p, const SamplerOptions& options) {
  std::vector<std::string> g = {"normal", "uniform", "int", "sparse"};
  if (!options.adversarial_data) return g;
  for (const char* name : {"large_logits", "logits_88", "negative_logits"}) g.emplace_back(name);
  g.emplace_back("v_near_max");
  g.emplace_back("denormals");
  if (p.mask != MaskKind::none) g.emplace_back("neg_inf_blocks");
  if (!p.packed && (!p.seqlens_q.empty() || !p.seqlens_kv.empty())) g.emplace_back("nan_beyond");
  g.emplace_back("nan_q");
  return g;
}

void check_sampler_options(const SamplerOptions& o) {
  if (o.dtypes.empty()) throw std::invalid_argument("sampler option 'dtypes': no element type");
  if (o.max_work < 1) throw std::invalid_argument("sampler option 'max_work': must be >= 1");
  if (o.max_len < 1) throw std::invalid_argument("sampler option 'max_len': must be >= 1");
  if (o.max_head_dim < 1) {
    throw std::invalid_argument("sampler option 'max_head_dim': must be >= 1");
  }
}

Case build_case(const CaseChoices& c, const SamplerOptions& o) {
  check_sampler_options(o);
  const int presets = kModelPresetCount;
  const ModelPreset preset = o.model_shapes && c.preset > 0
                                 ? static_cast<ModelPreset>(1 + (c.preset - 1) % (presets - 1))
                                 : ModelPreset::none;
  const Shape s = make_shape(c, o, preset);
  Case out;
  Problem& p = out.problem;
  p.batch = s.batch;
  p.heads_kv = s.heads_kv;
  p.heads_q = s.heads_kv * s.group;
  p.len_q = s.len_q;
  p.len_kv = s.len_kv;
  p.head_dim_qk = s.dqk;
  p.head_dim_v = s.dv;
  const auto n = static_cast<int>(o.dtypes.size());
  p.dtype = o.dtypes[static_cast<std::size_t>(((c.dtype % n) + n) % n)];
  apply_families(p, c, o, preset);
  const std::vector<std::string> gens = sampler_generators(p, o);
  const auto g = static_cast<std::size_t>(c.generator < 0 ? 0 : c.generator) % gens.size();
  out.data = {gens[g], c.seed};
  if (auto r = validate(p); !r.empty()) {
    throw std::logic_error("case sampler built an invalid problem (" + r +
                           "): " + format_case_id(out));
  }
  return out;
}

CaseChoices draw_choices(std::uint64_t seed, const SamplerOptions& o) {
  check_sampler_options(o);
  Draws d(seed);
  CaseChoices c;
  c.batch = d.chance(50) ? 1 : 1 + d.below(4);
  c.heads_kv = 1 + d.below(4);
  c.group = d.pick(std::array<std::int64_t, 5>{1, 1, 2, 4, 8});
  const std::int64_t max_len = std::min(o.max_len, kMaxLen);
  const std::int64_t max_dim = std::min(o.max_head_dim, kMaxDim);
  c.len_q = d.chance(15) ? 1 : draw_len(d, max_len);  // decode-like L = 1 often
  c.len_kv = draw_len(d, max_len);
  c.head_dim_qk = draw_dim(d, max_dim);
  c.head_dim_v = d.chance(25) ? draw_dim(d, max_dim) : 0;
  c.dtype = static_cast<int>(d.below(static_cast<std::int64_t>(o.dtypes.size())));
  c.preset = d.chance(15) ? 1 + static_cast<int>(d.below(kModelPresetCount - 1)) : 0;
  c.causal = d.chance(35) ? 1 + static_cast<int>(d.below(2)) : 0;
  c.window = d.chance(20);
  // Windows and lengths are drawn against the drawn sizes; build_case clamps them.
  c.window_left = draw_window_bound(d, c.len_kv);
  c.window_right = draw_window_bound(d, c.len_kv);
  c.window_bottom_right = d.chance(50);
  c.mask = d.chance(30) ? 1 + static_cast<int>(d.below(2)) : 0;
  c.mask_broadcast = d.chance(40) ? static_cast<int>(d.below(16)) : 0;
  c.varlen = d.chance(25) ? 1 + static_cast<int>(d.below(2)) : 0;
  for (std::int64_t b = 0; b < c.batch; ++b) {
    c.seqlens_q.push_back(draw_seqlen(d, c.len_q));
    c.seqlens_kv.push_back(draw_seqlen(d, c.len_kv));
  }
  c.softcap = d.chance(15) ? 1 + static_cast<int>(d.below(kSoftcaps.size() - 1)) : 0;
  c.scale = d.chance(10) ? 1 + static_cast<int>(d.below(kScales.size() - 1)) : 0;
  c.dropout = d.chance(15) ? 1 + static_cast<int>(d.below(kDropouts.size() - 1)) : 0;
  c.dropout_seed = d.u64();
  c.dropout_offset = d.chance(50) ? 0 : d.u64();
  c.layout_bshd = d.chance(25);
  c.gap = d.chance(20) ? 1 + d.below(7) : 0;
  c.offset = d.chance(20) ? 1 + d.below(7) : 0;
  c.lse = d.chance(30);
  c.weights = d.chance(15);
  // The data last: half the time a plain generator (the first four), else any that applies.
  c.generator = static_cast<int>(d.chance(50) ? d.below(4) : d.below(1 << 20));
  c.seed = d.u64() % 1000000007u;
  // Drawn after the data so that the earlier choices of a seed stay what they were.
  c.stride_kind = d.chance(10) ? 1 + static_cast<int>(d.below(kStrideKindCount - 1)) : 0;
  c.backward = d.chance(15);              // after the strides, for the same reason
  c.backward_without_lse = d.chance(25);  // last, for the same reason
  c.bias_grad = d.chance(50);             // last again
  return c;
}

Case sample_case(std::uint64_t seed, const SamplerOptions& options) {
  return build_case(draw_choices(seed, options), options);
}

std::uint64_t sample_seed(std::uint64_t run_seed, std::uint64_t i) {
  std::uint64_t x = run_seed * 0x9E3779B97F4A7C15ull + i;
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace sdpa::conformance
