#include "core/fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/scoped_fd.h"

namespace gputriage::core {

Result<void> MakeDirectories(const std::string& path, unsigned mode) {
  if (path.empty()) return MakeError("cannot create a directory with an empty name");
  // Walk the components left to right so each missing one is created with `mode`.
  for (size_t end = 1; end <= path.size(); ++end) {
    if (end != path.size() && path[end] != '/') continue;
    std::string prefix = path.substr(0, end);
    if (prefix.back() == '/') continue;
    if (::mkdir(prefix.c_str(), static_cast<mode_t>(mode)) == 0) continue;
    int saved = errno;
    struct stat st {};
    if (saved == EEXIST && ::stat(prefix.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode)) continue;
      return MakeError("cannot create directory {}: {} exists and is not a directory", path, prefix);
    }
    if (prefix == path) {
      return MakeError("cannot create directory {}: {}", path, std::strerror(saved));
    }
    return MakeError("cannot create directory {}: {}: {}", path, prefix, std::strerror(saved));
  }
  return {};
}

namespace {

int64_t Nanoseconds(const struct timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec; }

}  // namespace

std::optional<FileIdentity> IdentityOf(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileIdentity{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                      static_cast<int64_t>(st.st_size), Nanoseconds(st.st_mtim), Nanoseconds(st.st_ctim)};
}

Result<void> WriteFileAtomically(const std::string& path, std::string_view text) {
  size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    GT_RETURN_IF_ERROR(MakeDirectories(path.substr(0, slash), 0700));
  }
  std::string temp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return ErrnoError(errno, "{}", temp);
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int saved = n < 0 ? errno : EIO;
      ::close(fd);
      ::unlink(temp.c_str());
      return ErrnoError(saved, "{}: write failed", temp);
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    int saved = errno;
    ::unlink(temp.c_str());
    return ErrnoError(saved, "{}: write failed", temp);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int saved = errno;
    ::unlink(temp.c_str());
    return ErrnoError(saved, "{}: rename to {} failed", temp, path);
  }
  return {};
}

OutputPath ClassifyOutputPath(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return {};
  struct stat target {};
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) ||
      (S_ISLNK(st.st_mode) && ::stat(path.c_str(), &target) == 0 &&
       (S_ISCHR(target.st_mode) || S_ISFIFO(target.st_mode)))) {
    return {OutputPath::kStream, ""};
  }
  if (S_ISREG(st.st_mode)) return {OutputPath::kRegular, ""};
  return {OutputPath::kOther, S_ISLNK(st.st_mode)    ? "a symbolic link"
                              : S_ISDIR(st.st_mode)  ? "a directory"
                              : S_ISSOCK(st.st_mode) ? "a socket"
                                                     : "a block device"};
}

core::Result<void> WriteOutputFile(const std::string& path, std::string_view text) {
  int flags = O_WRONLY | O_CLOEXEC | O_NOCTTY;
  OutputPath output = ClassifyOutputPath(path);
  switch (output.kind) {
    case OutputPath::kOther:
      return MakeErrorCode(ErrorCode::kInvalidArgument,
                           "{}: {}, not a regular file: not written (name a new file, or the file itself)", path,
                           output.what);
    case OutputPath::kRegular:
      flags |= O_TRUNC | O_NOFOLLOW;
      break;
    case OutputPath::kAbsent:
      flags |= O_CREAT | O_EXCL | O_NOFOLLOW;
      break;
    case OutputPath::kStream:
      break;
  }
  ScopedFd fd(::open(path.c_str(), flags, 0666));
  if (!fd.valid()) return ErrnoError(errno, "{}: cannot write", path);
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return ErrnoError(n < 0 ? errno : ENOSPC, "{}: cannot write ({} of {} bytes written)", path, done, text.size());
    done += static_cast<size_t>(n);
  }
  return {};
}

}  // namespace gputriage::core
