#include "kb/log_reader.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace gputriage::kb {
namespace {

// Splits a byte stream into lines with bounded memory.
class LineSplitter {
 public:
  LineSplitter(const LineSink& sink, const ReadOptions& options, ReadStats& stats)
      : sink_(sink), options_(options), stats_(stats) {}

  void Push(std::string_view bytes) {
    stats_.bytes += bytes.size();
    while (!bytes.empty()) {
      size_t nl = bytes.find('\n');
      std::string_view piece = bytes.substr(0, nl);
      if (nl != std::string_view::npos && line_.empty() && !cutting_ && piece.size() <= options_.max_line_bytes) {
        // The whole line is in this chunk: hand it over without copying.
        EmitView(piece, false);
        bytes.remove_prefix(nl + 1);
        continue;
      }
      Append(piece);
      if (nl == std::string_view::npos) return;
      Emit();
      bytes.remove_prefix(nl + 1);
    }
  }

  void Finish() {
    if (!line_.empty() || cutting_) Emit();
  }

 private:
  void Append(std::string_view piece) {
    if (cutting_) return;
    size_t room = options_.max_line_bytes - line_.size();
    if (piece.size() > room) {
      line_.append(piece.substr(0, room));
      cutting_ = true;
      return;
    }
    line_.append(piece);
  }

  void Emit() {
    EmitView(line_, cutting_);
    line_.clear();
    cutting_ = false;
  }

  void EmitView(std::string_view line, bool cut) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ++stats_.lines;
    if (cut) ++stats_.cut_lines;
    sink_(line, stats_.lines);
  }

  const LineSink& sink_;
  const ReadOptions& options_;
  ReadStats& stats_;
  std::string line_;
  bool cutting_ = false;
};

// A source of raw bytes: a descriptor, or memory.
struct ByteSource {
  int fd = -1;
  std::string_view memory;
  size_t offset = 0;
  // Reads up to n bytes; 0 at the end, -1 on error (errno set).
  ssize_t Read(char* out, size_t n) {
    if (fd < 0) {
      size_t take = std::min(n, memory.size() - offset);
      std::memcpy(out, memory.data() + offset, take);
      offset += take;
      return static_cast<ssize_t>(take);
    }
    while (true) {
      ssize_t got = read(fd, out, n);
      if (got < 0 && errno == EINTR) continue;
      return got;
    }
  }
};

core::Result<void> Plain(ByteSource& src, std::string_view name, LineSplitter& lines, std::vector<char>& buf,
                         std::string_view first) {
  lines.Push(first);
  while (true) {
    ssize_t n = src.Read(buf.data(), buf.size());
    if (n < 0) return core::MakeError("{}: read: {}", name, std::strerror(errno));
    if (n == 0) return {};
    lines.Push(std::string_view(buf.data(), static_cast<size_t>(n)));
  }
}

core::Result<void> Gzip(ByteSource& src, std::string_view name, LineSplitter& lines, std::vector<char>& buf,
                        std::string first, ReadStats& stats) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK) return core::MakeError("{}: zlib: cannot initialise", name);
  std::vector<char> out(buf.size());
  std::string input = std::move(first);
  bool eof = false;
  int rc = Z_OK;
  while (true) {
    if (input.empty() && !eof) {
      ssize_t n = src.Read(buf.data(), buf.size());
      if (n < 0) {
        inflateEnd(&z);
        return core::MakeError("{}: read: {}", name, std::strerror(errno));
      }
      if (n == 0) eof = true;
      input.assign(buf.data(), static_cast<size_t>(n));
    }
    if (input.empty() && eof) break;
    z.next_in = reinterpret_cast<Bytef*>(input.data());
    z.avail_in = static_cast<uInt>(input.size());
    do {
      z.next_out = reinterpret_cast<Bytef*>(out.data());
      z.avail_out = static_cast<uInt>(out.size());
      rc = inflate(&z, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
        inflateEnd(&z);
        lines.Finish();
        return core::MakeError("{}: corrupt gzip stream after {} bytes: {}", name, stats.bytes,
                               z.msg ? z.msg : "inflate failed");
      }
      lines.Push(std::string_view(out.data(), out.size() - z.avail_out));
      if (rc == Z_STREAM_END) {
        // Concatenated gzip members (as `cat a.gz b.gz` makes) continue.
        inflateReset(&z);
        if (z.avail_in == 0) break;
      }
    } while (z.avail_out == 0 || (rc == Z_STREAM_END && z.avail_in > 0));
    input.erase(0, input.size() - z.avail_in);
    if (rc == Z_BUF_ERROR && z.avail_in == 0 && eof) break;
  }
  bool ended = rc == Z_STREAM_END || (z.total_in == 0 && z.total_out == 0);
  inflateEnd(&z);
  if (!ended) {
    lines.Finish();
    return core::MakeError("{}: truncated gzip stream after {} bytes of text", name, stats.bytes);
  }
  return {};
}

