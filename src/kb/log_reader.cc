#include "kb/log_reader.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>
// ZSTD_d_forceIgnoreChecksum (zstd 1.4.7+, a stable parameter of the experimental section).
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include <fmt/format.h>

namespace gputriage::kb {
namespace {

// Bytes of a sniffed prefix that are not text: NUL and other control bytes (except tab, newline,
// vertical tab, form feed, carriage return, backspace and escape) and bytes of invalid UTF-8. A
// multi-byte sequence cut by the end of the prefix counts as text.
size_t NonTextBytes(std::string_view bytes) {
  size_t bad = 0;
  size_t i = 0;
  while (i < bytes.size()) {
    auto c = static_cast<unsigned char>(bytes[i]);
    if (c < 0x80) {
      bool text = c >= 0x20 ? c != 0x7f : (c >= 0x08 && c <= 0x0d) || c == 0x1b;
      if (!text) ++bad;
      ++i;
      continue;
    }
    // UTF-8: the lead byte says how many continuation bytes follow, and limits the first one
    // (no overlong forms, no surrogates, nothing above U+10FFFF).
    size_t need = 0;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
      need = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      need = 2;
      if (c == 0xe0) lo = 0xa0;
      if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      need = 3;
      if (c == 0xf0) lo = 0x90;
      if (c == 0xf4) hi = 0x8f;
    }
    size_t ok = 0;
    while (need > 0 && ok < need && i + 1 + ok < bytes.size()) {
      auto next = static_cast<unsigned char>(bytes[i + 1 + ok]);
      if (next < (ok == 0 ? lo : 0x80) || next > (ok == 0 ? hi : 0xbf)) break;
      ++ok;
    }
    bool cut_by_end = need > 0 && i + 1 + ok == bytes.size();
    if (need > 0 && (ok == need || cut_by_end)) {
      i += 1 + ok;
      continue;
    }
    ++bad;
    ++i;
  }
  return bad;
}

// NUL runs at least this long are padding, not content: what a file system leaves in a file's
// last blocks after a node crash (the size was written, the data was not), or a preallocated log.
constexpr size_t kNulPaddingRun = 512;
// How much of each piece after the judged prefix is judged again.
constexpr size_t kLaterSampleBytes = 4096;

struct TextJudgement {
  size_t judged = 0;    // bytes judged: all but NUL padding
  size_t non_text = 0;  // of those, bytes that are not text
  size_t padding = 0;   // NUL padding left out
  // Binary: more than 30% of the judged bytes are not text, or nothing but padding.
  bool Binary() const { return non_text * 10 > judged * 3 || (judged == 0 && padding > 0); }
};

// Judges `bytes` as text with NUL padding (runs of kNulPaddingRun NULs or more) left out, so a
// short log whose tail was zero-filled by a crash is judged by its text.
TextJudgement JudgeText(std::string_view bytes) {
  TextJudgement j;
  size_t start = 0;
  while (start < bytes.size()) {
    size_t nul = bytes.find(std::string_view("\0", 1), start);
    if (nul == std::string_view::npos) nul = bytes.size();
    std::string_view text = bytes.substr(start, nul - start);
    size_t run_end = bytes.find_first_not_of('\0', nul);
    if (run_end == std::string_view::npos) run_end = bytes.size();
    size_t run = run_end - nul;
    if (run >= kNulPaddingRun) {
      j.padding += run;
    } else {
      text = bytes.substr(start, run_end - start);  // short NUL runs are judged with the text
    }
    j.judged += text.size();
    j.non_text += NonTextBytes(text);
    start = run_end;
  }
  return j;
}

// Where a piece of input ends in binary data: the start of the run of kLaterSampleBytes blocks,
// counted from its end, that are each more than 30% non-text (NUL padding left out); npos when
// its last block is text (or too short to judge, under 512 bytes). Only the last block is
// looked at unless it is binary.
size_t BinarySuffix(std::string_view bytes) {
  size_t end = bytes.size();
  size_t start = std::string_view::npos;
  while (end > 0) {
    size_t begin = end > kLaterSampleBytes ? end - kLaterSampleBytes : 0;
    if (end - begin < 512) break;
    TextJudgement j = JudgeText(bytes.substr(begin, end - begin));
    if (j.non_text * 10 <= j.judged * 3) break;  // text, or nothing but padding
    start = begin;
    end = begin;
  }
  return start;
}

// Splits a byte stream into lines with bounded memory; keeps the tail of the text and, when
// asked, holds the first kSniffBytes back until they are known to be text.
class LineSplitter {
 public:
  LineSplitter(const LineSink& sink, const ReadOptions& options, ReadStats& stats, const BlockSink* blocks)
      : sink_(sink), blocks_(blocks), options_(options), stats_(stats), sniffing_(options.refuse_binary) {}

