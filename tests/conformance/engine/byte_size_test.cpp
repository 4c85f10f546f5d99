// Byte sizes on the command line and in messages (conformance/engine/byte_size.hpp).
#include "conformance/engine/byte_size.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace sdpa {

using namespace sdpa::conformance;
namespace {

TEST(ByteSize, ParsesBinaryUnits) {
  EXPECT_EQ(parse_byte_size("4096"), 4096u);
  EXPECT_EQ(parse_byte_size("1K"), 1024u);
  EXPECT_EQ(parse_byte_size("512M"), 512ull << 20);
  EXPECT_EQ(parse_byte_size("8G"), 8ull << 30);
  EXPECT_EQ(parse_byte_size("8g"), 8ull << 30);
  EXPECT_EQ(parse_byte_size("8GiB"), 8ull << 30);
  EXPECT_EQ(parse_byte_size("1.5T"), 3ull << 39);
  EXPECT_EQ(parse_byte_size("2P"), 2ull << 50);
}

TEST(ByteSize, RefusesWhatItCannotReadNamingTheText) {
  for (const char* bad : {"", "G", "8GB", "8 G", "8X", "1.5", ".5G", "5.G", "1..5G", "-1G", "0",
                          "0.0001K", "16384P", "8Gi"}) {
    try {
      parse_byte_size(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("size '" + std::string(bad) + "'"), std::string::npos)
          << e.what();
    }
  }
}

TEST(ByteSize, FormatsInTheLargestUnit) {
  EXPECT_EQ(format_byte_size(0), "0 B");
  EXPECT_EQ(format_byte_size(1023), "1023 B");
  EXPECT_EQ(format_byte_size(1024), "1 KiB");
  EXPECT_EQ(format_byte_size(1536), "1.5 KiB");
  EXPECT_EQ(format_byte_size(512ull << 20), "512 MiB");
  EXPECT_EQ(format_byte_size(12638101504ull), "11.8 GiB");
  EXPECT_EQ(format_byte_size((1ull << 20) - 1), "1 MiB");  // never "1024 KiB"
  EXPECT_EQ(format_byte_size(65700000005239ull), "59.8 TiB");
  EXPECT_EQ(format_byte_size(UINT64_MAX), "at least 16 EiB");
}

TEST(ByteSize, WholeUnitsRoundTrip) {
  for (const auto& [text, formatted] :
       {std::pair{"1K", "1 KiB"}, std::pair{"640K", "640 KiB"}, std::pair{"512M", "512 MiB"},
        std::pair{"8G", "8 GiB"}, std::pair{"3T", "3 TiB"}}) {
    EXPECT_EQ(format_byte_size(parse_byte_size(text)), formatted);
    std::string unspaced = formatted;  // "640 KiB" -> "640KiB", what the option accepts
    unspaced.erase(unspaced.find(' '), 1);
    EXPECT_EQ(parse_byte_size(unspaced), parse_byte_size(text));
  }
}

}  // namespace
}  // namespace sdpa
