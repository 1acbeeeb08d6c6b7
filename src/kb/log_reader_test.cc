#include "kb/log_reader.h"

#include "core/text.h"

#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <gtest/gtest.h>

namespace gputriage::kb {
namespace {

struct Collected {
  std::vector<std::string> lines;
  core::Result<ReadStats> stats = core::MakeError("not run");
};

Collected Read(std::string_view bytes, ReadOptions options = {}) {
  Collected c;
  c.stats = ReadLinesFromMemory(
      bytes, "test.log",
      [&](std::string_view line, uint64_t n) {
        EXPECT_EQ(n, c.lines.size() + 1);
        c.lines.emplace_back(line);
      },
      options);
  return c;
}

std::string Gzip(std::string_view text) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(compressBound(text.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string Zstd(std::string_view text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  out.resize(ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3));
  return out;
}

TEST(LogReader, CrlfNulInvalidUtf8AndNoFinalNewline) {
  std::string text = std::string("first\r\nsec\0nd\n\xff\xfe bad utf8\nlast", 30);
  auto c = Read(text);
  ASSERT_TRUE(c.stats.ok());
  ASSERT_EQ(c.lines.size(), 4u);
  EXPECT_EQ(c.lines[0], "first");
  EXPECT_EQ(c.lines[1], std::string("sec\0nd", 6));
  EXPECT_EQ(c.lines[2], "\xff\xfe bad utf8");
  EXPECT_EQ(c.lines[3], "last");
  EXPECT_EQ(c.stats->compression, "none");
  EXPECT_EQ(c.stats->bytes, text.size());
}

TEST(LogReader, LongLinesAreCutWithBoundedMemory) {
  std::string text = std::string(5000, 'x') + "\nshort\n" + std::string(100, 'y');
  ReadOptions options;
  options.max_line_bytes = 64;
  options.chunk_bytes = 100;
  auto c = Read(text, options);
  ASSERT_TRUE(c.stats.ok());
  ASSERT_EQ(c.lines.size(), 3u);
  EXPECT_EQ(c.lines[0], std::string(64, 'x'));
  EXPECT_EQ(c.lines[1], "short");
  EXPECT_EQ(c.lines[2], std::string(64, 'y'));
  EXPECT_EQ(c.stats->cut_lines, 2u);
}

TEST(LogReader, GzipAndZstdAreDetected) {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "line " + std::to_string(i) + "\n";
  auto gz = Read(Gzip(text));
  ASSERT_TRUE(gz.stats.ok()) << gz.stats.error().message;
  EXPECT_EQ(gz.stats->compression, "gzip");
  ASSERT_EQ(gz.lines.size(), 20000u);
  EXPECT_EQ(gz.lines[19999], "line 19999");
  auto zs = Read(Zstd(text));
  ASSERT_TRUE(zs.stats.ok()) << zs.stats.error().message;
  EXPECT_EQ(zs.stats->compression, "zstd");
  EXPECT_EQ(zs.lines.size(), 20000u);
  // Two gzip members back to back, as `cat a.gz b.gz` makes.
  auto two = Read(Gzip("a\n") + Gzip("b\n"));
  ASSERT_TRUE(two.stats.ok());
  EXPECT_EQ(two.lines, (std::vector<std::string>{"a", "b"}));
}

// Failed before: a truncated or corrupt compressed log was an error, so `analyze` gave no
// analysis at all although the lines before the damage had been decoded.
TEST(LogReader, TruncatedCompressedInputKeepsTheGoodLinesAndSaysWhatHappened) {
  std::string text;
  for (int i = 0; i < 50000; ++i) text += "line " + std::to_string(i) + " of a long log\n";
  std::string gz = Gzip(text);
  auto cut = Read(std::string_view(gz).substr(0, gz.size() / 2));
  ASSERT_TRUE(cut.stats.ok()) << cut.stats.error().message;
  EXPECT_EQ(cut.stats->damage.rfind("test.log: truncated gzip stream after ", 0), 0u) << cut.stats->damage;
  EXPECT_GT(cut.lines.size(), 1000u);
  EXPECT_EQ(cut.lines[1000], "line 1000 of a long log");
  EXPECT_EQ(cut.stats->lines, cut.lines.size());
  std::string zs = Zstd(text);
  auto zcut = Read(std::string_view(zs).substr(0, zs.size() / 2));
  ASSERT_TRUE(zcut.stats.ok()) << zcut.stats.error().message;
  EXPECT_EQ(zcut.stats->damage.rfind("test.log: truncated zstd stream after ", 0), 0u) << zcut.stats->damage;
  EXPECT_GT(zcut.lines.size(), 1000u);
  std::string garbage = gz;
  for (size_t i = 20; i < 200; ++i) garbage[i] = static_cast<char>(i * 7);
  auto bad = Read(garbage);
  ASSERT_TRUE(bad.stats.ok());
  EXPECT_EQ(bad.stats->damage.rfind("test.log: corrupt gzip stream after ", 0), 0u) << bad.stats->damage;
  // Whole streams say nothing.
  EXPECT_EQ(Read(gz).stats->damage, "");
  EXPECT_EQ(Read(zs).stats->damage, "");
}

// Failed before: random bytes were read as a log and classified ("numerical, 0.55").
TEST(LogReader, BinaryInputIsRefusedBeforeAnyLine) {
  std::string random;
  uint32_t x = 2463534242u;
  for (int i = 0; i < 200000; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    random.push_back(static_cast<char>(x >> 24));
  }
  ReadOptions refuse;
  refuse.refuse_binary = true;
  auto c = Read(random, refuse);
  ASSERT_FALSE(c.stats.ok());
  EXPECT_EQ(c.stats.error().code, core::ErrorCode::kInvalidArgument);
  EXPECT_EQ(c.stats.error().message.rfind("test.log: not a log (binary data: ", 0), 0u) << c.stats.error().message;
  EXPECT_NE(c.stats.error().message.find("% of its first 65536 bytes are NUL, control bytes or invalid UTF-8)"),
            std::string::npos)
      << c.stats.error().message;
  EXPECT_TRUE(c.lines.empty());
  // All NUL (what /dev/zero gives), gzip-compressed too.
  auto zeros = Read(Gzip(std::string(100000, '\0')), refuse);
  ASSERT_FALSE(zeros.stats.ok());
  EXPECT_NE(zeros.stats.error().message.find("100% of its first 65536 bytes of text are NUL"), std::string::npos)
      << zeros.stats.error().message;
  // Text with stray NUL bytes, Latin-1, ANSI colours and UTF-8 is a log; a short one too.
  std::string text;
  for (int i = 0; i < 3000; ++i) text += "\x1b[31mstep " + std::to_string(i) + " caf\xe9 \xc3\xa9t\xc3\xa9 \t ok\r\n";
  text[100] = '\0';
  auto t = Read(text, refuse);
  ASSERT_TRUE(t.stats.ok()) << t.stats.error().message;
  EXPECT_EQ(t.lines.size(), 3000u);
  EXPECT_EQ(t.stats->bytes, text.size());
  auto small = Read("RuntimeError: CUDA error\n", refuse);
  ASSERT_TRUE(small.stats.ok());
  EXPECT_EQ(small.lines, (std::vector<std::string>{"RuntimeError: CUDA error"}));
  EXPECT_TRUE(LooksBinary(std::string(10, '\0')));
  EXPECT_FALSE(LooksBinary(""));
  EXPECT_FALSE(LooksBinary("\xe2\x82"));  // a sequence cut by the end of the prefix
}

TEST(LogReader, KeepsTheTailOfTheDecodedText) {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "line " + std::to_string(i) + "\r\n";
  ReadOptions options;
  options.keep_tail_bytes = 1000;
  options.chunk_bytes = 777;
  auto plain = Read(text, options);
  ASSERT_TRUE(plain.stats.ok());
  EXPECT_EQ(plain.stats->tail, text.substr(text.size() - 1000));
  auto gz = Read(Gzip(text), options);
  ASSERT_TRUE(gz.stats.ok());
  EXPECT_EQ(gz.stats->tail, text.substr(text.size() - 1000));
  options.keep_tail_bytes = 1 << 20;
  EXPECT_EQ(Read(text, options).stats->tail, text);
}

// The bytes sniffed from a pipe are the start of the stream: nothing is read twice or lost.
TEST(LogReader, APrefixAlreadyReadComesFirst) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::string rest = "second line\nthird\n";
  ASSERT_EQ(write(fds[1], rest.data(), rest.size()), static_cast<ssize_t>(rest.size()));
  close(fds[1]);
  std::vector<std::string> lines;
  auto stats =
      ReadLinesFromFd(fds[0], "first li", "pipe", [&](std::string_view line, uint64_t) { lines.emplace_back(line); });
  close(fds[0]);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(lines, (std::vector<std::string>{"first lisecond line", "third"}));
}

TEST(LogReader, MissingFileNamesIt) {
  auto r = ReadLines("/nonexistent/job.log", [](std::string_view, uint64_t) {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "/nonexistent/job.log: No such file or directory");
}

TEST(LogReader, StripsAnsiEscapes) {
  EXPECT_EQ(core::StripAnsi("\x1b[31mERROR\x1b[0m: CUDA error"), "ERROR: CUDA error");
  EXPECT_EQ(core::StripAnsi("\x1b]0;title\x07text"), "text");
  EXPECT_EQ(core::StripAnsi("plain"), "plain");
  EXPECT_EQ(core::StripAnsi("\x1b[1"), "");
}

}  // namespace
}  // namespace gputriage::kb
