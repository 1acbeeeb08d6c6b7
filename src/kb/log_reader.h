// Reading logs as a stream of lines, whatever they are: plain text, gzip or zstd (detected by
// their magic bytes), CRLF or LF, NUL bytes, invalid UTF-8, lines of any length. Memory stays
// bounded: a line longer than the limit is cut (its first `max_line_bytes` are kept) and the
// rest of it is skipped, counted in the stats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gputriage::kb {

struct ReadStats {
  uint64_t bytes = 0;  ///< decompressed bytes read
  uint64_t lines = 0;
  uint64_t cut_lines = 0;   ///< lines longer than the limit
  std::string compression;  ///< "none", "gzip", "zstd"
};

struct ReadOptions {
  size_t max_line_bytes = 1 << 20;
  size_t chunk_bytes = 1 << 20;
};

/// Receives each line without its "\n" (and without a "\r" before it), 1-based numbers.
using LineSink = std::function<void(std::string_view line, uint64_t number)>;

/// Streams the file at `path` ("-" is stdin) into `sink`. Fails naming the path when it cannot
/// be opened or read, or when a compressed stream is corrupt or truncated ("job.log.gz:
/// truncated gzip stream after 1048576 bytes") — the lines before the damage have been handed
/// to the sink by then.
core::Result<ReadStats> ReadLines(const std::string& path, const LineSink& sink, const ReadOptions& options = {});

/// The same over bytes in memory (tests, fuzzing).
core::Result<ReadStats> ReadLinesFromMemory(std::string_view bytes, std::string_view name, const LineSink& sink,
                                            const ReadOptions& options = {});

}  // namespace gputriage::kb
