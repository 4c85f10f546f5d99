#include "reports/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace sdpa::reports {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& step, int err) {
  throw std::runtime_error("cannot write '" + path + "': " + step + ": " + std::strerror(err));
}

// Best effort: makes the rename durable. Some file systems refuse fsync on a directory.
void sync_directory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view content) {
  namespace fs = std::filesystem;
  fs::path target(path);
  std::string name = target.filename().string();
  if (name.empty() || name == "." || name == "..") fail(path, "not a file name", EISDIR);
  std::string dir = target.parent_path().empty() ? "." : target.parent_path().string();

  static std::atomic<unsigned long> counter{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = (fs::path(dir) /
           ("." + name + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++)))
              .string();
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) fail(path, "cannot create the temporary file '" + tmp + "'", errno);

  auto abandon = [&](const std::string& step, int err) {
    ::close(fd);
    ::unlink(tmp.c_str());
    fail(path, step, err);
  };
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      abandon("writing '" + tmp + "'", errno);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) abandon("fsync of '" + tmp + "'", errno);
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    fail(path, "closing '" + tmp + "'", err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    fail(path, "renaming '" + tmp + "' over it", err);
  }
  sync_directory(dir);
}

}  // namespace sdpa::reports
