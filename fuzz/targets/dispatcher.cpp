// Dispatcher invariants, for any problem, device and policy (the bytes decode a case, a
// simulated device with a cuDNN version and the nested switch, and the policy model):
//   - explain() never throws for a valid problem, and select() agrees with it;
//   - what explain() chooses says yes in supports() (the picker's checks, under the PyTorch
//     policy), so a choice is never made behind supports()' back;
//   - forcing any backend that declines makes select() throw NoViableBackendError carrying
//     every reason supports() gives, never a fallback to another backend.
#include "dispatcher/dispatcher.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/case_id.hpp"
#include "core/device.hpp"
#include "fuzz/case_from_bytes.hpp"
#include "fuzz/finding.hpp"

using namespace sdpa;
namespace d = sdpa::dispatcher;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::FuzzInput in(data, size);
  const Case c = fuzz::case_from_bytes(in);
  const auto& names = simulated_device_names();
  std::string dev_name =
      names[static_cast<std::size_t>(in.range(0, static_cast<std::int64_t>(names.size()) - 1))];
  const bool gpu = dev_name.rfind("sm", 0) == 0;
  if (gpu) {
    const std::int64_t minor = in.range(0, 30);
    if (minor > 0) dev_name += ":cudnn=9." + std::to_string(minor) + ".0";
    if (in.flag()) dev_name += ":cudnn_nested=1";
  }
  const Device device = parse_device_or_throw(dev_name);
  d::Policy policy;
  policy.model = in.flag() ? d::PolicyModel::pytorch : d::PolicyModel::suite;
  policy.require_deterministic = in.range(0, 7) == 0;
  const std::string id = format_case_id(c);
  const std::string repro = "sdpa-cts explain --policy " +
                            std::string(d::policy_model_name(policy.model)) + " --device " +
                            dev_name + (policy.require_deterministic ? " --deterministic" : "") +
                            " --case " + id;
  const auto& backends = d::policy_backends(policy);
  const d::Explanation e = d::explain(c.problem, device, policy);
  if (e.outcome == d::Outcome::selected) {
    const Backend* chosen = nullptr;
    for (const Backend* b : backends) {
      if (b->name() == e.chosen) chosen = b;
    }
    if (!chosen) fuzz::finding("explain chose an unknown backend " + e.chosen, repro);
    const Support s = chosen->supports(c.problem, device);
    const bool yes = policy.model == d::PolicyModel::pytorch ? s.picker_accepts() : s.ok();
    // Under the PyTorch policy the front end may have changed the problem (a bottom-right
    // causal mask with L == S is asked as top-left): only the suite policy is checked here.
    if (policy.model == d::PolicyModel::suite && !yes) {
      fuzz::finding("explain chose " + e.chosen + ", whose supports() declines", repro);
    }
    const std::string selected = std::string(d::select(c.problem, device, policy).name());
    if (selected != e.chosen) {
      fuzz::finding("select() chose " + selected + ", explain() " + e.chosen, repro);
    }
  }
  if (policy.model != d::PolicyModel::suite) return 0;
  for (const Backend* b : backends) {
    Support s = b->supports(c.problem, device);
    if (s.ok()) continue;
    d::Policy forced = policy;
    forced.enabled = std::vector<std::string>{std::string(b->name())};
    try {
      const Backend& got = d::select(c.problem, device, forced);
      fuzz::finding("forced " + std::string(b->name()) + " declines, yet select() returned " +
                        std::string(got.name()),
                    repro + " --backends " + std::string(b->name()));
    } catch (const d::NoViableBackendError& err) {
      const auto& r = err.rejected();
      std::vector<std::string> want = s.all_reasons();
      if (policy.require_deterministic && !b->capabilities().deterministic) {
        want.push_back(d::kNotDeterministic);
      }
      if (r.size() != 1 || r[0].backend != b->name() || r[0].reasons != want) {
        fuzz::finding(
            "forcing " + std::string(b->name()) + " does not report every reason of supports()",
            repro + " --backends " + std::string(b->name()));
      }
    }
  }
  return 0;
}
