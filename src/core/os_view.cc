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
    return MakeError("--root {}: not a directory (expected a captured tree with sys/, proc/, ...)",
                     root);
  }
  if (::access(root.c_str(), R_OK | X_OK) != 0) {
    return MakeError("--root {}: {}", root, std::strerror(errno));
  }
  std::string normalized = root;
  while (normalized.size() > 1 && normalized.back() == '/') normalized.pop_back();
  return OsView(normalized);
}

std::string OsView::Resolve(std::string_view path) const {
  if (root_.empty()) return std::string(path);
  std::string out = root_;
  if (path.empty() || path.front() != '/') out += '/';
  out += path;
  return out;
}

Result<std::string> OsView::TryReadFile(std::string_view path, size_t max_bytes) const {
  std::string real = Resolve(path);
  int fd = ::open(real.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return MakeError("{}: {}", real, std::strerror(errno));
  std::string out;
  char buf[16384];
  while (out.size() < max_bytes) {
    size_t want = std::min(sizeof(buf), max_bytes - out.size());
    ssize_t n = ::read(fd, buf, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      int saved = errno;
      ::close(fd);
      return MakeError("{}: read failed after {} bytes: {}", real, out.size(),
                       std::strerror(saved));
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
  std::string real = Resolve(path);
  char buf[4096];
  ssize_t n = ::readlink(real.c_str(), buf, sizeof(buf) - 1);
  if (n < 0) return MakeError("{}: {}", real, std::strerror(errno));
  return std::string(buf, static_cast<size_t>(n));
}

bool OsView::Exists(std::string_view path) const {
  struct stat st {};
  return ::lstat(Resolve(path).c_str(), &st) == 0;
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
