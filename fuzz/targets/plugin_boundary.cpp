// The plugin boundary: the host's side of the C ABI fed with a backend description and
// callbacks a broken plugin could give (docs/PLUGINS.md): wrong struct sizes, names of any
// length and bytes, capability fields out of range, supports() declining with empty, NULL,
// huge or many reasons, precision() failing or returning unknown element types. Invariants:
// check_description() accepts or names the problem; an accepted backend answers
// capabilities(), supports() and precision() without crashing, every reason it reports is a
// non-empty line of bounded length, and a bad precision() is an std::runtime_error.
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
  int32_t precision_rc = 0;          // precision()'s return code
  int32_t accumulate = SDPA_CTS_DTYPE_F32;
  int32_t p_type = SDPA_CTS_DTYPE_F32;
};
Script g_script;

int32_t fake_precision(void*, int32_t, sdpa_cts_precision* out) {
  out->accumulate = g_script.accumulate;
  out->p_type = g_script.p_type;
  out->online_softmax = 0;
  out->key_block = 0;
  return g_script.precision_rc;
}

void fake_supports(void*, const sdpa_cts_problem*, const sdpa_cts_device*,
                   sdpa_cts_decline_fn decline, void* context) {
  for (const auto& r : g_script.reasons) decline(context, r.c_str());
  if (g_script.null_reason) decline(context, nullptr);
}

int32_t fake_run(void*, const sdpa_cts_problem*, const sdpa_cts_buffers*, const sdpa_cts_device*,
                 int32_t, char*, size_t) {
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
  const Support s = backend->supports(c0.problem, cpu);
  for (const auto& r : s.reasons) {
    if (r.empty() || r.size() > 4200 || r.find('\0') != std::string::npos) {
      fuzz::finding("a plugin reason reached the reports empty, too long or with a NUL (" +
                        std::to_string(r.size()) + " characters)",
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
