#include "core/spec_fields.hpp"

#include "core/dtype.hpp"

namespace sdpa {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

SpecField split_spec_field(const std::string& token) {
  const std::string_view tok = token;
  std::size_t cut = tok.find('='), skip = 1;
  if (cut == std::string_view::npos) {
    if (parse_dtype(tok)) return {"dtype", token};
    cut = 0;
    skip = 0;
    while (cut < tok.size() && tok[cut] >= 'a' && tok[cut] <= 'z') ++cut;
  }
  return {std::string(tok.substr(0, cut)), std::string(tok.substr(cut + skip))};
}

}  // namespace sdpa
