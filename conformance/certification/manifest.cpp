#include "conformance/certification/manifest.hpp"

#include "conformance/certification/bundle.hpp"
#include "conformance/certification/sha256.hpp"
#include "conformance/judge/tolerance.hpp"
#include "core/build_info.hpp"

namespace sdpa::conformance {

using ojson = nlohmann::ordered_json;

ojson device_json(const Device& d) {
  ojson j;
  j["name"] = d.name;
  j["kind"] = d.kind == DeviceKind::cuda ? "cuda" : "cpu";
  j["simulated"] = d.simulated;
  j["statement"] = describe_device(d);
  if (d.kind == DeviceKind::cpu) {
    j["cpu_model"] = cpu_model_name();
    j["isa_target"] = std::string(isa_target_name(d.cpu.isa));
    ojson isa = ojson::array();
    for (IsaTarget t : available_isa_targets(d.cpu)) isa.push_back(std::string(isa_target_name(t)));
    j["isa_targets_available"] = isa;
    j["cores"] = d.cpu.cores;
  } else {
    j["compute_capability"] = sm_name(d.cuda.sm);
    j["sm_count"] = d.cuda.sm_count;
    j["cuda_runtime"] = d.cuda.cuda_runtime;
    j["cudnn"] = cudnn_version_name(d.cuda.cudnn_version);
    j["driver"] = "unknown";  // not detected in this build (no CUDA runtime)
  }
  return j;
}

ojson certification_manifest(const CertificationRun& r, const ProfileVerdict& verdict,
                             std::size_t records) {
  const Profile& profile = *r.profile;
  ojson m;
  m["schema"] = "sdpa-cts.certification";
  m["schema_version"] = 1;
  m["suite"] = {{"version", SDPA_CTS_VERSION},
                {"commit", build_commit()},
                {"tolerance_version", ToleranceTable{}.version}};
  ojson prof;
  prof["name"] = profile.name;
  prof["description"] = profile.description;
  prof["file_sha256"] = sha256_hex(profile.text);
  prof["require"] = profile.require;
  prof["cases"] = r.cases;
  prof["frozen_cases"] = r.cases - static_cast<std::size_t>(profile.sample_count);
  prof["pairwise_cases"] = profile.pairwise.size();  // of the frozen ones, generated
  prof["sampled_cases"] = profile.sample_count;
  prof["sample_seed"] = r.seed;
  prof["case_list_sha256"] = sha256_hex(r.case_list);
  m["profile"] = prof;
  m["device"] = device_json(r.device);
  m["backend"] = r.backend;
  m["run"] = r.run;
  if (r.expectations) {
    m["expectations"] = {{"file", r.expectations_file},
                         {"sha256", sha256_hex(*r.expectations)},
                         {"entries", r.expectation_entries}};
  } else {
    m["expectations"] = nullptr;
  }
  m["verdict"] = verdict_json(verdict, records);
  return m;
}

}  // namespace sdpa::conformance
