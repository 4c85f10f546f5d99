#include "conformance/engine/data_gen.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

#include "core/philox.hpp"
#include "reference/head_inputs.hpp"

namespace sdpa::conformance {
namespace {

enum class TensorId : std::uint32_t { q = 0, k = 1, v = 2, mask = 3, d_out = 4 };

// The generators (docs/CASE_ID.md, "Data generators").
enum class Kind {
  normal,           // every tensor approx. N(0, 1)
  uniform,          // every tensor uniform in [-1, 1)
  integer,          // every tensor in {-2, ..., 2}
  sparse,           // 80% zeros, the rest approx. N(0, 1)
  zeros,            // all inputs 0: a case that cannot discriminate (MISTRUSTED)
  large_logits,     // logits |s| ~ 1e4 (one-hot softmax)
  logits_88,        // each row's logits all near +88 or all near -88
  negative_logits,  // every logit ~ -1e4 .. -5e4: LSE far below -88
  v_near_max,       // |V| in [max/3, 2 max/3) (1 - p) of the element type, random signs
  neg_inf_blocks,   // runs of masked keys in the mask tensor, fully masked rows
  nan_beyond,       // NaN in every input element beyond the valid lengths
  denormals,        // |V| in [1/2, 3/4) of the smallest normal, random signs; small Q and K
  nan_q,            // normal, and one element of Q NaN, in a row that attends a key
  v_positive,       // normal Q and K, V in [1, 2): sums over keys without cancellation
};

struct Generator {
  const char* name;
  Kind kind;
};
constexpr Generator kGenerators[] = {
    {"normal", Kind::normal},         {"uniform", Kind::uniform},
    {"int", Kind::integer},           {"sparse", Kind::sparse},
    {"zeros", Kind::zeros},           {"large_logits", Kind::large_logits},
    {"logits_88", Kind::logits_88},   {"negative_logits", Kind::negative_logits},
    {"v_near_max", Kind::v_near_max}, {"neg_inf_blocks", Kind::neg_inf_blocks},
    {"nan_beyond", Kind::nan_beyond}, {"denormals", Kind::denormals},
    {"nan_q", Kind::nan_q},           {"v_positive", Kind::v_positive}};

const Generator* find_generator(const std::string& name) {
  for (const auto& g : kGenerators) {
    if (name == g.name) return &g;
  }
  return nullptr;
}

constexpr double kTwoPow32 = 4294967296.0;
constexpr double kInf = std::numeric_limits<double>::infinity();

PhiloxCounter draw(std::uint64_t seed, TensorId t, std::uint64_t index, std::uint32_t stream) {
  return philox4x32_10({static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(index >> 32),
                        static_cast<std::uint32_t>(t), stream},
                       {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)});
}

double uniform01(std::uint32_t w) { return w / kTwoPow32; }

// [0, 1) with 53 random bits (exact).
double uniform53(const PhiloxCounter& w) {
  return ((w[0] >> 5) * 67108864.0 + (w[1] >> 6)) / 9007199254740992.0;
}

// Irwin-Hall sum of four uniforms, scaled to unit variance: a bounded (|x| < 3.47),
// bell-shaped stand-in for a normal deviate that needs no transcendental function.
double approx_normal(const PhiloxCounter& w) {
  const double sum = (static_cast<double>(w[0]) + w[1] + w[2] + w[3]) / kTwoPow32;  // exact
  return (sum - 2.0) * std::sqrt(3.0);
}

// The plain distributions; w2 is an independent second draw for the same element.
double plain_value(Kind kind, const PhiloxCounter& w, const PhiloxCounter& w2) {
  switch (kind) {
    case Kind::uniform:
      return 2.0 * uniform01(w[0]) - 1.0;
    case Kind::integer:
      return static_cast<double>(w[0] % 5u) - 2.0;  // {-2, ..., 2}: products and sums exact
    case Kind::sparse:
      return (w2[0] % 5u) == 0 ? approx_normal(w) : 0.0;  // 80% zeros
    case Kind::zeros:
      return 0.0;
    default:
      return approx_normal(w);
  }
}

double min_normal(DType t) {
  switch (t) {
    case DType::f64:
      return 0x1p-1022;
    case DType::f16:
      return 0x1p-14;
    default:
      return 0x1p-126;  // f32 and bf16
  }
}

// Per-case constants of a generator, derived from the problem with +-*/ and sqrt only
// (correctly rounded in IEEE 754, so the same on every machine).
struct Params {
  Kind kind = Kind::normal;
  double qk_amp = 1;       // amplitude of Q and K (logit generators)
  double k_sign = 1;       // sign of K: the sign of the scale, so that scale * q.k has Q's sign
  double v_amp = 1;        // amplitude of V (v_near_max, denormals)
  std::uint64_t seed = 0;  // data seed
};

// The amplitude a of Q and K for logits of magnitude `target` when
// scale * sum_d (a x_d)(a y_d) has expected magnitude target / a^2 = `per_unit`.
double amplitude(double target, double per_unit, DType t) {
  const double cap = std::min(0x1p20, dtype_max(t) / 8);  // Q, K and q.k stay finite
  if (!(per_unit > 0)) return cap;
  return std::min(std::sqrt(target / per_unit), cap);
}

Params make_params(const Problem& p, Kind kind, std::uint64_t seed) {
  Params prm;
  prm.kind = kind;
  prm.seed = seed;
  double scale = std::fabs(effective_scale(p));
  if (scale == 0) scale = 1;  // logits are 0 whatever the data; any amplitude will do
  const double d = static_cast<double>(std::max<std::int64_t>(p.head_dim_qk, 1));
  prm.k_sign = effective_scale(p) < 0 ? -1 : 1;
  switch (kind) {
    case Kind::large_logits:  // q.k of unit-variance entries has standard deviation sqrt(D)
      prm.qk_amp = amplitude(1e4, scale * std::sqrt(d), p.dtype);
      break;
    case Kind::logits_88:  // entries in [1, 2): E[sum_d x_d y_d] = 2.25 D
      prm.qk_amp = amplitude(88, scale * 2.25 * d, p.dtype);
      break;
    case Kind::negative_logits:
      prm.qk_amp = amplitude(3e4, scale * 2.25 * d, p.dtype);
      break;
    case Kind::v_near_max:  // times (1 - p): the exact output stays below the maximum
      prm.v_amp = dtype_max(p.dtype) / 3 * (1 - p.dropout_p);
      break;
    case Kind::denormals:
      prm.v_amp = min_normal(p.dtype);
      break;
    default:
      break;
  }
  return prm;
}

// Value of element `linear` (logical row-major index) of Q, K or V; `row` is its row's
// logical index (linear / D), for per-row signs.
double element_value(const Params& prm, TensorId t, std::uint64_t linear, std::uint64_t row) {
  const PhiloxCounter w = draw(prm.seed, t, linear, 0);
  const PhiloxCounter w2 = draw(prm.seed, t, linear, 1);
  switch (prm.kind) {
    case Kind::large_logits:
      return t == TensorId::v ? approx_normal(w) : prm.qk_amp * approx_normal(w);
    case Kind::logits_88:
    case Kind::negative_logits: {
      if (t == TensorId::v) return approx_normal(w);
      const double mag = prm.qk_amp * (1.0 + uniform53(w));
      if (t == TensorId::k) return prm.k_sign * mag;
      if (prm.kind == Kind::negative_logits) return -mag;
      const PhiloxCounter r = draw(prm.seed, t, row, 2);  // one sign per query row
      return (r[0] & 1u) ? -mag : mag;
    }
    case Kind::v_near_max:
      if (t != TensorId::v) return approx_normal(w);
      return ((w2[0] & 1u) ? -1.0 : 1.0) * prm.v_amp * (1.0 + uniform53(w));
    case Kind::denormals:  // |V| in [1/2, 3/4) of the smallest normal; small logits
      if (t != TensorId::v) return 0x1p-6 * approx_normal(w);
      return ((w2[0] & 1u) ? -1.0 : 1.0) * prm.v_amp * (0.5 + 0.25 * uniform53(w));
    case Kind::v_positive:  // every product P_j V_j of a row has the same sign
      return t == TensorId::v ? 1.0 + uniform53(w) : approx_normal(w);
    default:
      return plain_value(prm.kind, w, w2);
  }
}

// Calls fn(b, h, row, col, linear logical index, element offset) for every element.
template <typename Fn>
void for_each_element(const StridedView& v, Fn fn) {
  std::uint64_t linear = 0;
  for (std::int64_t a = 0; a < v.shape[0]; ++a)
    for (std::int64_t b = 0; b < v.shape[1]; ++b)
      for (std::int64_t c = 0; c < v.shape[2]; ++c)
        for (std::int64_t d = 0; d < v.shape[3]; ++d)
          fn(a, b, c, d, linear++,
             a * v.stride[0] + b * v.stride[1] + c * v.stride[2] + d * v.stride[3]);
}

GuardedBuffer make_tensor(const char* name, const Problem& p, const StridedView& view,
                          std::int64_t base_offset, TensorId id, const Params& prm) {
  GuardedBuffer buf(name, dtype_size(p.dtype), view, base_offset);
  const auto row_len = static_cast<std::uint64_t>(std::max<std::int64_t>(view.shape[3], 1));
  for_each_element(view, [&](auto, auto, auto, auto, std::uint64_t linear, std::int64_t off) {
    store_from_double(p.dtype, buf.data(), off, element_value(prm, id, linear, linear / row_len));
  });
  return buf;
}

// neg_inf_blocks: is key j of the mask row starting at storage offset row_off masked?
// A row is fully masked with probability 1/8; else its keys form blocks of a per-row size
// in [1, max(1, S/4)], each masked with probability 1/2. Aliased (broadcast) elements share
// row_off and j, so they get the same answer.
bool in_masked_block(std::uint64_t seed, std::int64_t row_off, std::int64_t j, std::int64_t s) {
  const PhiloxCounter r = draw(seed, TensorId::mask, static_cast<std::uint64_t>(row_off), 2);
  if ((r[0] & 7u) == 0) return true;
  const std::int64_t block =
      1 + static_cast<std::int64_t>(r[1] %
                                    static_cast<std::uint32_t>(std::max<std::int64_t>(1, s / 4)));
  const PhiloxCounter b = draw(seed, TensorId::mask, static_cast<std::uint64_t>(row_off),
                               3 + static_cast<std::uint32_t>(j / block));
  return (b[0] & 1u) != 0;
}

GuardedBuffer make_mask(const Problem& p, const Params& prm) {
  const StridedView full = mask_view(p);
  const bool blocks = prm.kind == Kind::neg_inf_blocks;
  const auto masked = [&](std::int64_t j, std::int64_t off) {
    const std::int64_t j_stored = full.stride[3] == 0 ? 0 : j;
    return in_masked_block(prm.seed, off - j * full.stride[3], j_stored, p.len_kv);
  };
  // Allocate only the non-broadcast part: broadcast dimensions have stride 0.
  if (p.mask == MaskKind::boolean) {
    GuardedBuffer buf("mask", 1, full);
    for_each_element(full, [&](auto, auto, auto, std::int64_t j, auto, std::int64_t off) {
      const PhiloxCounter w = draw(prm.seed, TensorId::mask, static_cast<std::uint64_t>(off), 0);
      const bool attend = blocks ? !masked(j, off) : (w[0] & 3u) != 0;  // attend 3/4 of keys
      static_cast<std::uint8_t*>(buf.data())[off] = attend;
    });
    return buf;
  }
  GuardedBuffer buf("mask", dtype_size(p.dtype), full);
  const Kind base = prm.kind > Kind::zeros ? Kind::normal : prm.kind;  // adversarial: normal
  for_each_element(full, [&](auto, auto, auto, std::int64_t j, auto, std::int64_t off) {
    const PhiloxCounter w = draw(prm.seed, TensorId::mask, static_cast<std::uint64_t>(off), 0);
    const PhiloxCounter w2 = draw(prm.seed, TensorId::mask, static_cast<std::uint64_t>(off), 1);
    const bool neg_inf = blocks ? masked(j, off) : (w2[1] & 7u) == 0;
    // Denormals keep the mask's finite entries small too (P near uniform on the keys).
    const double amp = prm.kind == Kind::denormals ? 0x1p-6 : 2.0;
    const double x = neg_inf ? -kInf : amp * plain_value(base, w, w2);
    store_from_double(p.dtype, buf.data(), off, x);
  });
  return buf;
}

// nan_beyond: NaN into every element of `buf` that no valid element uses (a Q row
// i >= L_b, a K/V row j >= S_b, a mask entry with i >= L_b or j >= S_b). An element aliased
// (stride 0) with a valid one keeps its value.
template <typename Valid>
void plant_nan_beyond(GuardedBuffer& buf, DType t, Valid valid) {
  const StridedView& v = buf.view();
  std::vector<std::uint8_t> used(static_cast<std::size_t>(view_extent(v)), 0);
  for_each_element(v, [&](auto b, auto h, auto r, auto d, auto, std::int64_t off) {
    if (valid(b, h, r, d)) used[static_cast<std::size_t>(off)] = 1;
  });
  for_each_element(v, [&](auto, auto, auto, auto, auto, std::int64_t off) {
    if (!used[static_cast<std::size_t>(off)]) {
      store_from_double(t, buf.data(), off, std::numeric_limits<double>::quiet_NaN());
    }
  });
}

void plant_nan_beyond(const Problem& p, InputBuffers& in) {
  if (p.packed) return;  // packed rows hold valid rows only: there is nothing beyond
  const auto q_valid = [&](std::int64_t b, auto, std::int64_t i, auto) {
    return i < seqlen_q(p, b);
  };
  const auto kv_valid = [&](std::int64_t b, auto, std::int64_t j, auto) {
    return j < seqlen_kv(p, b);
  };
  plant_nan_beyond(in.q, p.dtype, q_valid);
  plant_nan_beyond(in.k, p.dtype, kv_valid);
  plant_nan_beyond(in.v, p.dtype, kv_valid);
  if (in.mask && p.mask == MaskKind::additive) {
    plant_nan_beyond(*in.mask, p.dtype, [&](std::int64_t b, auto, std::int64_t i, std::int64_t j) {
      return i < seqlen_q(p, b) && j < seqlen_kv(p, b);
    });
  }
}

// nan_q: NaN into one stored element of Q, drawn by the seed among those whose every reader
// (valid row (b, h, i); several with zero strides) attends at least one key through a finite
// bias. Those rows' O and LSE must then be NaN in every backend (SEMANTICS.md, "Non-finite
// inputs"), whatever it does at masked keys. Nothing is planted when no element qualifies
// (every row without an attended key).
void plant_nan_q(const Problem& p, InputBuffers& in, std::uint64_t seed) {
  const auto cu = cu_seqlens_q(p);
  const reference::Inputs ptrs = in.pointers();
  std::map<std::int64_t, bool> all_attend;  // stored offset -> every reader attends a key
  for (std::int64_t b = 0; b < p.batch; ++b) {
    for (std::int64_t h = 0; h < p.heads_q; ++h) {
      const reference::HeadInputs hd = reference::gather_head(p, ptrs, b, h);
      for (std::int64_t i = 0; i < hd.rows_q; ++i) {
        bool attends = false;
        for (std::int64_t j = 0; j < hd.rows_kv && !attends; ++j) {
          const std::size_t x = static_cast<std::size_t>(i * hd.rows_kv + j);
          attends = hd.allowed[x] && (hd.bias.empty() || hd.bias[x] != -kInf);
        }
        const std::int64_t row = p.packed ? cu[static_cast<std::size_t>(b)] + i : i;
        for (std::int64_t e = 0; e < p.head_dim_qk; ++e) {
          const std::int64_t off = element_offset(p.q, p.packed, b, h, row, e);
          const auto [it, fresh] = all_attend.emplace(off, attends);
          if (!fresh) it->second = it->second && attends;
        }
      }
    }
  }
  std::vector<std::int64_t> candidates;  // in increasing offset order
  for (const auto& [off, ok] : all_attend) {
    if (ok) candidates.push_back(off);
  }
  if (candidates.empty()) return;
  const PhiloxCounter w = draw(seed, TensorId::q, 0, 3);
  const std::int64_t off = candidates[w[0] % candidates.size()];
  store_from_double(p.dtype, in.q.data(), off, std::numeric_limits<double>::quiet_NaN());
}

}  // namespace