  void Push(std::string_view bytes) {
    if (stopped()) return;
    if (sniffing_) {
      size_t take = std::min(bytes.size(), kSniffBytes - sniff_.size());
      sniff_.append(bytes.substr(0, take));
      bytes.remove_prefix(take);
      if (sniff_.size() < kSniffBytes || !Decide()) return;
    }
    // Text that turns into binary data further on (a log with a core dump or random bytes
    // appended) is read up to there: each later piece's end is judged as the prefix was.
    if (options_.refuse_binary) {
      size_t suffix = BinarySuffix(bytes);
      if (suffix != std::string_view::npos) {
        Split(bytes.substr(0, suffix));
        binary_from_ = stats_.bytes;
        return;
      }
    }
    Split(bytes);
  }

  void Finish() {
    if (sniffing_) Decide();
    if (refused_) return;
    if (!line_.empty() || cutting_) Emit();
  }

  /// True when the input was found not to be text: no line was handed over, and the reader
  /// may stop reading.
  bool refused() const { return refused_; }
  /// Where text turned into binary data after the prefix was judged text (a byte offset in the
  /// text); nothing from there on is read.
  std::optional<uint64_t> binary_from() const { return binary_from_; }
  /// No more input is wanted: refused, or binary data followed the text.
  bool stopped() const { return refused_ || binary_from_.has_value(); }
  size_t sniffed_bytes() const { return judged_; }
  size_t sniffed_non_text() const { return non_text_; }

 private:
  // Decides on the sniffed prefix; false when it is not text. Text is split into lines.
  bool Decide() {
    sniffing_ = false;
    // Binary data at the end of the prefix (text with random bytes appended) is cut off first;
    // what is left is judged.
    size_t suffix = BinarySuffix(sniff_);
    std::string_view text = std::string_view(sniff_).substr(0, suffix);
    TextJudgement judged = JudgeText(suffix == 0 ? std::string_view(sniff_) : text);
    non_text_ = judged.non_text;
    judged_ = judged.judged;
    if (suffix == 0 || judged.Binary()) {
      refused_ = true;
      return false;
    }
    Split(text);
    if (suffix != std::string_view::npos) {
      binary_from_ = stats_.bytes;
      return false;
    }
    return true;
  }