core::Result<void> Zstd(ByteSource& src, std::string_view name, LineSplitter& lines, std::vector<char>& buf,
                        std::string first, ReadStats& stats) {
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  if (!dctx) return core::MakeError("{}: zstd: cannot initialise", name);
  std::vector<char> out(ZSTD_DStreamOutSize());
  std::string input = std::move(first);
  size_t last = 0;
  bool any = false;
  while (true) {
    if (input.empty()) {
      ssize_t n = src.Read(buf.data(), buf.size());
      if (n < 0) {
        ZSTD_freeDCtx(dctx);
        return core::MakeError("{}: read: {}", name, std::strerror(errno));
      }
      if (n == 0) break;
      input.assign(buf.data(), static_cast<size_t>(n));
    }
    ZSTD_inBuffer in{input.data(), input.size(), 0};
    while (in.pos < in.size) {
      ZSTD_outBuffer o{out.data(), out.size(), 0};
      last = ZSTD_decompressStream(dctx, &o, &in);
      if (ZSTD_isError(last)) {
        ZSTD_freeDCtx(dctx);
        lines.Finish();
        return core::MakeError("{}: corrupt zstd stream after {} bytes of text: {}", name, stats.bytes,
                               ZSTD_getErrorName(last));
      }
      any = true;
      lines.Push(std::string_view(out.data(), o.pos));
    }
    input.clear();
  }
  // Flush what the decoder still holds.
  while (any) {
    ZSTD_inBuffer in{nullptr, 0, 0};
    ZSTD_outBuffer o{out.data(), out.size(), 0};
    size_t r = ZSTD_decompressStream(dctx, &o, &in);
    if (ZSTD_isError(r) || o.pos == 0) break;
    lines.Push(std::string_view(out.data(), o.pos));
    last = r;
  }
  ZSTD_freeDCtx(dctx);
  if (last != 0) {
    lines.Finish();
    return core::MakeError("{}: truncated zstd stream after {} bytes of text", name, stats.bytes);
  }
  return {};
}

core::Result<ReadStats> ReadFrom(ByteSource& src, std::string_view name, const LineSink& sink,
                                 const ReadOptions& options) {
  ReadStats stats;
  LineSplitter lines(sink, options, stats);
  std::vector<char> buf(options.chunk_bytes);
  // The first bytes decide the format.
  ssize_t n = src.Read(buf.data(), buf.size());
  if (n < 0) return core::MakeError("{}: read: {}", name, std::strerror(errno));
  std::string first(buf.data(), static_cast<size_t>(n));
  core::Result<void> done;
  if (first.size() >= 2 && static_cast<unsigned char>(first[0]) == 0x1f &&
      static_cast<unsigned char>(first[1]) == 0x8b) {
    stats.compression = "gzip";
    done = Gzip(src, name, lines, buf, std::move(first), stats);
  } else if (first.size() >= 4 && static_cast<unsigned char>(first[0]) == 0x28 &&
             static_cast<unsigned char>(first[1]) == 0xb5 && static_cast<unsigned char>(first[2]) == 0x2f &&
             static_cast<unsigned char>(first[3]) == 0xfd) {
    stats.compression = "zstd";
    done = Zstd(src, name, lines, buf, std::move(first), stats);
  } else {
    stats.compression = "none";
    done = Plain(src, name, lines, buf, first);
  }
  if (!done.ok()) return done.error();
  lines.Finish();
  return stats;
}

}  // namespace

core::Result<ReadStats> ReadLines(const std::string& path, const LineSink& sink, const ReadOptions& options) {
  ByteSource src;
  bool stdin_input = path == "-";
  src.fd = stdin_input ? STDIN_FILENO : open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (src.fd < 0) return core::MakeError("{}: {}", path, std::strerror(errno));
  auto result = ReadFrom(src, stdin_input ? "stdin" : path, sink, options);
  if (!stdin_input) close(src.fd);
  return result;
}

core::Result<ReadStats> ReadLinesFromMemory(std::string_view bytes, std::string_view name, const LineSink& sink,
                                            const ReadOptions& options) {
  ByteSource src;
  src.memory = bytes;
  return ReadFrom(src, name, sink, options);
}

}  // namespace gputriage::kb
