// SHA-256 digests (OpenSSL's libcrypto) for certification bundles: every file of a bundle,
// the case list of a profile and a plugin's binary are identified by their digest.
#pragma once

#include <string>
#include <string_view>

namespace sdpa::conformance {

// Lower-case hex SHA-256 of `data`.
std::string sha256_hex(std::string_view data);

// Lower-case hex SHA-256 of the file at `path`. Throws std::invalid_argument naming the file
// when it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace sdpa::conformance
