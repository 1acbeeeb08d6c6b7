// The rooted view of the operating system. Every collector reaches /sys, /proc, /dev/kmsg,
// /etc, /opt, /usr and /var through an OsView, so a test (or a user analysing a tree captured on
// another node) points the real collector at a directory instead of the live machine.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gputriage::core {

class OsView {
 public:
  /// The live machine: paths resolve as they are, and live queries (NVML, vendor tools) are
  /// allowed.
  static OsView Live();

  /// A captured tree rooted at `root`. Fails with a message naming `root` when it does not
  /// exist, is not a directory, or cannot be read. An empty root or "/" means Live().
  static Result<OsView> Rooted(const std::string& root);

  /// True for the live machine; false under --root, where nothing live may be queried.
  bool live() const { return root_.empty(); }
  /// The root directory ("" for the live machine).
  const std::string& root() const { return root_; }

  /// The real path of absolute path `path` ("/sys/class/drm" -> "<root>/sys/class/drm").
  /// Under a root, symbolic links inside the tree are followed as a chroot would: an absolute
  /// target ("/etc/alternatives/cuda") resolves inside the tree, never on this host.
  std::string Resolve(std::string_view path) const;

  /// Reads at most `max_bytes` of a file. A read that fails midway keeps what was read only if
  /// nothing failed; errors name the resolved path and the errno text.
  Result<std::string> TryReadFile(std::string_view path, size_t max_bytes = 4u << 20) const;

  /// The file's content without surrounding whitespace, or nullopt if it cannot be read.
  std::optional<std::string> ReadTrimmed(std::string_view path) const;

  /// Names in a directory (no "." or ".."), sorted. Errors name the resolved path.
  Result<std::vector<std::string>> TryListDir(std::string_view path) const;

  /// The target of a symbolic link, as stored (not resolved).
  Result<std::string> TryReadLink(std::string_view path) const;

  bool Exists(std::string_view path) const;
  bool IsDirectory(std::string_view path) const;

 private:
  explicit OsView(std::string root) : root_(std::move(root)) {}
  std::string ResolveImpl(std::string_view path, bool follow_last, int depth) const;
  std::string root_;
};

/// The OsView selected by --root, else $GPUTRIAGE_ROOT, else the live machine.
Result<OsView> OsViewFromOptions(const std::optional<std::string>& root_flag);

}  // namespace gputriage::core
