// The manifest of a certification bundle (docs/CERTIFICATION.md, manifest.json), assembled from
// what a certification ran: one place for `sdpa-cts certify` and the Python package's
// sdpa_cts.certify.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "conformance/certification/profile.hpp"
#include "core/device.hpp"

namespace sdpa::conformance {

// What a certification ran, besides its records.
struct CertificationRun {
  const Profile* profile = nullptr;         // the profile certified
  std::uint64_t seed = 0;                   // its sampling seed
  std::size_t cases = 0;                    // cases of the profile's list
  std::string case_list;                    // case_list_text of that list
  Device device;                            // the device as certified (with its ISA target)
  nlohmann::ordered_json backend;           // name, builtin, plugin, capabilities, precision
  nlohmann::ordered_json run;               // how it ran: command, jobs, threads, timing, shard
  std::optional<std::string> expectations;  // the known-failure file's text (--expect)
  std::string expectations_file;            // its file name
  std::size_t expectation_entries = 0;      // its entries
};

// The "device" section: name, kind, the statement, and the CPU's or GPU's particulars.
nlohmann::ordered_json device_json(const Device& d);

// manifest.json for `run` with `verdict` over `records` records.
nlohmann::ordered_json certification_manifest(const CertificationRun& run,
                                              const ProfileVerdict& verdict, std::size_t records);

}  // namespace sdpa::conformance
