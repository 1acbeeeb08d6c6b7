// An owned file descriptor: closed when the owner goes away, so an early return cannot leak it.
#pragma once

#include <unistd.h>

namespace gputriage::core {

/// Owns one file descriptor (or none: -1) and closes it on destruction or reset. Move-only;
/// a moved-from ScopedFd owns nothing. close() errors are not reported (Linux releases the
/// descriptor even when close fails); a caller that must know calls close(fd.release()).
class ScopedFd {
 public:
  ScopedFd() = default;
  /// Takes ownership of `fd`; a negative value (a failed open) means none.
  explicit ScopedFd(int fd) : fd_(fd < 0 ? -1 : fd) {}
  ScopedFd(ScopedFd&& other) noexcept : fd_(other.release()) {}
  ScopedFd& operator=(ScopedFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  ~ScopedFd() { reset(); }

  /// The descriptor, still owned (-1 when none).
  int get() const { return fd_; }
  /// True when a descriptor is owned.
  bool valid() const { return fd_ >= 0; }
  /// Gives up ownership without closing; returns the descriptor (-1 when none).
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  /// Closes the owned descriptor, if any, and takes ownership of `fd` (-1: none).
  void reset(int fd = -1) {
    if (fd_ >= 0 && fd_ != fd) ::close(fd_);
    fd_ = fd < 0 ? -1 : fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace gputriage::core