const std::vector<std::string>& data_generator_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& g : kGenerators) n.emplace_back(g.name);
    return n;
  }();
  return names;
}

void require_known_generator(const std::string& name) {
  if (find_generator(name)) return;
  std::string known;
  for (const auto& n : data_generator_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("case ID field 'gen': unknown data generator '" + name +
                              "' (known: " + known + ")");
}

InputBuffers make_inputs(const Case& c) {
  const Problem& p = c.problem;
  if (auto r = validate(p); !r.empty()) throw std::invalid_argument("invalid problem: " + r);
  require_known_generator(c.data.generator);
  const Generator* g = find_generator(c.data.generator);
  const Params prm = make_params(p, g->kind, c.data.seed);
  InputBuffers in{make_tensor("q", p, q_view(p), p.q.base_offset, TensorId::q, prm),
                  make_tensor("k", p, k_view(p), p.k.base_offset, TensorId::k, prm),
                  make_tensor("v", p, v_view(p), p.v.base_offset, TensorId::v, prm), std::nullopt,
                  std::nullopt};
  if (p.mask != MaskKind::none) in.mask.emplace(make_mask(p, prm));
  if (g->kind == Kind::nan_beyond) plant_nan_beyond(p, in);
  if (g->kind == Kind::nan_q) plant_nan_q(p, in, c.data.seed);
  if (p.backward) {
    // dO: approx. N(0, 1) for every generator (the adversarial data is in Q, K, V and the
    // mask); its own Philox stream, so a case's forward inputs do not change with `bwd`.
    GuardedBuffer d_out("d_out", dtype_size(p.dtype), o_view(p), p.o.base_offset);
    for_each_element(
        o_view(p), [&](auto, auto, auto, auto, std::uint64_t linear, std::int64_t off) {
          store_from_double(p.dtype, d_out.data(), off,
                            approx_normal(draw(c.data.seed, TensorId::d_out, linear, 0)));
        });
    in.d_out.emplace(std::move(d_out));
  }
  in.snapshot();
  return in;
}

}  // namespace sdpa::conformance
