#include "kb/log_reader.h"

#include "core/text.h"

#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <fmt/format.h>
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
  EXPECT_EQ(zeros.stats.error().message, "test.log: not a log (nothing but NUL bytes in its text)");
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

// Failed before: 18 KB of text and the 8 KB of NULs a crash leaves in a file's last blocks was
// refused as "not a log", and its illegal-address error was never read.
TEST(LogReader, NulPaddingAfterACrashIsNotJudgedAsText) {
  std::string text;
  for (int i = 0; text.size() < 18000; ++i) text += "step " + std::to_string(i) + " loss 0.25\n";
  text += "RuntimeError: CUDA error: an illegal memory access was encountered\n";
  ReadOptions refuse;
  refuse.refuse_binary = true;
  auto padded = Read(text + std::string(8192, '\0'), refuse);
  ASSERT_TRUE(padded.stats.ok()) << padded.stats.error().message;
  ASSERT_GE(padded.lines.size(), 2u);
  EXPECT_EQ(padded.lines[padded.lines.size() - 2],
            "RuntimeError: CUDA error: an illegal memory access was encountered");
  // Padding in the middle (a preallocated log written again after the crash) too.
  auto middle = Read(text + std::string(4096, '\0') + "after the restart\n", refuse);
  ASSERT_TRUE(middle.stats.ok()) << middle.stats.error().message;
  ASSERT_FALSE(middle.lines.empty());
  EXPECT_TRUE(middle.lines.back().ends_with("after the restart")) << middle.lines.back().size();
  // Binary data with NUL runs is still binary: what is left besides the runs is judged.
  std::string elfish;
  uint32_t x = 88172645u;
  for (int i = 0; i < 40000; ++i) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    elfish.push_back(static_cast<char>(x >> 24));
    if (i % 4000 == 0) elfish += std::string(1024, '\0');
  }
  EXPECT_FALSE(Read(elfish, refuse).stats.ok());
}

// Failed before: a bad checksum in a .gz or .zst trailer dropped the last decoded piece (the
// error line of a log is its last), and a short damaged stream said "after 0 bytes of text".
TEST(LogReader, AChecksumErrorKeepsEveryDecodedLine) {
  std::string text;
  for (int i = 0; text.size() < 500000; ++i) text += "iteration " + std::to_string(i) + " ok\n";
  text += "RuntimeError: CUDA error: an illegal memory access was encountered\n";
  std::string gz = Gzip(text);
  gz[gz.size() - 6] ^= 0x55;  // the CRC-32 of the trailer
  auto g = Read(gz);
  ASSERT_TRUE(g.stats.ok()) << g.stats.error().message;
  ASSERT_FALSE(g.lines.empty());
  EXPECT_EQ(g.lines.back(), "RuntimeError: CUDA error: an illegal memory access was encountered");
  EXPECT_EQ(g.stats->damage,
            fmt::format("test.log: corrupt gzip stream after {} bytes of text: incorrect data check", text.size()));
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  std::string zs(ZSTD_compressBound(text.size()), '\0');
  zs.resize(ZSTD_compress2(cctx, zs.data(), zs.size(), text.data(), text.size()));
  ZSTD_freeCCtx(cctx);
  zs[zs.size() - 2] ^= 0x55;  // the content checksum
  auto z = Read(zs);
  ASSERT_TRUE(z.stats.ok()) << z.stats.error().message;
  ASSERT_FALSE(z.lines.empty());
  EXPECT_EQ(z.lines.back(), "RuntimeError: CUDA error: an illegal memory access was encountered");
  EXPECT_EQ(
      z.stats->damage.rfind(fmt::format("test.log: corrupt zstd stream after {} bytes of text: ", text.size()), 0), 0u)
      << z.stats->damage;
  // A short log (less than the judged prefix) cut short: the bytes read are counted.
  std::string small = Gzip(text.substr(0, 30000));
  ReadOptions refuse;
  refuse.refuse_binary = true;
  auto cut = Read(std::string_view(small).substr(0, small.size() - 20), refuse);
  ASSERT_TRUE(cut.stats.ok()) << cut.stats.error().message;
  EXPECT_GT(cut.lines.size(), 1000u);
  EXPECT_EQ(cut.stats->damage, fmt::format("test.log: truncated gzip stream after {} bytes of text", cut.stats->bytes));
  EXPECT_GT(cut.stats->bytes, 20000u);
}

// Failed before: a log followed by 10 MB of random bytes was classified "numerical" from
// whatever the random bytes spelled.
TEST(LogReader, TextThatTurnsIntoBinaryDataIsReadUpToThere) {
  std::string text;
  for (int i = 0; text.size() < 100000; ++i) text += "epoch " + std::to_string(i) + " done\n";
  std::string input = text;
  uint32_t x = 2463534242u;
  while (input.size() < text.size() + (10u << 20)) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    input.push_back(static_cast<char>(x >> 24));
  }
  ReadOptions refuse;
  refuse.refuse_binary = true;
  refuse.chunk_bytes = 1u << 20;
  auto c = Read(input, refuse);
  ASSERT_TRUE(c.stats.ok()) << c.stats.error().message;
  // Read up to the block (4 KiB) in which the text ends, not a byte of the 10 MB after it.
  EXPECT_GT(c.stats->bytes + 4096, text.size());
  EXPECT_LT(c.stats->bytes, text.size() + 4096);
  EXPECT_EQ(c.stats->damage, fmt::format("test.log: binary data from byte {} of the text on (not read as log lines; "
                                         "the text before it was)",
                                         c.stats->bytes));
  ASSERT_GT(c.lines.size(), 100u);
  EXPECT_EQ(c.lines[100], "epoch 100 done");
  // The same when the text is shorter than the prefix judged before any line (64 KiB), and in
  // a later piece of a log read in small chunks.
  auto short_text = Read(text.substr(0, 20000) + input.substr(text.size(), 100000), refuse);
  ASSERT_TRUE(short_text.stats.ok()) << short_text.stats.error().message;
  EXPECT_LT(short_text.stats->bytes, 20000u + 4096);
  EXPECT_NE(short_text.stats->damage, "");
  refuse.chunk_bytes = 70000;
  auto chunked = Read(input, refuse);
  ASSERT_TRUE(chunked.stats.ok()) << chunked.stats.error().message;
  EXPECT_LT(chunked.stats->bytes, text.size() + 4096);
  // A log with a short binary blob in the middle is read to its end.
  auto blob = Read(text + input.substr(text.size(), 3000) + "\n" + text, refuse);
  ASSERT_TRUE(blob.stats.ok()) << blob.stats.error().message;
  EXPECT_EQ(blob.stats->damage, "");
  std::string last = text.substr(text.rfind('\n', text.size() - 2) + 1);
  last.pop_back();
  EXPECT_EQ(blob.lines.back(), last);
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
