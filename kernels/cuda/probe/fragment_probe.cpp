#include "kernels/cuda/probe/fragment_probe.hpp"

#include <cstdio>
#include <stdexcept>

#include "core/dtype.hpp"
#include "kernels/cuda/emulator/emu_runtime.hpp"
#include "kernels/cuda/probe/fragment_probe_body.hpp"

namespace sdpa::cuda::probe {

namespace {

ProbeCase zeros(std::string name, std::string what, bool bf16, bool layout) {
  ProbeCase c;
  c.name = std::move(name) + (bf16 ? " bf16" : " f16");
  c.what = std::move(what);
  c.bf16 = bf16;
  c.layout = layout;
  c.a.assign(256, 0.0f);
  c.b.assign(256, 0.0f);
  c.c.assign(128, 0.0f);
  return c;
}

// Integers in [-4, 4], [-3, 3] and [-5, 5], different in every element: a fragment element
// read from the wrong place changes the sums, and the sums (|x| < 200) are exact in f32.
ProbeCase layout_case(bool bf16) {
  ProbeCase c =
      zeros("layout", "small integers: exact sums, every rounding gives these bits", bf16, true);
  for (int i = 0; i < 256; ++i) {
    c.a[static_cast<std::size_t>(i)] = static_cast<float>(i * 7 % 9 - 4);
    c.b[static_cast<std::size_t>(i)] = static_cast<float>(i * 5 % 7 - 3);
  }
  for (int i = 0; i < 128; ++i) c.c[static_cast<std::size_t>(i)] = static_cast<float>(i % 11 - 5);
  return c;
}

// Row 0 of A times column 0 of B, into lane 0's accumulator c0 (row 0, column 0).
void put(ProbeCase& c, int k, float a, float b) {
  c.a[static_cast<std::size_t>(k)] = a;
  c.b[static_cast<std::size_t>(k * 16)] = b;
}

}  // namespace

std::vector<ProbeCase> probe_cases() {
  std::vector<ProbeCase> cases;
  for (bool bf16 : {false, true}) cases.push_back(layout_case(bf16));
  for (bool bf16 : {false, true}) {
    // Exactly 1 + 5 * 2^-25. Ideal: 1 + 2^-23. Blocks of 8 with 1 extra bit: 1 (each block's
    // 1 + 2^-24 truncated). One block of 16: 1 + 2^-23.
    ProbeCase order =
        zeros("rounding: block order",
              "1 + 3*2^-25 (k 0, 1) + 2^-24 (k 8): blocks of 8 truncate twice", bf16, false);
    put(order, 0, 1.0f, 1.0f);
    put(order, 1, 3 * 0x1p-13f, 0x1p-12f);
    put(order, 8, 0x1p-12f, 0x1p-12f);
    cases.push_back(order);
    // 1 + 4 * 2^-25 = 1 + 2^-23 exactly: 1 extra alignment bit cuts each 2^-25 to 0.
    ProbeCase bits =
        zeros("rounding: alignment bits",
              "c = 1 plus four products 2^-25: 1 extra bit drops them, 2 keep them", bf16, false);
    bits.c[0] = 1.0f;
    for (int k = 1; k <= 4; ++k) put(bits, k, 0x1p-13f, 0x1p-12f);
    cases.push_back(bits);
    // 1 + 0.75 * 2^-23: to nearest 1 + 2^-23, truncated 1.
    ProbeCase result =
        zeros("rounding: result", "c = 1 plus 0.75*2^-23: truncated or to nearest", bf16, false);
    result.c[0] = 1.0f;
    put(result, 0, 0.75f, 0x1p-23f);
    cases.push_back(result);
  }
  return cases;
}

namespace {

std::vector<std::uint16_t> element_bits(const std::vector<float>& v, bool bf16) {
  std::vector<std::uint16_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    out[i] = bf16 ? sdpa::float_to_bf16(v[i]) : sdpa::float_to_half(v[i]);
  }
  return out;
}

template <class T>
ProbeWords emulate(const ProbeCase& c, const MmaRounding& rounding) {
  const std::vector<std::uint16_t> a = element_bits(c.a, c.bf16), b = element_bits(c.b, c.bf16);
  ProbeWords out(32 * detail::probe::kWordsPerLane, 0);
  emu::EmuRuntime rt(0, rounding);
  rt.launch(detail::probe::FragmentProbeBody<T>{a.data(), b.data(), c.c.data(), out.data()}, 1);
  return out;
}

}  // namespace

ProbeWords run_emulated(const ProbeCase& c, const MmaRounding& rounding) {
  return c.bf16 ? emulate<detail::bf16_t>(c, rounding) : emulate<detail::f16_t>(c, rounding);
}

#if !defined(SDPA_CTS_HAVE_CUDA)
ProbeWords run_on_gpu(const ProbeCase&) {
  throw std::runtime_error(
      "fragment probe: this build has no CUDA (no nvcc at configure time): it runs on the "
      "emulator only");
}
#endif

std::string word_name(int w) {
  static const char* const groups[] = {"ldmatrix A r", "ldmatrix.trans B r", "mma n0-7 c",
                                       "mma n8-15 c"};
  return groups[(w / 4) % 4] + std::to_string(w % 4);
}

std::vector<std::string> differences(const ProbeWords& x, const ProbeWords& y, std::size_t limit) {
  std::vector<std::string> out;
  if (x.size() != y.size()) {
    out.push_back("different sizes: " + std::to_string(x.size()) + " vs " +
                  std::to_string(y.size()) + " words");
    return out;
  }
  for (std::size_t i = 0; i < x.size() && out.size() < limit; ++i) {
    if (x[i] == y[i]) continue;
    char line[96];
    std::snprintf(line, sizeof line, "lane %zu, %s: 0x%08x vs 0x%08x",
                  i / detail::probe::kWordsPerLane,
                  word_name(static_cast<int>(i % detail::probe::kWordsPerLane)).c_str(),
                  static_cast<unsigned>(x[i]), static_cast<unsigned>(y[i]));
    out.emplace_back(line);
  }
  return out;
}

}  // namespace sdpa::cuda::probe
