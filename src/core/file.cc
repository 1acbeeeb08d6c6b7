#include "core/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/scoped_fd.h"

namespace gputriage::core {
namespace {

constexpr size_t kChunkBytes = 64u << 10;

struct OpenFile {
  ScopedFd fd;
  struct stat st {};
};

Result<OpenFile> OpenForReading(const std::string& path) {
  OpenFile file;
  file.fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!file.fd.valid()) return ErrnoError(errno, "{}", path);
  if (::fstat(file.fd.get(), &file.st) != 0) return ErrnoError(errno, "{}: cannot stat", path);
  return file;
}

Error TooLarge(std::string_view name, size_t max_bytes) {
  return MakeErrorCode(ErrorCode::kInvalidArgument, "{}: more than the {} bytes allowed", name, max_bytes);
}

// Reads `fd` to its end into a string, refusing more than `max_bytes`; `size_hint` (fstat's
// size, 0 when unknown) sizes the first allocation.
Result<std::string> ReadToEnd(int fd, std::string_view name, size_t max_bytes, size_t size_hint) {
  // One byte past the limit tells "exactly max_bytes" from "more".
  const size_t limit = max_bytes == SIZE_MAX ? SIZE_MAX : max_bytes + 1;
  std::string out;
  if (size_hint > 0) out.reserve(std::min(size_hint, max_bytes) + 1);
  while (out.size() < limit) {
    size_t room = std::max(kChunkBytes, out.capacity() - out.size());
    size_t chunk = std::min(limit - out.size(), room);
    size_t at = out.size();
    out.resize(at + chunk);
    ssize_t n = ::read(fd, out.data() + at, chunk);
    int err = errno;
    out.resize(at + static_cast<size_t>(std::max<ssize_t>(n, 0)));
    if (n < 0) {
      if (err == EINTR) continue;
      return ErrnoError(err, "{}: read failed after {} bytes", name, out.size());
    }
    if (n == 0) return out;
  }
  return TooLarge(name, max_bytes);
}

// Reads `fd` to its end keeping only the last `max_bytes` bytes.
Result<std::string> ReadTail(int fd, std::string_view name, size_t max_bytes) {
  std::string tail;
  char buffer[kChunkBytes];
  size_t total = 0;
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "{}: read failed after {} bytes", name, total);
    }
    if (n == 0) break;
    total += static_cast<size_t>(n);
    tail.append(buffer, static_cast<size_t>(n));
    // Trimmed when twice the limit: each byte is moved at most once more.
    if (tail.size() > 2 * max_bytes) tail.erase(0, tail.size() - max_bytes);
  }
  if (tail.size() > max_bytes) tail.erase(0, tail.size() - max_bytes);
  return tail;
}

}  // namespace

Result<std::string> ReadFile(const std::string& path, size_t max_bytes) {
  GT_ASSIGN_OR_RETURN(OpenFile file, OpenForReading(path));
  size_t size_hint = 0;
  if (S_ISREG(file.st.st_mode)) {
    uint64_t size = static_cast<uint64_t>(file.st.st_size);
    if (size > max_bytes) {
      return MakeErrorCode(ErrorCode::kInvalidArgument, "{}: {} bytes, more than the {} bytes allowed", path, size,
                           max_bytes);
    }
    size_hint = static_cast<size_t>(size);
  }
  return ReadToEnd(file.fd.get(), path, max_bytes, size_hint);
}

Result<std::string> ReadFileTail(const std::string& path, size_t max_bytes) {
  GT_ASSIGN_OR_RETURN(OpenFile file, OpenForReading(path));
  if (S_ISREG(file.st.st_mode)) {
    uint64_t size = static_cast<uint64_t>(file.st.st_size);
    if (size > max_bytes && ::lseek(file.fd.get(), static_cast<off_t>(size - max_bytes), SEEK_SET) < 0) {
      return ErrnoError(errno, "{}: cannot seek to offset {} of {} bytes", path, size - max_bytes, size);
    }
  }
  return ReadTail(file.fd.get(), path, max_bytes);
}

Result<std::string> ReadFd(int fd, std::string_view name, size_t max_bytes) {
  return ReadToEnd(fd, name, max_bytes, 0);
}

}  // namespace gputriage::core
