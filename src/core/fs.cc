#include "core/fs.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

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

}  // namespace gputriage::core