  void Split(std::string_view bytes) {
    stats_.bytes += bytes.size();
    KeepTail(bytes);
    if (blocks_ != nullptr) {
      // The line begun in the previous piece first, then the whole lines in bulk.
      if (!line_.empty() || cutting_) {
        size_t nl = bytes.find('\n');
        Append(bytes.substr(0, nl));
        if (nl == std::string_view::npos) return;
        Emit();
        bytes.remove_prefix(nl + 1);
      }
      size_t last = bytes.rfind('\n');
      if (last != std::string_view::npos && bytes.size() <= options_.max_line_bytes) {
        std::string_view whole = bytes.substr(0, last + 1);
        if (whole.find('\r') == std::string_view::npos) {
          uint64_t n = CountNewlines(whole);
          if ((*blocks_)(whole, stats_.lines + 1, n)) {
            stats_.lines += n;
            bytes.remove_prefix(last + 1);
          }
        }
      }
    }
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

  void KeepTail(std::string_view bytes) {
    size_t keep = options_.keep_tail_bytes;
    if (keep == 0) return;
    if (bytes.size() >= keep) {
      stats_.tail.assign(bytes.substr(bytes.size() - keep));
      return;
    }
    stats_.tail.append(bytes);
    // Trimmed when twice the limit: each byte is moved at most once more.
    if (stats_.tail.size() > 2 * keep) stats_.tail.erase(0, stats_.tail.size() - keep);
  }

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
  const BlockSink* blocks_;
  const ReadOptions& options_;
  ReadStats& stats_;
  std::string line_;
  bool cutting_ = false;
  bool sniffing_;
  bool refused_ = false;
  std::string sniff_;
  size_t non_text_ = 0;
  size_t judged_ = 0;
  std::optional<uint64_t> binary_from_;
};

// A source of raw bytes: bytes already read (a sniffed prefix), then a descriptor or memory.
struct ByteSource {
  std::string_view prefix;
  int fd = -1;
  std::string_view memory;
  size_t offset = 0;
  const std::function<void(uint64_t)>* progress = nullptr;
  uint64_t consumed = 0;
  // Reads up to n bytes; 0 at the end, -1 on error (errno set).
  ssize_t Read(char* out, size_t n) {
    if (!prefix.empty()) {
      size_t take = std::min(n, prefix.size());
      std::memcpy(out, prefix.data(), take);
      prefix.remove_prefix(take);
      return static_cast<ssize_t>(take);
    }
    if (fd < 0) {
      size_t take = std::min(n, memory.size() - offset);
      std::memcpy(out, memory.data() + offset, take);
      offset += take;
      return static_cast<ssize_t>(take);
    }
    while (true) {
      ssize_t got = read(fd, out, n);
      if (got < 0 && errno == EINTR) continue;
      if (got > 0 && progress != nullptr && *progress) {
        consumed += static_cast<uint64_t>(got);
        (*progress)(consumed);
      }
      return got;
    }
  }
};

// A compressed stream found damaged: what (and the decoder's word), said with the amount of text
// read before it once the reader is done.
struct Damage {
  std::string what;
  std::string detail;
};

core::Error ReadError(std::string_view name, uint64_t offset) {
  return core::ErrnoError(errno, "{}: read failed after {} bytes", name, offset);
}

core::Result<void> Plain(ByteSource& src, std::string_view name, LineSplitter& lines, std::vector<char>& buf,
                         std::string_view first, ReadStats& stats) {
  lines.Push(first);
  while (!lines.stopped()) {
    ssize_t n = src.Read(buf.data(), buf.size());
    if (n < 0) return ReadError(name, stats.bytes);
    if (n == 0) return {};
    lines.Push(std::string_view(buf.data(), static_cast<size_t>(n)));
  }
  return {};
}

// Inflates into `lines`; damage (a corrupt or truncated stream) goes to stats.damage after the
// lines before it.
core::Result<void> Gzip(ByteSource& src, std::string_view name, LineSplitter& lines, std::vector<char>& buf,
                        size_t out_bytes, std::string first, ReadStats& stats, Damage& damage) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK) return core::MakeError("{}: zlib: cannot initialise", name);
  std::vector<char> out(out_bytes);
  std::string input = std::move(first);
  bool eof = false;
  int rc = Z_OK;
  while (!lines.stopped()) {
    if (input.empty() && !eof) {
      ssize_t n = src.Read(buf.data(), buf.size());
      if (n < 0) {
        inflateEnd(&z);
        return ReadError(name, stats.bytes);
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
      // What this call inflated is text even when the call then fails: a bad checksum in the
      // trailer comes after the member's last bytes were written out.
      lines.Push(std::string_view(out.data(), out.size() - z.avail_out));
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
        damage = {"corrupt gzip stream", z.msg ? z.msg : "inflate failed"};
        inflateEnd(&z);
        return {};
      }
      if (rc == Z_STREAM_END) {
        // Concatenated gzip members (as `cat a.gz b.gz` makes) continue.
        inflateReset(&z);
        if (z.avail_in == 0) break;
      }
    } while (!lines.stopped() && (z.avail_out == 0 || (rc == Z_STREAM_END && z.avail_in > 0)));
    input.erase(0, input.size() - z.avail_in);
    if (rc == Z_BUF_ERROR && z.avail_in == 0 && eof) break;
  }
  bool ended = rc == Z_STREAM_END || (z.total_in == 0 && z.total_out == 0) || lines.stopped();
  inflateEnd(&z);
  if (!ended) damage = {"truncated gzip stream", ""};
  return {};
}

