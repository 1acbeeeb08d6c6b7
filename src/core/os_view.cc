#include "core/os_view.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/text.h"

namespace gputriage::core {

OsView OsView::Live() { return OsView(""); }

Result<OsView> OsView::Rooted(const std::string& root) {
  if (root.empty() || root == "/") return Live();
  struct stat st {};
  if (::stat(root.c_str(), &st) != 0) {
    return MakeError("--root {}: {}", root, std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    return MakeError("--root {}: not a directory (expected a captured tree with sys/, proc/, ...)", root);
  }
  if (::access(root.c_str(), R_OK | X_OK) != 0) {
    return MakeError("--root {}: {}", root, std::strerror(errno));
  }
  std::string normalized = root;
  while (normalized.size() > 1 && normalized.back() == '/') normalized.pop_back();
  return OsView(normalized);
}

std::string OsView::Resolve(std::string_view path) const { return ResolveImpl(path, true, 0); }

std::string OsView::ResolveImpl(std::string_view path, bool follow_last, int depth) const {
  if (root_.empty()) return std::string(path);
  // Resolve like a chroot would: symbolic links inside the tree that hold absolute targets
  // (/usr/local/cuda -> /etc/alternatives/cuda) point into the tree, never to this host.
  std::vector<std::string> pending;
  for (std::string_view part : Split(path, '/')) {
    if (!part.empty() && part != ".") pending.emplace_back(part);
  }
  std::reverse(pending.begin(), pending.end());
  std::vector<std::string> resolved;
  int links_followed = 0;
  auto join = [&](const std::vector<std::string>& parts) {
    std::string out = root_;
    for (const std::string& p : parts) out += "/" + p;
    return out;
  };
  while (!pending.empty()) {
    std::string part = std::move(pending.back());
    pending.pop_back();
    if (part == "..") {
      if (!resolved.empty()) resolved.pop_back();
      continue;
    }
    resolved.push_back(part);
    if (pending.empty()) break;  // the last component is not followed here; open() follows it
    std::string current = join(resolved);
    char target[4096];
    ssize_t n = ::readlink(current.c_str(), target, sizeof(target) - 1);
    if (n <= 0) continue;
    if (++links_followed > 40) break;  // a loop: let open() report ELOOP-like failure
    std::string_view t(target, static_cast<size_t>(n));
    resolved.pop_back();
    if (t.front() == '/') resolved.clear();
    std::vector<std::string> link_parts;
    for (std::string_view lp : Split(t, '/')) {
      if (!lp.empty() && lp != ".") link_parts.emplace_back(lp);
    }
    for (auto it = link_parts.rbegin(); it != link_parts.rend(); ++it) pending.push_back(*it);
  }
  std::string out = join(resolved);
  if (!follow_last || depth > 40) return out;
  // A final component that is an absolute link is re-rooted too.
  char target[4096];
  ssize_t n = ::readlink(out.c_str(), target, sizeof(target) - 1);
  if (n <= 0 || target[0] != '/') return out;
  return ResolveImpl(std::string_view(target, static_cast<size_t>(n)), true, depth + 1);
}

Result<std::string> OsView::TryReadFile(std::string_view path, size_t max_bytes) const {
  std::string real = Resolve(path);
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  int fd = ::open(real.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return MakeError("{}: {}", real, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int saved = errno;
    ::close(fd);
    return MakeError("{}: {}", real, std::strerror(saved));
  }
  // Files under /proc and /sys are regular; so is everything of a captured tree. A FIFO or a
  // socket is never read (it can block or never end); a device only on the live machine (the
  // read stays bounded by max_bytes, and O_NONBLOCK ends it when no data is ready).
  bool readable = S_ISREG(st.st_mode) || (live() && S_ISCHR(st.st_mode));
  if (!readable) {
    ::close(fd);
    return MakeErrorCode(ErrorCode::kInvalidArgument, "{}: not read: it is {}, not a regular file", real,
                         S_ISFIFO(st.st_mode)   ? "a FIFO"
                         : S_ISSOCK(st.st_mode) ? "a socket"
                         : S_ISDIR(st.st_mode)  ? "a directory"
                                                : "a device");
  }
  std::string out;
  char buf[16384];
  while (out.size() < max_bytes) {
    size_t want = std::min(sizeof(buf), max_bytes - out.size());
    ssize_t n = ::read(fd, buf, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN && !S_ISREG(st.st_mode)) break;  // a device with nothing more ready
      int saved = errno;
      ::close(fd);
      return MakeError("{}: read failed after {} bytes: {}", real, out.size(), std::strerror(saved));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

std::optional<std::string> OsView::ReadTrimmed(std::string_view path) const {
  auto content = TryReadFile(path, 1u << 20);
  if (!content.ok()) return std::nullopt;
  return std::string(Trim(*content));
}

Result<std::vector<std::string>> OsView::TryListDir(std::string_view path) const {
  std::string real = Resolve(path);
  DIR* dir = ::opendir(real.c_str());
  if (dir == nullptr) return MakeError("{}: {}", real, std::strerror(errno));
  std::vector<std::string> names;
  while (dirent* entry = ::readdir(dir)) {
    std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    names.emplace_back(name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::string> OsView::TryReadLink(std::string_view path) const {
  std::string real = ResolveImpl(path, /*follow_last=*/false, 0);
  char buf[4096];
  ssize_t n = ::readlink(real.c_str(), buf, sizeof(buf) - 1);
  if (n < 0) return MakeError("{}: {}", real, std::strerror(errno));
  return std::string(buf, static_cast<size_t>(n));
}

bool OsView::Exists(std::string_view path) const {
  struct stat st {};
  return ::lstat(ResolveImpl(path, /*follow_last=*/false, 0).c_str(), &st) == 0;
}

bool OsView::IsDirectory(std::string_view path) const {
  struct stat st {};
  return ::stat(Resolve(path).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Result<OsView> OsViewFromOptions(const std::optional<std::string>& root_flag) {
  if (root_flag) return OsView::Rooted(*root_flag);
  if (const char* env = std::getenv("GPUTRIAGE_ROOT"); env != nullptr && *env != '\0') {
    return OsView::Rooted(env);
  }
  return OsView::Live();
}

}  // namespace gputriage::core
