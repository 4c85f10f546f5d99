// The parsers of every textual input: case IDs, MHA call specs and device names. The first
// input byte picks the parser; the rest is the text. Invariants:
//   - nothing crashes or throws where the API promises an error value;
//   - an accepted input prints canonically and parses back to the same canonical text;
//   - a rejected case ID names a field (the CaseIdError's field appears in its message).
#include <cstdint>
#include <string>
#include <variant>

#include "core/case_id.hpp"
#include "core/device.hpp"
#include "core/shell_quote.hpp"
#include "fuzz/finding.hpp"
#include "fuzz/fuzz_input.hpp"
#include "reference/mha_spec.hpp"

using namespace sdpa;

namespace {

void case_id(const std::string& text) {
  const auto parsed = parse_case_id(text);
  if (const auto* err = std::get_if<CaseIdError>(&parsed)) {
    if (err->message.empty() || err->field.empty() ||
        err->message.find(err->field) == std::string::npos) {
      fuzz::finding("case ID error without its field: " + err->message,
                    "sdpa-cts explain --case " + shell_quote(text));
    }
    return;
  }
  const Case& c = std::get<Case>(parsed);
  (void)validate(c.problem);
  const std::string once = format_case_id(c);
  const auto again = parse_case_id(once);
  if (!std::holds_alternative<Case>(again)) {
    fuzz::finding("the printed form of an accepted ID does not parse: " + once + ": " +
                      std::get<CaseIdError>(again).message,
                  "sdpa-cts explain --case " + shell_quote(text));
  }
  const std::string twice = format_case_id(std::get<Case>(again));
  if (twice != once) {
    fuzz::finding("print-parse round trip changes the ID: " + once + " -> " + twice,
                  "sdpa-cts explain --case " + shell_quote(text));
  }
}

void mha_spec(const std::string& text) {
  const auto parsed = reference::parse_mha_spec(text);
  if (const auto* err = std::get_if<std::string>(&parsed)) {
    if (err->empty())
      fuzz::finding("an empty MHA spec error", "sdpa-cts explain --mha " + shell_quote(text));
    return;
  }
  const std::string once = reference::format_mha_spec(std::get<reference::MhaCall>(parsed));
  const auto again = reference::parse_mha_spec(once);
  if (!std::holds_alternative<reference::MhaCall>(again) ||
      reference::format_mha_spec(std::get<reference::MhaCall>(again)) != once) {
    fuzz::finding("MHA spec print-parse round trip fails: " + once,
                  "sdpa-cts explain --mha " + shell_quote(text));
  }
}

void device_name(const std::string& text) {
  const auto parsed = parse_device(text);
  if (const auto* err = std::get_if<std::string>(&parsed)) {
    if (err->empty())
      fuzz::finding("an empty device error", "sdpa-cts explain --device " + shell_quote(text));
    return;
  }
  const Device& d = std::get<Device>(parsed);
  (void)describe_device(d);
  if (!d.simulated) return;  // "cpu", "auto": the detected device, named by detection
  const auto again = parse_device(d.name);
  if (!std::holds_alternative<Device>(again) || std::get<Device>(again).name != d.name) {
    fuzz::finding(
        "a device's name does not parse back to it: " + d.name,
        "sdpa-cts explain --device " + shell_quote(text) + " --case b1.hq1.l1.s1.dqk8.f32");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::FuzzInput in(data, size);
  const std::int64_t which = in.range(0, 2);
  std::string text = in.rest();
  if (text.size() > 4096) text.resize(4096);
  if (which == 0) {
    case_id(text);
  } else if (which == 1) {
    mha_spec(text);
  } else {
    device_name(text);
  }
  return 0;
}
