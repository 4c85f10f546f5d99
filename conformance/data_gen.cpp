#include "conformance/data_gen.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/philox.hpp"

namespace sdpa {
namespace {

enum class TensorId : std::uint32_t { q = 0, k = 1, v = 2, mask = 3 };

using ValueFn = double (*)(const PhiloxCounter& w, const PhiloxCounter& w2);

constexpr double kTwoPow32 = 4294967296.0;

double uniform01(std::uint32_t w) { return w / kTwoPow32; }

// Irwin-Hall sum of four uniforms, scaled to unit variance: a bounded (|x| < 3.47),
// bell-shaped stand-in for a normal deviate that needs no transcendental function.
double approx_normal(const PhiloxCounter& w) {
  const double sum = (static_cast<double>(w[0]) + w[1] + w[2] + w[3]) / kTwoPow32;  // exact
  return (sum - 2.0) * std::sqrt(3.0);
}

double gen_normal(const PhiloxCounter& w, const PhiloxCounter&) { return approx_normal(w); }
double gen_uniform(const PhiloxCounter& w, const PhiloxCounter&) {
  return 2.0 * uniform01(w[0]) - 1.0;
}
double gen_int(const PhiloxCounter& w, const PhiloxCounter&) {
  return static_cast<double>(w[0] % 5u) - 2.0;  // {-2, ..., 2}: products and sums exact
}
double gen_sparse(const PhiloxCounter& w, const PhiloxCounter& w2) {
  return (w2[0] % 5u) == 0 ? approx_normal(w) : 0.0;  // 80% zeros
}

double gen_zeros(const PhiloxCounter&, const PhiloxCounter&) { return 0.0; }

struct Generator {
  const char* name;
  ValueFn value;
};
constexpr Generator kGenerators[] = {
    {"normal", gen_normal},
    {"uniform", gen_uniform},
    {"int", gen_int},
    {"sparse", gen_sparse},
    {"zeros", gen_zeros}};  // all inputs 0: a case that cannot discriminate (MISTRUSTED)

const Generator* find_generator(const std::string& name) {
  for (const auto& g : kGenerators) {
    if (name == g.name) return &g;
  }
  return nullptr;
}

PhiloxCounter draw(std::uint64_t seed, TensorId t, std::uint64_t index, std::uint32_t stream) {
  return philox4x32_10({static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(index >> 32),
                        static_cast<std::uint32_t>(t), stream},
                       {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)});
}

// Calls fn(linear logical index, element offset) for every element of the view.
template <typename Fn>
void for_each_element(const StridedView& v, Fn fn) {
  std::uint64_t linear = 0;
  for (std::int64_t a = 0; a < v.shape[0]; ++a)
    for (std::int64_t b = 0; b < v.shape[1]; ++b)
      for (std::int64_t c = 0; c < v.shape[2]; ++c)
        for (std::int64_t d = 0; d < v.shape[3]; ++d)
          fn(linear++, a * v.stride[0] + b * v.stride[1] + c * v.stride[2] + d * v.stride[3]);
}

GuardedBuffer make_tensor(const char* name, const Problem& p, const StridedView& view,
                          std::int64_t base_offset, TensorId id, const Generator& g,
                          std::uint64_t seed) {
  GuardedBuffer buf(name, dtype_size(p.dtype), view, base_offset);
  for_each_element(view, [&](std::uint64_t linear, std::int64_t off) {
    const double x = g.value(draw(seed, id, linear, 0), draw(seed, id, linear, 1));
    store_from_double(p.dtype, buf.data(), off, x);
  });
  return buf;
}

GuardedBuffer make_mask(const Problem& p, const Generator& g, std::uint64_t seed) {
  const StridedView full = mask_view(p);
  // Allocate only the non-broadcast part: broadcast dimensions have stride 0.
  if (p.mask == MaskKind::boolean) {
    GuardedBuffer buf("mask", 1, full);
    for_each_element(full, [&](std::uint64_t, std::int64_t off) {
      const PhiloxCounter w = draw(seed, TensorId::mask, static_cast<std::uint64_t>(off), 0);
      static_cast<std::uint8_t*>(buf.data())[off] = (w[0] & 3u) != 0;  // attend 3/4 of keys
    });
    return buf;
  }
  GuardedBuffer buf("mask", dtype_size(p.dtype), full);
  for_each_element(full, [&](std::uint64_t, std::int64_t off) {
    const PhiloxCounter w = draw(seed, TensorId::mask, static_cast<std::uint64_t>(off), 0);
    const PhiloxCounter w2 = draw(seed, TensorId::mask, static_cast<std::uint64_t>(off), 1);
    const double x =
        (w2[1] & 7u) == 0 ? -std::numeric_limits<double>::infinity() : 2.0 * g.value(w, w2);
    store_from_double(p.dtype, buf.data(), off, x);
  });
  return buf;
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

reference::Inputs InputBuffers::pointers() const {
  return {q.data(), k.data(), v.data(), mask ? mask->data() : nullptr};
}

InputBuffers make_inputs(const Case& c) {
  const Problem& p = c.problem;
  if (auto r = validate(p); !r.empty()) throw std::invalid_argument("invalid problem: " + r);
  const Generator* g = find_generator(c.data.generator);
  if (!g) {
    std::string known;
    for (const auto& n : data_generator_names()) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument("case ID field 'gen': unknown data generator '" + c.data.generator +
                                "' (known: " + known + ")");
  }
  const std::uint64_t seed = c.data.seed;
  InputBuffers in{make_tensor("q", p, q_view(p), p.q.base_offset, TensorId::q, *g, seed),
                  make_tensor("k", p, k_view(p), p.k.base_offset, TensorId::k, *g, seed),
                  make_tensor("v", p, v_view(p), p.v.base_offset, TensorId::v, *g, seed),
                  std::nullopt};
  if (p.mask != MaskKind::none) in.mask.emplace(make_mask(p, *g, seed));
  in.q.snapshot();
  in.k.snapshot();
  in.v.snapshot();
  if (in.mask) in.mask->snapshot();
  return in;
}

}  // namespace sdpa
