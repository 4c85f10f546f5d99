// Captured golden files (golden/SCHEMA.md, "precision_digits"): results computed by another
// framework in f32 verify against the reference and judge backends with the capture bound
// (conformance/judge/judge.hpp capture_unit), while a capture with a semantic error still fails.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "conformance/engine/data_gen.hpp"
#include "conformance/engine/golden_verify.hpp"
#include "golden/golden_file.hpp"
#include "golden/golden_writer.hpp"
#include "kernels/registry.hpp"

namespace sdpa::golden {

using namespace sdpa::conformance;
namespace {

namespace fs = std::filesystem;

// What the "framework" gets wrong, if anything.
enum class Defect { none, top_left_causal, mask_dropped };

// What a framework returned for one case.
struct CapturedCase {
  Case c;                   // the case
  const InputBuffers* in;   // the inputs it was fed
  std::vector<double> o;    // [B, Hq, L, Dv]
  std::vector<double> lse;  // [B, Hq, L]
};

// A framework computing attention in f32 (dense bhsd layouts): logits, mask, softmax and
// P V in f32, outputs returned as f32, LSE = max + log(sum) in f32.
CapturedCase framework_f32(const Case& c, const InputBuffers& in, Defect defect) {
  const Problem& p = c.problem;
  const std::int64_t B = p.batch, H = p.heads_q, L = p.len_q, S = p.len_kv, Dqk = p.head_dim_qk,
                     Dv = p.head_dim_v, group = p.heads_q / p.heads_kv;
  const float scale = static_cast<float>(effective_scale(p));
  const StridedView mv = p.mask != MaskKind::none ? mask_view(p) : StridedView{};
  CapturedCase out{c, &in, std::vector<double>(B * H * L * Dv), std::vector<double>(B * H * L)};
  std::vector<float> s(static_cast<std::size_t>(S));
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < L; ++i) {
        float m = -INFINITY;
        for (std::int64_t j = 0; j < S; ++j) {
          float dot = 0;
          for (std::int64_t e = 0; e < Dqk; ++e) {
            dot += static_cast<float>(load_as_double(p.dtype, in.q.data(),
                                                     element_offset(p.q, false, b, h, i, e))) *
                   static_cast<float>(load_as_double(
                       p.dtype, in.k.data(), element_offset(p.k, false, b, h / group, j, e)));
          }
          float x = dot * scale;
          bool allowed = true;
          if (p.causal == Causal::bottom_right) {
            allowed = defect == Defect::top_left_causal ? j <= i : j <= i + (S - L);
          }
          if (p.mask != MaskKind::none && defect != Defect::mask_dropped) {
            const std::int64_t off =
                b * mv.stride[0] + h * mv.stride[1] + i * mv.stride[2] + j * mv.stride[3];
            if (p.mask == MaskKind::boolean) {
              allowed = allowed && static_cast<const unsigned char*>(in.mask->data())[off] != 0;
            } else {
              x += static_cast<float>(load_as_double(p.dtype, in.mask->data(), off));
            }
          }
          s[static_cast<std::size_t>(j)] = allowed ? x : -INFINITY;
          m = std::max(m, s[static_cast<std::size_t>(j)]);
        }
        const std::size_t row = static_cast<std::size_t>((b * H + h) * L + i);
        if (m == -INFINITY) {  // no key: O = 0, LSE = -inf (docs/SEMANTICS.md)
          out.lse[row] = -INFINITY;
          continue;
        }
        float z = 0;
        for (float& x : s) {
          x = std::exp(x - m);
          z += x;
        }
        out.lse[row] = static_cast<double>(m + std::log(z));
        for (std::int64_t d = 0; d < Dv; ++d) {
          float acc = 0;
          for (std::int64_t j = 0; j < S; ++j) {
            acc += s[static_cast<std::size_t>(j)] / z *
                   static_cast<float>(load_as_double(
                       p.dtype, in.v.data(), element_offset(p.v, false, b, h / group, j, d)));
          }
          out.o[row * static_cast<std::size_t>(Dv) + static_cast<std::size_t>(d)] = acc;
        }
      }
  return out;
}

// Cases of the kinds ONNX's Attention node tests cover: f32 and f16 inputs, GQA, causal
// with L < S and L > S, boolean and additive masks, different Dv.
const std::vector<std::string>& case_ids() {
  static const std::vector<std::string> ids = {
      "b1.hq2.hkv1.l5.s9.dqk16.dv8.f32.causal=br.lse.seed3.gen=normal",
      "b2.hq4.hkv2.l7.s7.dqk32.f32.mask=add.lse.seed4.gen=normal",
      "b1.hq2.l9.s4.dqk8.f16.causal=br.lse.seed5.gen=normal",
      "b2.hq3.l6.s11.dqk64.dv32.f32.mask=bool.lse.seed6.gen=normal",
      "b1.hq8.hkv2.l16.s24.dqk64.f16.causal=br.lse.seed7.gen=uniform",
      "b2.hq2.l33.s65.dqk128.f32.lse.seed8.gen=normal",
  };
  return ids;
}

class CapturedFile : public ::testing::Test {
 protected:
  // Writes the cases computed by the framework (with `defect`) to a file claiming `digits`.
  std::string write(Defect defect, std::int64_t digits, const std::string& name) {
    const fs::path dir = fs::temp_directory_path() / "sdpa_cts_capture_test";
    fs::create_directories(dir);
    inputs_.clear();
    inputs_.reserve(case_ids().size());
    std::vector<CapturedCase> cases;
    for (const auto& id : case_ids()) {
      const Case c = parse_case_id_or_throw(id);
      inputs_.push_back(make_inputs(c));
      cases.push_back(framework_f32(c, inputs_.back(), defect));
    }
    const std::string path = (dir / name).string();
    std::vector<CaseToWrite> files;
    for (const auto& cc : cases) files.push_back({&cc.c, cc.in, &cc.o, &cc.lse, nullptr});
    write_golden_file(path, {"tests/golden/capture_test.cpp", "1", digits, ""}, files);
    return path;
  }
  // Worst reference agreement c over the file's cases (the `golden verify` criterion).
  static double worst_c(const std::string& path) {
    const GoldenFile f(path);
    double worst = 0;
    for (const auto& id : f.case_ids()) {
      const Agreement a = compare_with_reference(f.load(id), reference::Precision::f64);
      worst = std::max(worst, a.worst());
    }
    return worst;
  }
  std::vector<InputBuffers> inputs_;
};

constexpr double kMaxC = 16;  // `sdpa-cts golden verify`'s default --max-ulps

TEST_F(CapturedFile, F32CaptureOfCorrectResultsVerifies) {
  EXPECT_LE(worst_c(write(Defect::none, 7, "f32.h5")), kMaxC);
}

TEST_F(CapturedFile, TheSameValuesClaimingExactnessFail) {
  // Without the capture bound (precision_digits 50: "exact") the f32 rounding is judged in
  // f64 ulps, millions of them: the bound is what makes a capture verifiable.
  EXPECT_GT(worst_c(write(Defect::none, 50, "f32_as_exact.h5")), 1e4);
}

TEST_F(CapturedFile, SemanticErrorsStillFail) {
  EXPECT_GT(worst_c(write(Defect::top_left_causal, 7, "tl.h5")), 1e3);
  EXPECT_GT(worst_c(write(Defect::mask_dropped, 7, "nomask.h5")), 1e3);
}

TEST_F(CapturedFile, BackendsJudgedAgainstACapture) {
  const std::string good = write(Defect::none, 7, "f32.h5");
  const std::string wrong = write(Defect::top_left_causal, 7, "tl.h5");
  const Device cpu = detect_cpu();
  int judged = 0;
  for (const Backend* b : builtin_backends()) {
    if (b->capabilities().device != DeviceKind::cpu) continue;
    const GoldenFile f(good), w(wrong);
    for (const auto& id : f.case_ids()) {
      GoldenCase g = f.load(id);
      const CaseOutcome o = judge_backend(*b, g, cpu);
      if (o.status == Status::not_supported) continue;
      EXPECT_TRUE(is_pass(o.status))
          << b->name() << " " << id << ": " << status_name(o.status) << " " << o.message;
      ++judged;
      GoldenCase gw = w.load(id);
      const CaseOutcome ow = judge_backend(*b, gw, cpu);
      if (gw.c.problem.causal == Causal::bottom_right &&
          gw.c.problem.len_q != gw.c.problem.len_kv) {
        EXPECT_EQ(ow.status, Status::fail) << b->name() << " " << id << " against a TL capture";
      }
    }
  }
  EXPECT_GE(judged, 12);
}

}  // namespace
}  // namespace sdpa::golden