// Decodes into `lines` with the frame checksum ignored, so that the last block is handed over
// even when the checksum is wrong (the decoder withholds a block whose checksum fails: a log's
// last lines, where its error is); a second decoder over the same input checks the checksum
// and reports a mismatch as damage after the text.
core::Result<void> Zstd(ByteSource& src, std::string_view name, LineSplitter& lines, std::vector<char>& buf,
                        std::string first, ReadStats& stats, Damage& damage) {
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> verify(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!dctx || !verify) return core::MakeError("{}: zstd: cannot initialise", name);
  bool checking = !ZSTD_isError(ZSTD_DCtx_setParameter(dctx.get(), ZSTD_d_forceIgnoreChecksum, ZSTD_d_ignoreChecksum));
  std::vector<char> out(ZSTD_DStreamOutSize());
  std::vector<char> scratch(checking ? ZSTD_DStreamOutSize() : 0);
  std::string checksum_error;
  // The verifier consumes `in` to its end; false once it found an error (it stops checking).
  auto check = [&](ZSTD_inBuffer in) {
    while (checking) {
      ZSTD_outBuffer o{scratch.data(), scratch.size(), 0};
      size_t r = ZSTD_decompressStream(verify.get(), &o, &in);
      if (ZSTD_isError(r)) {
        checksum_error = ZSTD_getErrorName(r);
        checking = false;
      }
      if (in.pos >= in.size && o.pos < o.size) return;
    }
  };
  std::string input = std::move(first);
  size_t last = 0;
  bool any = false;
  while (!lines.stopped()) {
    if (input.empty()) {
      ssize_t n = src.Read(buf.data(), buf.size());
      if (n < 0) return ReadError(name, stats.bytes);
      if (n == 0) break;
      input.assign(buf.data(), static_cast<size_t>(n));
    }
    ZSTD_inBuffer in{input.data(), input.size(), 0};
    check(in);
    while (in.pos < in.size && !lines.stopped()) {
      ZSTD_outBuffer o{out.data(), out.size(), 0};
      last = ZSTD_decompressStream(dctx.get(), &o, &in);
      lines.Push(std::string_view(out.data(), o.pos));
      if (ZSTD_isError(last)) {
        damage = {"corrupt zstd stream", ZSTD_getErrorName(last)};
        return {};
      }
      any = true;
    }
    input.clear();
  }
  // Flush what the decoders still hold.
  while (any && !lines.stopped()) {
    ZSTD_inBuffer in{nullptr, 0, 0};
    ZSTD_outBuffer o{out.data(), out.size(), 0};
    size_t r = ZSTD_decompressStream(dctx.get(), &o, &in);
    if (ZSTD_isError(r) || o.pos == 0) break;
    lines.Push(std::string_view(out.data(), o.pos));
    last = r;
  }
  if (any) check(ZSTD_inBuffer{nullptr, 0, 0});
  if (!checksum_error.empty()) {
    damage = {"corrupt zstd stream", checksum_error};
  } else if (last != 0 && !lines.stopped()) {
    damage = {"truncated zstd stream", ""};
  }
  return {};
}

bool HasMagic(std::string_view bytes, std::string_view magic) {
  return bytes.size() >= magic.size() && bytes.substr(0, magic.size()) == magic;
}

