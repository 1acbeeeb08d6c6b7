// Streaming zstd for files too large to hold in memory: `run --core` compresses the core it wrote
// (core.zst), `analyze` decompresses a zstd core (ours, or systemd-coredump's
// /var/lib/systemd/coredump/core.*.zst) to a private temp file before reading it as an ELF core.
// Memory stays bounded by zstd's window (at most 128 MiB for a window we accept, 8 MiB for what
// zstd -3 writes), whatever the size of the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gputriage::pack {

/// A stream of bytes: fills up to `n` bytes of `buf` and returns how many (0 at the end). Errors
/// name the stream.
using ByteSource = std::function<core::Result<size_t>(char* buf, size_t n)>;

/// The stream of `prefix` (bytes already read from `fd`, e.g. to sniff its format), then the rest
/// of `fd`, read to its end. `fd` stays the caller's; `name` starts the read errors' messages.
ByteSource PrefixThenFd(std::string prefix, int fd, std::string name);

/// The stream of `bytes` (tests, fuzzing). `bytes` must outlive the source.
ByteSource FromMemory(std::string_view bytes);

/// True when `bytes` starts with the zstd frame magic (28 b5 2f fd).
bool HasZstdMagic(std::string_view bytes);

/// The first `want` bytes (fewer when the data ends first) that the zstd stream whose first bytes
/// are `compressed` decompresses to. Damage after them is not noticed: for sniffing what a .zst
/// holds. Empty when `compressed` is not zstd or is damaged before any output.
std::string PeekZstd(std::string_view compressed, size_t want);

struct ZstdCopyStats {
  uint64_t in_bytes = 0;
  uint64_t out_bytes = 0;
  /// DecompressZstd stopped at the extent `extent_of` gave; what followed was not decompressed.
  bool stopped_at_extent = false;
};

/// How many bytes of a decompressed output are worth writing, judged from its first bytes
/// (`head`: kExtentHeadBytes, or all of the output when it is shorter); nullopt: all of it.
using ExtentOf = std::function<std::optional<uint64_t>(std::string_view head)>;
inline constexpr size_t kExtentHeadBytes = 4u << 20;

/// Compresses `in_fd` (read to its end) into `out_fd` as one zstd frame at `level` (3: about
/// 300 MB/s per core, what `zstd` uses by default), with the input size in the frame header when
/// `in_fd` is a regular file. Fails naming `in_name` or `out_name` on a read or write error.
core::Result<ZstdCopyStats> CompressZstd(int in_fd, int out_fd, int level, std::string_view in_name,
                                         std::string_view out_name);

/// Decompresses the zstd stream `source` (one or more frames) into `out_fd`. Fails, naming
/// `name`, with kInvalidArgument when it is not zstd or damaged ("NAME: corrupt zstd data after
/// N bytes of output: ..."), truncated ("NAME: truncated zstd stream after N bytes of output"),
/// or would decompress to more than `max_out_bytes` ("NAME: decompresses to more than N bytes
/// ..."); with the errno on a read or write error (`out_name` names the output).
/// With `extent_of`, the output stops (without an error, `stopped_at_extent`) at the extent it
/// gives once the first kExtentHeadBytes are decompressed: an ELF core is written only as far as
/// its headers describe.
core::Result<ZstdCopyStats> DecompressZstd(const ByteSource& source, int out_fd, uint64_t max_out_bytes,
                                           std::string_view name, std::string_view out_name,
                                           const ExtentOf& extent_of = nullptr);

/// A private directory (mode 0700) under $TMPDIR (else /tmp), removed with everything in it when
/// this object goes. For decompressed inputs nobody else should read.
class PrivateTempDir {
 public:
  /// Creates it; fails naming the parent directory.
  static core::Result<PrivateTempDir> Create(std::string_view prefix);
  PrivateTempDir(PrivateTempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  PrivateTempDir& operator=(PrivateTempDir&&) = delete;
  PrivateTempDir(const PrivateTempDir&) = delete;
  ~PrivateTempDir();
  const std::string& path() const { return path_; }

 private:
  explicit PrivateTempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace gputriage::pack
