// The plugin boundary: the host's side of the C ABI fed with a backend description and
// callbacks a broken plugin could give (docs/PLUGINS.md): wrong struct sizes, names of any
// length and bytes, capability fields out of range, supports() declining with empty, NULL,
// huge or many reasons, or repeating the reasons of the host's own capability check,
// precision() failing or returning unknown element types. Invariants:
// check_description() accepts or names the problem; an accepted backend answers
// capabilities(), supports() and precision() without crashing; the lowered problem
// supports() gets is an ABI 2 sdpa_cts_params of the case with every tensor pointer NULL
// (struct_size, per-batch lengths and their prefix sums, zero mask strides along broadcast
// dimensions); every reason it reports is a non-empty line of bounded length, a reason of
// the host's capability check is reported once however often the plugin repeats it; a bad
// precision() is an std::runtime_error.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "fuzz/case_from_bytes.hpp"
#include "fuzz/finding.hpp"
#include "plugins/host/plugin_backend.hpp"
#include "sdpa_cts/plugin.h"

using namespace sdpa;

namespace {

// What the fake plugin's callbacks do, decoded from the input.
struct Script {
  std::vector<std::string> reasons;  // supports() declines with these
  bool null_reason = false;          // and once with NULL
  std::vector<std::string> repeats;  // then with these: the host's own reasons, again
  int32_t precision_rc = 0;          // precision()'s return code
  int32_t accumulate = SDPA_CTS_DTYPE_F32;
  int32_t p_type = SDPA_CTS_DTYPE_F32;
};
Script g_script;
const Problem* g_problem = nullptr;  // the case supports() is asked about
std::string g_params_wrong;          // the first way the params supports() got were wrong

// "" when `c` is the lowered problem of `p` as supports() must see it, else what is wrong.
std::string check_params(const sdpa_cts_params* c, const Problem& p) {
  if (!c) return "supports() got no params";
  if (c->struct_size != sizeof(sdpa_cts_params)) return "params struct_size is not its size";
  if (c->q || c->k || c->v || c->o || c->mask || c->lse || c->weights) {
    return "supports() got a non-NULL tensor pointer";
  }
  if (c->batch != p.batch || c->heads_q != p.heads_q || c->len_q != p.len_q ||
      c->len_kv != p.len_kv || c->head_dim_qk != p.head_dim_qk) {
    return "params shape differs from the case";
  }
  if (p.batch > 0 && (!c->seqlens_q || !c->seqlens_kv || !c->cu_seqlens_q || !c->cu_seqlens_kv)) {
    return "a per-batch lengths array of params is NULL";
  }
  for (std::int64_t b = 0; b < p.batch; ++b) {
    if (c->seqlens_q[b] != seqlen_q(p, b) || c->seqlens_kv[b] != seqlen_kv(p, b)) {
      return "seqlens of batch element " + std::to_string(b) + " differ from the case";
    }
    if (c->cu_seqlens_q[b + 1] - c->cu_seqlens_q[b] != c->seqlens_q[b] ||
        c->cu_seqlens_kv[b + 1] - c->cu_seqlens_kv[b] != c->seqlens_kv[b]) {
      return "cu_seqlens are not the prefix sums of seqlens at " + std::to_string(b);
    }
  }
  const uint32_t bits[4] = {SDPA_CTS_BROADCAST_B, SDPA_CTS_BROADCAST_H, SDPA_CTS_BROADCAST_L,
                            SDPA_CTS_BROADCAST_S};
  for (int d = 0; d < 4; ++d) {
    if (c->mask_kind != SDPA_CTS_MASK_NONE && (c->mask_broadcast & bits[d]) &&
        c->mask_stride[d] != 0) {
      return "mask stride " + std::to_string(d) + " is not 0 along a broadcast dimension";
    }
  }
  return "";
}

int32_t fake_precision(void*, int32_t, sdpa_cts_precision* out) {
  out->accumulate = g_script.accumulate;
  out->p_type = g_script.p_type;
  out->online_softmax = 0;
  out->key_block = 0;
  return g_script.precision_rc;
}

void fake_supports(void*, const sdpa_cts_params* params, const sdpa_cts_device*,
                   sdpa_cts_decline_fn decline, void* context) {
  if (g_params_wrong.empty() && g_problem) g_params_wrong = check_params(params, *g_problem);
  for (const auto& r : g_script.reasons) decline(context, r.c_str());
  if (g_script.null_reason) decline(context, nullptr);
  for (const auto& r : g_script.repeats) decline(context, r.c_str());
}

int32_t fake_run(void*, const sdpa_cts_params*, const sdpa_cts_device*, int32_t, char*, size_t) {
  return 1;
}

std::string text(fuzz::FuzzInput& in, std::int64_t max_len) {
  const std::int64_t n = in.range(0, max_len);
  std::string s;
  for (std::int64_t i = 0; i < n; ++i) s += static_cast<char>(in.range(1, 255));
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::FuzzInput in(data, size);
  sdpa_cts_backend b{};
  b.struct_size = static_cast<uint32_t>(sizeof(sdpa_cts_backend) + in.range(-16, 16));
  const std::string name = in.flag() ? "fuzz.backend" : text(in, 300);
  b.name = name.c_str();
  b.precision = fake_precision;
  b.supports = fake_supports;
  b.run = fake_run;
  sdpa_cts_capabilities& c = b.capabilities;
  c.struct_size = static_cast<uint32_t>(sizeof(sdpa_cts_capabilities) + in.range(-16, 16));
  c.dtypes = static_cast<uint32_t>(in.u64());
  c.device_kind = static_cast<int32_t>(in.range(-2, 3));
  c.max_head_dim = in.range(-4, 600);
  c.head_dim_multiple = in.range(-4, 300);
  c.flags = static_cast<uint32_t>(in.u64());
  c.traits = static_cast<uint32_t>(in.u64());
  c.memory = static_cast<int32_t>(in.range(-2, 3));
  g_script = Script{};
  const std::int64_t reasons = in.range(0, 6);
  for (std::int64_t i = 0; i < reasons; ++i) {
    // Empty, ordinary, or oversized (a plugin that returns a whole log as its reason).
    const std::int64_t kind = in.range(0, 2);
    g_script.reasons.push_back(kind == 0   ? std::string()
                               : kind == 1 ? text(in, 80)
                                           : std::string(100000, 'x'));
  }
  g_script.null_reason = in.flag();
  g_script.precision_rc = static_cast<int32_t>(in.range(0, 1));
  g_script.accumulate = static_cast<int32_t>(in.range(-2, 5));
  g_script.p_type = static_cast<int32_t>(in.range(-2, 5));

  const std::string why = plugins::check_description(b);
  if (!why.empty()) return 0;  // a clear refusal; the loader reports it with the file name
  const auto backend = plugins::make_plugin_backend(b);
  (void)backend->capabilities();
  const Case c0 = fuzz::case_from_bytes(in);
  static const Device cpu = detect_cpu();
  // Read last, so that the inputs of earlier corpora decode as before: a plugin that also
  // declines in supports() what its capabilities exclude, in the host's very words.
  Support host;
  check_capabilities(backend->capabilities(), c0.problem, cpu, host);
  if (in.flag()) g_script.repeats = host.reasons;
  g_problem = &c0.problem;
  g_params_wrong.clear();
  const Support s = backend->supports(c0.problem, cpu);
  g_problem = nullptr;
  if (!g_params_wrong.empty()) {
    fuzz::finding("the params supports() got: " + g_params_wrong + " (" + format_case_id(c0) + ")",
                  "fuzz_plugin_boundary on this input");
  }
  for (const auto& r : s.reasons) {
    if (r.empty() || r.size() > 4200 || r.find('\0') != std::string::npos) {
      fuzz::finding("a plugin reason reached the reports empty, too long or with a NUL (" +
                        std::to_string(r.size()) + " characters)",
                    "fuzz_plugin_boundary on this input");
    }
  }
  for (const auto& r : host.reasons) {
    const auto count = [&](const std::vector<std::string>& v) {
      return std::count(v.begin(), v.end(), r);
    };
    if (count(s.reasons) != count(host.reasons)) {
      fuzz::finding("the host's reason '" + r + "' was reported " +
                        std::to_string(count(s.reasons)) + " times, the host gave it " +
                        std::to_string(count(host.reasons)),
                    "fuzz_plugin_boundary on this input");
    }
  }
  for (DType t : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    try {
      (void)backend->precision(t);
    } catch (const std::runtime_error&) {
      // the documented error for a plugin without a contract or with an unknown type
    }
  }
  return 0;
}
