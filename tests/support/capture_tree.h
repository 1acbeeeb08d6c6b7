// Test support: building --root trees from real captured outputs (tests/fixtures), so the real
// collectors run against real data. Captures keep their "# source:" first line; it is stripped.
#pragma once

#include <string>
#include <string_view>

namespace gputriage::testing {

/// A fresh directory under $TMPDIR, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// The fixture file's text (tests/fixtures/<relative>), without its "# source:" first line.
std::string ReadFixture(std::string_view relative);

/// Writes `content` to root + path, creating directories.
void WriteFile(const std::string& root, std::string_view path, std::string_view content);

/// Materialises `tail -v -n +1 FILES` output ("==> /path <==" then the content) under `root`.
/// Returns how many files were written.
int MaterializeTailV(std::string_view capture, const std::string& root);

/// Materialises `grep . FILES` output ("/path:line") under `root`, one line appended per
/// match; lines that are not "/abs/path:value" (prompts, "grep: ..." messages) are skipped.
int MaterializeGrepDot(std::string_view capture, const std::string& root);

/// Copies the directory tree `from` to `to` (symlinks kept as links).
void CopyTree(const std::string& from, const std::string& to);

}  // namespace gputriage::testing
