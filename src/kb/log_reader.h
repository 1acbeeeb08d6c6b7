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
  /// Empty, or what ended a compressed stream early, naming the input ("job.log.gz: truncated
  /// gzip stream after 1048576 bytes of text"): the lines before the damage were handed to the
  /// sink, so the read still succeeds.
  std::string damage;
  /// The last ReadOptions::keep_tail_bytes of the decoded text, byte for byte.
  std::string tail;
};

struct ReadOptions {
  size_t max_line_bytes = 1 << 20;
  size_t chunk_bytes = 1 << 20;
  size_t keep_tail_bytes = 0;  ///< see ReadStats::tail
  /// Refuse input that is not text: the first kSniffBytes of decoded text are looked at before
  /// any line is handed over, and the read fails (kInvalidArgument, nothing handed to the sink)
  /// when LooksBinary says so. Endless inputs such as /dev/zero stop there.
  bool refuse_binary = false;
  /// Called after each read from a descriptor with the raw bytes consumed so far (compressed
  /// bytes for a compressed log): for a progress display. Not called for text in memory.
  std::function<void(uint64_t raw_bytes)> progress;
};

/// How much decoded text LooksBinary is shown before any line is handed over.
inline constexpr size_t kSniffBytes = 64u << 10;

/// True when `prefix` (the first bytes of an input, decoded) is not a log: more than 30% of it
/// is NUL or other control bytes (tab, newline, carriage return, form feed, vertical tab,
/// backspace and escape are text) or bytes of invalid UTF-8. A log with a few stray NUL bytes or
/// Latin-1 characters is text; random bytes, /dev/zero, an executable or UTF-16 are not. Runs of
/// 512 NULs or more are padding (a crash leaves a file's last blocks zero-filled) and are left
/// out of the judgement. After the prefix, a sample of each later piece is judged the same way:
/// where the text turns into binary data the reader stops, and ReadStats::damage says where.
bool LooksBinary(std::string_view prefix);

/// Receives each line without its "\n" (and without a "\r" before it), 1-based numbers.
using LineSink = std::function<void(std::string_view line, uint64_t number)>;

/// Optional bulk path: `text` holds `lines` whole lines, each ending in '\n' (none holds '\r',
/// none is longer than ReadOptions::max_line_bytes), the first numbered `first`. Returns false to
/// have them handed to the LineSink one by one instead.
using BlockSink = std::function<bool(std::string_view text, uint64_t first, uint64_t lines)>;

/// The number of '\n' bytes in `text` (eight bytes at a time).
uint64_t CountNewlines(std::string_view text);

/// Streams the file at `path` ("-" is stdin) into `sink`. Fails naming the path when it cannot
/// be opened or read, and (options.refuse_binary) when it is not text: "PATH: not a log (binary
/// data: 87% of its first 65536 bytes are NUL, control bytes or invalid UTF-8)". A compressed
/// stream that is corrupt or truncated is not a failure: the lines before the damage are handed
/// to the sink and ReadStats::damage says what happened.
core::Result<ReadStats> ReadLines(const std::string& path, const LineSink& sink, const ReadOptions& options = {});

/// The same from the open descriptor `fd` (not closed), whose first bytes `prefix` were already
/// read from it (to sniff a core file): they are read as the start of the stream, so a pipe's
/// bytes are read once. `name` starts every message.
core::Result<ReadStats> ReadLinesFromFd(int fd, std::string_view prefix, std::string_view name, const LineSink& sink,
                                        const ReadOptions& options = {}, const BlockSink* blocks = nullptr);

/// The same over bytes in memory (tests, fuzzing).
core::Result<ReadStats> ReadLinesFromMemory(std::string_view bytes, std::string_view name, const LineSink& sink,
                                            const ReadOptions& options = {});

}  // namespace gputriage::kb
