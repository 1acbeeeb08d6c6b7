// Streaming zstd through real files and pipes: round trip, size cap, truncated and corrupt input.
#include "pack/zstd_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "capture_tree.h"
#include "core/scoped_fd.h"

namespace gputriage::pack {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class ZstdStream : public ::testing::Test {
 protected:
  // `data` compressed by CompressZstd from a real file.
  std::string Compress(const std::string& data) {
    std::string in = tmp_ / "in";
    std::ofstream(in, std::ios::binary) << data;
    core::ScopedFd ifd(::open(in.c_str(), O_RDONLY));
    core::ScopedFd ofd(::open((tmp_ / "out.zst").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600));
    auto stats = CompressZstd(ifd.get(), ofd.get(), 3, "in", "out.zst");
    EXPECT_TRUE(stats.ok()) << stats.error().message;
    EXPECT_EQ(stats->in_bytes, data.size());
    return ReadAll(tmp_ / "out.zst");
  }
  core::Result<ZstdCopyStats> Decompress(const std::string& zst, uint64_t cap, std::string* out) {
    std::string path = tmp_ / "dec";
    core::ScopedFd ofd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600));
    auto r = DecompressZstd(FromMemory(zst), ofd.get(), cap, "x.zst", path);
    *out = ReadAll(path);
    return r;
  }
  gputriage::testing::TempDir tmp_;
};

TEST_F(ZstdStream, RoundTripsAndPeeks) {
  std::string data;
  for (uint64_t i = 0; i < 300000; ++i) data += std::to_string(i * 7919 % 100003) + ",";
  std::string zst = Compress(data);
  EXPECT_TRUE(HasZstdMagic(zst));
  EXPECT_LT(zst.size(), data.size());
  EXPECT_EQ(PeekZstd(zst, 100), data.substr(0, 100));
  std::string out;
  auto r = Decompress(zst, 1ull << 30, &out);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(out.size(), data.size());
  EXPECT_TRUE(out == data);  // not EXPECT_EQ: a diff of two 2 MB strings takes minutes
  EXPECT_EQ(r->out_bytes, data.size());
}

TEST_F(ZstdStream, CapTruncationAndDamageAreNamedErrors) {
  std::string data(3u << 20, 'z');
  for (size_t i = 0; i < data.size(); i += 4097) data[i] = static_cast<char>('a' + i % 26);
  std::string zst = Compress(data);
  std::string out;
  auto capped = Decompress(zst, 1u << 20, &out);
  ASSERT_FALSE(capped.ok());
  EXPECT_EQ(capped.error().message,
            "x.zst: decompresses to more than 1048576 bytes, the most gputriage writes out of one compressed input");
  auto truncated = Decompress(zst.substr(0, zst.size() / 2), 1ull << 30, &out);
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(truncated.error().message.rfind("x.zst: truncated zstd stream after ", 0), 0u) << truncated.error().message;
  std::string corrupt = zst;
  for (size_t i = corrupt.size() / 3; i < corrupt.size() / 3 + 64; ++i) corrupt[i] = static_cast<char>(~corrupt[i]);
  auto damaged = Decompress(corrupt, 1ull << 30, &out);
  ASSERT_FALSE(damaged.ok());
  EXPECT_EQ(damaged.error().message.rfind("x.zst: corrupt zstd data after ", 0), 0u) << damaged.error().message;
  auto not_zstd = Decompress("hello world", 100, &out);
  ASSERT_FALSE(not_zstd.ok());
  EXPECT_EQ(not_zstd.error().message, "x.zst: not zstd data (no zstd frame magic)");
}

TEST_F(ZstdStream, PrivateTempDirIsPrivateAndRemoved) {
  std::string path;
  {
    auto dir = PrivateTempDir::Create("gt-test-");
    ASSERT_TRUE(dir.ok()) << dir.error().message;
    path = dir->path();
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    std::ofstream(path + "/f") << "x";
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace gputriage::pack
