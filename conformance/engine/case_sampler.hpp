// The problem sampler: random conformance cases, shared by the property tests, the
// `sdpa-cts run --sample N` command and the fuzzer.
//
// Sampling has two stages so that RapidCheck (conformance/engine/rc_case_gen.hpp) and the seeded
// sampler produce cases the same way:
//   1. CaseChoices: raw draws, one field per decision, each "smaller is simpler" (0 / false
//      switches a feature off, sizes shrink toward 1);
//   2. build_case(): a pure function that turns any CaseChoices into a case that passes
//      validate(): it applies the options (a family switched off is off whatever was
//      drawn), a model-shape preset, the work budget, and clamps every dependent value
//      (lengths, windows) to the final sizes.
// sample_case(seed, options) draws the choices from Philox4x32-10 with integer arithmetic
// only, so the same seed and options give the same case ID on every machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/case_id.hpp"

namespace sdpa::conformance {

// Real-model shape presets (SamplerOptions::model_shapes), scaled down to the work budget:
// the head dimensions are kept as long as the budget allows, heads and lengths shrink first.
enum class ModelPreset : std::uint8_t {
  none,      // a random shape
  llama,     // Llama GQA: Hq 32, Hkv 8, d 128, causal
  mistral,   // Mistral: Hq 32, Hkv 8, d 128, causal with a sliding window
  deepseek,  // DeepSeek MLA: Dqk 192, Dv 128, Hq = Hkv, causal
  decode,    // decode: L = 1 against a long KV cache, GQA 32/8, d 128
};
// Number of ModelPreset values (none included).
inline constexpr int kModelPresetCount = 5;
// Lower-case name of a preset ("llama", ...); "none" for ModelPreset::none.
const char* model_preset_name(ModelPreset p);

// Upper limits of the sampler's sizes: larger options and choices are clamped to these.
inline constexpr std::int64_t kSamplerMaxLen = std::int64_t(1) << 20;  // L and S
inline constexpr std::int64_t kSamplerMaxDim = 512;                    // Dqk and Dv

// What the sampler may draw. Every family is on by default; switch one off to keep it out.
struct SamplerOptions {
  // Element types to draw from.
  std::vector<DType> dtypes = {DType::f32, DType::f16, DType::bf16, DType::f64};
  // Budget: every case has B*Hq*L*S*max(Dqk, Dv) at most this.
  std::int64_t max_work = std::int64_t(1) << 21;
  // Largest L and S drawn, before the budget (at most kSamplerMaxLen).
  std::int64_t max_len = 300;
  // Largest Dqk and Dv drawn (at most kSamplerMaxDim; presets may exceed it).
  std::int64_t max_head_dim = 256;
  // Boolean / additive mask tensors, with broadcasts.
  bool masks = true;
  // Causal masks (TL, BR) and sliding windows.
  bool causal_window = true;
  // Hkv < Hq (grouped-query and multi-query attention).
  bool gqa = true;
  // Per-batch valid lengths in the padded layout.
  bool varlen_padded = true;
  // Packed variable lengths (cu_seqlens).
  bool varlen_packed = true;
  // Dropout p > 0 with a dropout seed and offset.
  bool dropout = true;
  // Logit softcapping.
  bool softcap = true;
  // An explicit logit scale (negative and tiny included).
  bool custom_scale = true;
  // Dv != Dqk.
  bool different_v_dim = true;
  // lay=bshd, row gaps, base offsets.
  bool layouts = true;
  // Also request the LSE.
  bool lse_output = true;
  // Also request the attention weights.
  bool weights_output = true;
  // Also judge the backward (bwd; usually with the LSE, which a flash-style backward reads).
  bool backward = true;
  // Some backward cases without the LSE (when the LSE output is drawn at all): off, every
  // backward case asks for the LSE.
  bool backward_without_lse = true;
  // d bias (dbias) in some backward cases with an additive mask.
  bool bias_grad = true;
  // Adversarial data generators (docs/CASE_ID.md).
  bool adversarial_data = true;
  // Real-model shape presets (ModelPreset).
  bool model_shapes = true;
};

// How the inputs are laid out beyond lay / gap / off, as explicit strides (qst/kst/vst/ost in
// the case ID): what frameworks pass as views. A coverage dimension of the sampler.
enum class StrideKind {
  unit = 0,        // the layout's own strides: the head dimension is contiguous
  head_dim_2 = 1,  // every tensor a view x[..., ::2]: head-dim stride 2, other strides doubled
  transposed = 2,  // K and V stored head-dim major (a transposed view): row stride 1,
                   // head-dim stride = rows of the head
};
inline constexpr int kStrideKindCount = 3;

// Rewrites p's strides (already set by its layout, with its final sizes) for `kind`: the
// explicit strides of such views.
void apply_stride_kind(Problem& p, StrideKind kind);

// Raw draws of one case. build_case() accepts any values: out-of-range ones are clamped,
// and a feature whose family is off in the options is ignored.
struct CaseChoices {
  std::int64_t batch = 1;               // B
  std::int64_t heads_kv = 1;            // Hkv
  std::int64_t group = 1;               // Hq / Hkv (1 = plain multi-head attention)
  std::int64_t len_q = 1;               // L
  std::int64_t len_kv = 1;              // S
  std::int64_t head_dim_qk = 1;         // Dqk
  std::int64_t head_dim_v = 0;          // Dv; 0 = Dv equals Dqk
  int dtype = 0;                        // index into SamplerOptions::dtypes
  int preset = 0;                       // ModelPreset (0 = none)
  int causal = 0;                       // 0 none, 1 top-left, 2 bottom-right
  bool window = false;                  // sliding window on
  std::int64_t window_left = -1;        // keys before the diagonal, -1 = unbounded (clamped to S+1)
  std::int64_t window_right = -1;       // keys after the diagonal, -1 = unbounded
  bool window_bottom_right = false;     // window aligned bottom-right (else top-left)
  int mask = 0;                         // 0 none, 1 boolean, 2 additive
  int mask_broadcast = 0;               // MaskBroadcast flags (bits of bhls)
  int varlen = 0;                       // 0 none, 1 padded, 2 packed
  std::vector<std::int64_t> seqlens_q;  // L_b per batch element, clamped to L (missing: L)
  std::vector<std::int64_t> seqlens_kv;  // S_b per batch element, clamped to S (missing: S)
  int softcap = 0;                       // 0 off, else index into a table of caps
  int scale = 0;                         // 0 default scale, else index into a table of scales
  int dropout = 0;                       // 0 off, else index into a table of probabilities
  std::uint64_t dropout_seed = 0;        // dropout Philox key
  std::uint64_t dropout_offset = 0;      // dropout counter offset
  bool layout_bshd = false;              // lay=bshd
  std::int64_t gap = 0;                  // row gap, clamped to [0, 16]
  std::int64_t offset = 0;               // base offset, clamped to [0, 16]
  int stride_kind = 0;                   // StrideKind of the inputs, reduced modulo its count
  bool lse = false;                      // want LSE
  bool weights = false;                  // want attention weights
  bool backward = false;                 // judge the backward too (dropped when the input
                                         // layouts cannot hold gradients)
  bool backward_without_lse = false;     // a backward case without the LSE (unless lse)
  bool bias_grad = false;                // d bias too (a backward case with an additive mask)
  int generator = 0;                     // index into sampler_generators(problem, options)
  std::uint64_t seed = 0;                // data seed
};

// The data generators the sampler may pick for a problem: the plain ones, and with
// adversarial_data the adversarial ones that apply to it (neg_inf_blocks needs a mask
// tensor, nan_beyond valid lengths in the padded layout). "normal" is always first.
std::vector<std::string> sampler_generators(const Problem& p, const SamplerOptions& options);

// The options `sdpa-cts fuzz` searches with (and the fuzzer's detection-power measurement):
// every feature family and the adversarial data, sizes that keep a case in milliseconds while
// reaching every block edge and split length of the kernels (L, S up to 640, work up to 2^18),
// no real-model presets.
SamplerOptions search_sampler_options();

// Checks the options; throws std::invalid_argument naming the field (empty dtypes,
// max_work < 1, max_len < 1, max_head_dim < 1).
void check_sampler_options(const SamplerOptions& options);

// Assembles a valid case from any choices (see the file comment). Throws only for bad
// options (check_sampler_options).
Case build_case(const CaseChoices& choices, const SamplerOptions& options);

// Draws choices from `seed` (Philox4x32-10, integer arithmetic only): sizes biased toward
// small values and tile edges, each family switched on with a fixed probability.
CaseChoices draw_choices(std::uint64_t seed, const SamplerOptions& options);

// The sampler seed of case i of a run seeded with `run_seed` (`--sample N --seed S`, profiles):
// a mix of both (splitmix64's finaliser, integer arithmetic only), so runs with different
// seeds share no case.
std::uint64_t sample_seed(std::uint64_t run_seed, std::uint64_t i);

// build_case(draw_choices(seed, options), options): deterministic, always valid.
Case sample_case(std::uint64_t seed, const SamplerOptions& options = {});

// Work of a problem as the budget counts it: B*Hq*L*S*max(Dqk, Dv) (saturating).
std::int64_t problem_work(const Problem& p);

}  // namespace sdpa::conformance
