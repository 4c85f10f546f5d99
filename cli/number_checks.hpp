// Number checks of the command line whose messages name the limit and the value given
// ("--jobs: must be at least 1, got 0"; CLI11 prefixes the option's name), where CLI11's own
// PositiveNumber / NonNegativeNumber print their floating-point range
// ("0.000000 to 1797693...368.000000").
#pragma once

#include <CLI/CLI.hpp>
#include <cmath>
#include <string>

namespace sdpa::cli {

// A value >= min (a count: min printed as an integer).
inline CLI::Validator at_least(long long min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value) || std::isnan(value))
          return "must be a number, got '" + text + "'";
        if (value < static_cast<double>(min))
          return "must be at least " + std::to_string(min) + ", got " + text;
        return "";
      },
      ">= " + std::to_string(min));
}

// A value > 0 (seconds and other real quantities).
inline CLI::Validator greater_than_zero() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value) || std::isnan(value))
          return "must be a number, got '" + text + "'";
        if (!(value > 0)) return "must be greater than 0, got " + text;
        return "";
      },
      "> 0");
}

}  // namespace sdpa::cli
