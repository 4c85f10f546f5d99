// The token grammar shared by the dotted spec strings (case IDs, docs/CASE_ID.md; MHA call
// specs, reference/mha_spec.hpp) and the device names (core/device.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sdpa {

// `s` cut at every `sep`; empty parts are kept ("a..b" gives "a", "", "b").
std::vector<std::string_view> split(std::string_view s, char sep);

// One field of a dotted spec: "key=value", a bare element-type name ("f16": key "dtype"),
// or a lower-case name followed by its value ("hq8": key "hq", value "8").
struct SpecField {
  std::string key;
  std::string value;
};
SpecField split_spec_field(const std::string& token);

}  // namespace sdpa
