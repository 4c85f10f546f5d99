#include "conformance/certification/sha256.hpp"

#include <openssl/evp.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <vector>

namespace sdpa::conformance {
namespace {

struct Digest {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx{EVP_MD_CTX_new(), EVP_MD_CTX_free};
  Digest() {
    if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
      throw std::runtime_error("SHA-256: OpenSSL could not initialise a digest");
    }
  }
  void add(const void* data, std::size_t n) { EVP_DigestUpdate(ctx.get(), data, n); }
  std::string hex() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx.get(), md, &n);
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < n; ++i) {
      out += digits[md[i] >> 4];
      out += digits[md[i] & 15];
    }
    return out;
  }
};

}  // namespace

std::string sha256_hex(std::string_view data) {
  Digest d;
  d.add(data.data(), data.size());
  return d.hex();
}

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot read '" + path + "': " + std::strerror(errno));
  Digest d;
  std::vector<char> buf(1 << 16);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    d.add(buf.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) throw std::invalid_argument("cannot read '" + path + "'");
  return d.hex();
}

}  // namespace sdpa::conformance
