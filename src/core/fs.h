// Directories and files on the local filesystem: creating directories, a file's identity (what
// changes when it is replaced or edited), and writing a small file so readers never see half of it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gputriage::core {

/// Creates `path` and its missing parents with `mode` (like `mkdir -p -m`). Fails naming the
/// component that could not be created, or `path` when it exists but is not a directory.
core::Result<void> MakeDirectories(const std::string& path, unsigned mode);

/// What identifies one version of a file: device, inode, size, modification and status-change
/// times in nanoseconds. Replacing the file (a new inode) or editing it (size, mtime, ctime)
/// changes it; caches keyed by it are exact for files written by installers (dpkg, pip, rpm).
struct FileIdentity {
  uint64_t device = 0;
  uint64_t inode = 0;
  int64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  bool operator==(const FileIdentity&) const = default;
};

/// The identity of the file at `path` (stat, following links); nullopt when it cannot be read.
std::optional<FileIdentity> IdentityOf(const std::string& path);

/// Writes `text` to `path` through a temporary file in the same directory renamed over it, so a
/// reader sees the old file or the new one, never part of one. Creates missing directories with
/// mode 0700; the file gets mode 0600. Errors name the path.
core::Result<void> WriteFileAtomically(const std::string& path, std::string_view text);

/// What is at a path the user named as an output, which decides how it is written: nothing, a
/// regular file, a stream (a character device or a FIFO, or a symbolic link to one, as
/// /dev/stdout is), or anything else (`kOther`: a link to anything else, a directory, a socket, a
/// block device), never written or replaced; `what` names it then ("a symbolic link").
struct OutputPath {
  enum Kind { kAbsent, kRegular, kStream, kOther } kind = kAbsent;
  std::string what;
};
OutputPath ClassifyOutputPath(const std::string& path);

/// Writes `text` to a file the user named as an output (`report -o`, `run --json-file`, `validate
/// --junit`): a new or regular file is created or truncated (mode 0666 less the umask), never
/// through a symbolic link; a character device or a FIFO, or a link the user named that leads to
/// one (/dev/stdout), is written as a stream; a link to anything else, a directory, a socket or a
/// block device is refused, naming what it is. A short write (a full disk) is an error naming the
/// path.
core::Result<void> WriteOutputFile(const std::string& path, std::string_view text);

}  // namespace gputriage::core
