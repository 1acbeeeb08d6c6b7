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
  /// path() + "/" + name.
  std::string operator/(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

/// A TempDir used as a captured --root tree: files are named by their path inside the tree,
/// "/sys/x" and "sys/x" alike.
class TempTree : public TempDir {
 public:
  const std::string& root() const { return path(); }
  /// Where the in-tree `path` lies on this machine.
  std::string Real(std::string_view path) const;
  /// Writes `bytes` to the in-tree `path` (replacing it), creating directories.
  void Write(std::string_view path, std::string_view bytes) const;
  void MakeDir(std::string_view path) const;
  /// Creates the link `path` with the link text `target` (kept as written), creating parents.
  void Link(std::string_view path, std::string_view target) const;
};

/// What ReadFixture does with the fixture's first line.
enum class SourceLine {
  kStripIfPresent,  // a "# source:" first line is dropped; any other first line is kept
  kRequired,        // the first line must be "# source: ..." (a test failure otherwise); dropped
  kKeep,            // the bytes as they are (files of a captured tree, such as h200-root/)
};

struct FixtureOptions {
  SourceLine source_line = SourceLine::kStripIfPresent;
  /// false: a missing fixture throws; true: it is a (non-fatal) test failure and reads as "".
  bool missing_fails_test = false;
};

/// The fixture file's text (tests/fixtures/<relative>), by default without its "# source:"
/// first line.
std::string ReadFixture(std::string_view relative, FixtureOptions options = {});

/// A real capture: ReadFixture that fails the test (without stopping it) when the file is
/// missing or its first line is not "# source: ...".
std::string ReadCapture(std::string_view relative);

/// Writes `content` to root + path, creating directories.
void WriteFile(const std::string& root, std::string_view path, std::string_view content);

/// How MaterializeTailV ends each file.
enum class TailBlankLines {
  kDropAllTrailing,   // every trailing blank line of a file is dropped
  kDropOneSeparator,  // only the one blank line tail prints before the next header is dropped,
                      // so empty files and files ending in blank lines come back as they were
};

/// Materialises `tail -v -n +1 FILES` output ("==> /path <==" then the content) under `root`.
/// Returns how many files were written.
int MaterializeTailV(std::string_view capture, const std::string& root,
                     TailBlankLines blank_lines = TailBlankLines::kDropAllTrailing);

/// Materialises `grep . FILES` output ("/path:line") under `root`, one line appended per
/// match; lines that are not "/abs/path:value" (prompts, "grep: ..." messages) are skipped.
/// The first ':' ends the path (true of sysfs attribute paths, not of PCI addresses).
int MaterializeGrepDot(std::string_view capture, const std::string& root);

/// Materialises shell transcripts of "PROMPT# cat /PATH" (a prompt ending in '#', '$' or '>'
/// before " cat /") under `root`: each file is the lines that follow, up to a blank line or
/// the next prompt (a trailing '\r' of a line is dropped). Returns how many files were written.
int MaterializeCat(std::string_view capture, const std::string& root);

/// Copies the directory tree `from` to `to` (symlinks kept as links).
void CopyTree(const std::string& from, const std::string& to);

}  // namespace gputriage::testing