core::Result<ReadStats> ReadFrom(ByteSource& src, std::string_view name, const LineSink& sink,
                                 const ReadOptions& options, const BlockSink* blocks = nullptr) {
  ReadStats stats;
  LineSplitter lines(sink, options, stats, blocks);
  // Text already in memory is read in one chunk no larger than itself: a 200-byte stderr tail is
  // not given a zeroed 1 MiB buffer (analyze and report read several such texts per bundle).
  const size_t chunk_bytes = std::max<size_t>(1, options.chunk_bytes);
  std::vector<char> buf(src.fd < 0 ? std::min(chunk_bytes, std::max<size_t>(1, src.memory.size())) : chunk_bytes);
  // The first bytes decide the format.
  ssize_t n = src.Read(buf.data(), buf.size());
  if (n < 0) return ReadError(name, 0);
  std::string first(buf.data(), static_cast<size_t>(n));
  core::Result<void> done;
  Damage damage;
  if (HasMagic(first, "\x1f\x8b")) {
    stats.compression = "gzip";
    // Inflated text comes out in pieces of at most 64 KiB, whatever the input's chunk.
    done = Gzip(src, name, lines, buf, std::min<size_t>(chunk_bytes, 64u << 10), std::move(first), stats, damage);
  } else if (HasMagic(first, "\x28\xb5\x2f\xfd")) {
    stats.compression = "zstd";
    done = Zstd(src, name, lines, buf, std::move(first), stats, damage);
  } else {
    stats.compression = "none";
    done = Plain(src, name, lines, buf, first, stats);
  }
  if (!done.ok()) return done.error();
  lines.Finish();
  // Said after Finish: the text held back while it was judged counts (a damaged stream of less
  // than kSniffBytes of text was "after 0 bytes").
  if (!damage.what.empty()) {
    stats.damage = fmt::format("{}: {} after {} bytes of text{}{}", name, damage.what, stats.bytes,
                               damage.detail.empty() ? "" : ": ", damage.detail);
  } else if (lines.binary_from()) {
    stats.damage = fmt::format(
        "{}: binary data from byte {} of the text on (not read as log lines; the text before it "
        "was)",
        name, *lines.binary_from());
  }
  if (stats.tail.size() > options.keep_tail_bytes) stats.tail.erase(0, stats.tail.size() - options.keep_tail_bytes);
  if (lines.refused() && lines.sniffed_bytes() == 0) {
    return core::MakeErrorCode(core::ErrorCode::kInvalidArgument, "{}: not a log (nothing but NUL bytes{})", name,
                               stats.compression == "none" ? "" : " in its text");
  }
  if (lines.refused()) {
    return core::MakeErrorCode(core::ErrorCode::kInvalidArgument,
                               "{}: not a log (binary data: {}% of its first {} bytes{} are NUL, control bytes or "
                               "invalid UTF-8)",
                               name, lines.sniffed_non_text() * 100 / std::max<size_t>(1, lines.sniffed_bytes()),
                               lines.sniffed_bytes(), stats.compression == "none" ? "" : " of text");
  }
  return stats;
}

}  // namespace

uint64_t CountNewlines(std::string_view text) {
  constexpr uint64_t kOnes = 0x0101010101010101ull, kLow7 = 0x7f7f7f7f7f7f7f7full;
  uint64_t n = 0;
  size_t i = 0;
  for (; i + 8 <= text.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, text.data() + i, 8);
    uint64_t x = word ^ (kOnes * '\n');  // a zero byte where a newline was
    // The high bit of each byte set exactly when that byte of x is zero.
    uint64_t zero = ~(((x & kLow7) + kLow7) | x | kLow7);
    n += ((zero >> 7) * kOnes) >> 56;  // the sum of the eight 0/1 bytes (no popcnt on baseline x86-64)
  }
  for (; i < text.size(); ++i) n += text[i] == '\n';
  return n;
}

bool LooksBinary(std::string_view prefix) { return JudgeText(prefix).Binary(); }

core::Result<ReadStats> ReadLines(const std::string& path, const LineSink& sink, const ReadOptions& options) {
  if (path == "-") return ReadLinesFromFd(STDIN_FILENO, "", "stdin", sink, options);
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return core::MakeError("{}: {}", path, std::strerror(errno));
  auto result = ReadLinesFromFd(fd, "", path, sink, options);
  close(fd);
  return result;
}

core::Result<ReadStats> ReadLinesFromFd(int fd, std::string_view prefix, std::string_view name, const LineSink& sink,
                                        const ReadOptions& options, const BlockSink* blocks) {
  ByteSource src;
  src.prefix = prefix;
  src.fd = fd;
  src.progress = &options.progress;
  src.consumed = prefix.size();
  return ReadFrom(src, name, sink, options, blocks);
}

core::Result<ReadStats> ReadLinesFromMemory(std::string_view bytes, std::string_view name, const LineSink& sink,
                                            const ReadOptions& options) {
  ByteSource src;
  src.memory = bytes;
  return ReadFrom(src, name, sink, options);
}

}  // namespace gputriage::kb
