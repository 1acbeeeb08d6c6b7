// Reading whole files with a bound: configuration, /proc and /sys files, snapshots, captured
// logs. Every read is limited, so a huge or endless file (a FIFO, /dev/zero, a runaway log)
// cannot make us allocate without bound; errors name the path, the sizes and errno.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gputriage::core {

/// The contents of the file at `path`, at most `max_bytes`. Opens with O_RDONLY | O_CLOEXEC |
/// O_NOCTTY (a FIFO blocks until a writer opens it, then is read to its end). A regular file is
/// checked with fstat first: larger than `max_bytes` fails with kInvalidArgument, naming the
/// path and both sizes, before anything is read. Other files (FIFOs, /proc files, which report
/// size 0) are read up to max_bytes + 1 bytes and fail the same way when there is more.
/// kInvalidArgument is used for nothing else. A failed open or read (a directory fails its
/// read: EISDIR) is an ErrnoError naming the path: "PATH: No such file or directory",
/// "PATH: read failed after N bytes: ...". EINTR is retried.
Result<std::string> ReadFile(const std::string& path, size_t max_bytes);

/// The last `max_bytes` bytes of the file at `path` (all of it when shorter). A regular file is
/// read from max_bytes before its end (fstat's size) to its end; other files are read whole
/// keeping only the tail (memory stays below 2 * max_bytes + 64 KiB). Errors as ReadFile's,
/// never kInvalidArgument.
Result<std::string> ReadFileTail(const std::string& path, size_t max_bytes);

/// The bytes of the open descriptor `fd` from its current offset to its end, at most
/// `max_bytes` (read up to max_bytes + 1: more fails with kInvalidArgument). For standard input
/// and pipes; `name` ("standard input") starts every message. Does not close `fd`.
Result<std::string> ReadFd(int fd, std::string_view name, size_t max_bytes);

}  // namespace gputriage::core
