// cpu.mem_efficient's decode kernels (kernels/cpu/vec_kernels.hpp dot_keys and acc_values)
// on every SIMD target this CPU has: the bits of a logit or of an output column must not
// depend on how the kernel groups keys (dot_keys runs several keys at once, then one at a
// time for the rest) or columns (acc_values' bf16 path holds even and odd columns apart),
// nor on the prefetch of the caller's next rows. Each result is compared bitwise with the
// same kernel run on that key or that column alone, and with a plain scalar loop in the
// documented order within a tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "core/dtype.hpp"
#include "kernels/cpu/vec_kernels.hpp"

namespace sdpa::cpu {
namespace {

std::uint32_t bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

// Rows of n elements of type t with unit stride, and their exact f32 values.
struct Rows {
  DType t;
  std::int64_t n, stride;
  std::vector<unsigned char> raw;
  std::vector<float> f;
  Rows(DType type, std::int64_t rows, std::int64_t n_, std::int64_t gap, std::mt19937& rng)
      : t(type), n(n_), stride(n_ + gap) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    raw.resize(static_cast<std::size_t>(rows * stride) * dtype_size(t) + 64);
    f.assign(static_cast<std::size_t>(rows * stride), 0.0f);
    for (std::int64_t i = 0; i < rows * stride; ++i) {
      const float x = nd(rng);
      if (t == DType::f32) {
        std::memcpy(raw.data() + i * 4, &x, 4);
        f[i] = x;
      } else {
        const std::uint16_t h = t == DType::f16 ? float_to_half(x) : float_to_bf16(x);
        std::memcpy(raw.data() + i * 2, &h, 2);
        f[i] = t == DType::f16 ? half_to_float(h) : bf16_to_float(h);
      }
    }
  }
  const void* row(std::int64_t j) const {
    return raw.data() + j * stride * static_cast<std::int64_t>(dtype_size(t));
  }
};

std::vector<IsaTarget> targets() { return available_isa_targets(detect_cpu().cpu); }

class DecodeKernels : public testing::TestWithParam<IsaTarget> {};

// Each logit equals the kernel's logit of that key alone (n = 1), for every row count,
// head dim and key count around the grouping sizes, with and without a prefetch stream.
TEST_P(DecodeKernels, DotKeysBitsDoNotDependOnKeyGrouping) {
  const vk::Table& t = vk::table(GetParam());
  std::mt19937 rng(7);
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    for (std::int64_t d : {1, 15, 16, 17, 31, 32, 33, 48, 64, 100, 128, 130}) {
      const std::int64_t ldq = (d + 15) / 16 * 16;
      const std::int64_t n = 21;
      const Rows k(dt, n, d, 3, rng);
      const Rows v(dt, n, 64, 0, rng);  // only prefetched
      for (std::int64_t m = 1; m <= 8; ++m) {
        std::vector<float> q(static_cast<std::size_t>(m * ldq), 0.0f);
        std::normal_distribution<float> nd(0.0f, 1.0f);
        for (std::int64_t r = 0; r < m; ++r)
          for (std::int64_t e = 0; e < d; ++e) q[r * ldq + e] = nd(rng);
        for (std::int64_t keys : {1, 2, 3, 4, 7, 8, 9, 16, 17, 21}) {
          const std::int64_t lds = 32;
          std::vector<float> s(static_cast<std::size_t>(m * lds), -1.0f);
          const vk::Prefetch pf{v.row(0), v.stride * 2, 128, keys};
          t.dot_keys(dt, q.data(), ldq, m, k.row(0), k.stride, keys, d, s.data(), lds,
                     keys % 2 ? pf : vk::Prefetch{});
          for (std::int64_t j = 0; j < keys; ++j) {
            std::vector<float> one(static_cast<std::size_t>(m), -1.0f);
            t.dot_keys(dt, q.data(), ldq, m, k.row(j), k.stride, 1, d, one.data(), 1, {});
            for (std::int64_t r = 0; r < m; ++r) {
              ASSERT_EQ(bits(s[r * lds + j]), bits(one[r]))
                  << t.name << " " << dtype_name(dt) << " d=" << d << " m=" << m << " keys=" << keys
                  << " key " << j << " row " << r;
              double ref = 0;
              for (std::int64_t e = 0; e < d; ++e)
                ref += static_cast<double>(q[r * ldq + e]) * k.f[j * k.stride + e];
              ASSERT_NEAR(s[r * lds + j], ref, 1e-5 * (1 + std::fabs(ref)) * std::sqrt(d));
            }
          }
        }
      }
    }
  }
}

// Every output column equals the kernel's result for that column alone (dv = 1, which never
// takes the grouped or even/odd paths), for row counts 1 to 8 and head dims around 16 and 32.
TEST_P(DecodeKernels, AccValuesBitsDoNotDependOnColumnGrouping) {
  const vk::Table& t = vk::table(GetParam());
  std::mt19937 rng(11);
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    for (std::int64_t dv : {1, 16, 31, 32, 33, 64, 96, 100, 128, 130, 160}) {
      const std::int64_t n = 37;
      const Rows v(dt, n, dv, 5, rng);
      const Rows knext(dt, n, 64, 0, rng);  // only prefetched
      const std::int64_t ldacc = (dv + 31) / 32 * 32;
      for (std::int64_t m = 1; m <= 8; ++m) {
        std::vector<float> p(static_cast<std::size_t>(m * n));
        std::uniform_real_distribution<float> ud(0.0f, 1.0f);
        for (float& x : p) x = ud(rng);
        std::vector<float> acc(static_cast<std::size_t>(m * ldacc));
        std::normal_distribution<float> nd(0.0f, 1.0f);
        for (float& x : acc) x = nd(rng);
        const std::vector<float> acc0 = acc;
        t.acc_values(dt, p.data(), n, m, v.row(0), v.stride, n, dv, acc.data(), ldacc,
                     {knext.row(0), 128, 128, n});
        for (std::int64_t e = 0; e < dv; ++e) {
          // Column e alone: the values at e, as a one-column V (stride of a row).
          std::vector<float> one(static_cast<std::size_t>(m * 32));
          for (std::int64_t r = 0; r < m; ++r) one[r * 32] = acc0[r * ldacc + e];
          const auto* col = static_cast<const unsigned char*>(v.row(0)) +
                            e * static_cast<std::int64_t>(dtype_size(dt));
          t.acc_values(dt, p.data(), n, m, col, v.stride, n, 1, one.data(), 32, {});
          for (std::int64_t r = 0; r < m; ++r) {
            ASSERT_EQ(bits(acc[r * ldacc + e]), bits(one[r * 32]))
                << t.name << " " << dtype_name(dt) << " dv=" << dv << " m=" << m << " column " << e
                << " row " << r;
            double ref = acc0[r * ldacc + e];
            for (std::int64_t j = 0; j < n; ++j)
              ref += static_cast<double>(p[r * n + j]) * v.f[j * v.stride + e];
            ASSERT_NEAR(acc[r * ldacc + e], ref, 1e-5 * (1 + std::fabs(ref)) * n);
          }
        }
        // Columns past dv (up to ldacc) are not written.
        for (std::int64_t r = 0; r < m; ++r)
          for (std::int64_t e = dv; e < ldacc; ++e)
            ASSERT_EQ(bits(acc[r * ldacc + e]), bits(acc0[r * ldacc + e])) << "column " << e;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, DecodeKernels, testing::ValuesIn(targets()),
                         [](const testing::TestParamInfo<IsaTarget>& info) {
                           return std::string(isa_target_name(info.param));
                         });

}  // namespace
}  // namespace sdpa::cpu
