#include "reports/records/record_json.hpp"

#include <cmath>
#include <stdexcept>

namespace sdpa::conformance {
namespace {

nlohmann::ordered_json number(double x) {
  if (std::isfinite(x)) return x;
  if (std::isnan(x)) return "nan";
  return x > 0 ? "inf" : "-inf";
}

double number_from(const nlohmann::json& j, const char* key) {
  if (auto x = number_or_nonfinite(j.at(key))) return *x;
  throw std::invalid_argument(std::string("record key '") + key + "': not a number");
}

}  // namespace

std::optional<double> number_or_nonfinite(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
    if (s == "nan") return NAN;
  }
  return std::nullopt;
}

nlohmann::ordered_json record_to_json(const CaseRecord& r) {
  nlohmann::ordered_json j;
  j["case_id"] = r.case_id;
  j["backend"] = r.backend;
  j["device"] = r.device;
  j["simd_target"] = r.simd_target;
  j["threads"] = r.threads;
  j["status"] = status_name(r.status);
  j["message"] = r.message;
  j["max_abs_error"] = number(r.max_abs_error);
  j["nmse"] = number(r.nmse);
  j["worst_ratio"] = number(r.worst_ratio);
  j["worst_where"] = r.worst_where;
  if (!r.tensor_ratios.empty()) {
    nlohmann::ordered_json t = nlohmann::ordered_json::object();
    for (const auto& [name, ratio] : r.tensor_ratios) t[name] = number(ratio);
    j["tensor_ratios"] = t;
  }
  if (r.nondeterministic_backward) j["nondeterministic_backward"] = true;
  if (!r.output_digest.empty()) j["output_digest"] = r.output_digest;
  if (!r.judged.empty()) j["judged"] = r.judged;
  if (!r.not_returned.empty()) j["not_returned"] = r.not_returned;
  j["seconds"] = number(r.seconds);
  j["features"] = r.features;
  j["repro"] = r.repro;
  j["expected"] = r.expected;
  return j;
}

CaseRecord record_from_json(const nlohmann::json& j) {
  CaseRecord r;
  try {
    r.case_id = j.at("case_id");
    r.backend = j.at("backend");
    r.device = j.at("device");
    r.simd_target = j.at("simd_target");
    r.threads = j.at("threads");
    const std::string status = j.at("status");
    const auto s = parse_status_name(status);
    if (!s) throw std::invalid_argument("record key 'status': unknown status '" + status + "'");
    r.status = *s;
    r.message = j.at("message");
    r.max_abs_error = number_from(j, "max_abs_error");
    r.nmse = number_from(j, "nmse");
    r.worst_ratio = number_from(j, "worst_ratio");
    r.worst_where = j.at("worst_where");
    // Written when something was judged; absent in files written before the backward.
    r.nondeterministic_backward = j.value("nondeterministic_backward", false);
    if (j.contains("tensor_ratios")) {
      const auto& t = j.at("tensor_ratios");
      if (!t.is_object()) throw std::invalid_argument("record key 'tensor_ratios': not an object");
      for (auto it = t.begin(); it != t.end(); ++it)
        r.tensor_ratios[it.key()] = number_from(t, it.key().c_str());
    }
    // Written when outputs were judged; absent in files written before it existed.
    r.output_digest = j.value("output_digest", std::string());
    // Written when something was compared / not returned; absent in files written before.
    if (j.contains("judged")) r.judged = j.at("judged").get<std::vector<std::string>>();
    if (j.contains("not_returned"))
      r.not_returned = j.at("not_returned").get<std::vector<std::string>>();
    r.seconds = number_from(j, "seconds");
    r.features = j.at("features").get<std::vector<std::string>>();
    r.repro = j.at("repro");
    // Written always; absent in files written before known failures existed.
    r.expected = j.value("expected", std::string());
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("malformed record: ") + e.what());
  }
  return r;
}

std::string record_json_line(const CaseRecord& r) {
  return record_to_json(r).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace sdpa::conformance
