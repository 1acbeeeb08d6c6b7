#include "core/bundle.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "capture_tree.h"

namespace gputriage::core {
namespace {

std::string Put(const gputriage::testing::TempDir& dir, const std::string& name, const std::string& bytes) {
  std::string path = dir / name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string ProblemsOf(const Bundle& bundle) {
  std::string out;
  for (const NotCollected& p : bundle.problems) out += p.item + ": " + p.reason + "\n";
  return out;
}

// Failed before: a bundle of a 2 GB stderr.tail was read with a 4 MiB bound, more than the 1 MiB
// `run` ever writes. Now the last 1 MiB is used (nothing else is read, the file is sparse) and
// the problem says so.
TEST(ReadBundle, ATailLargerThanRunWritesIsReadFromItsEnd) {
  gputriage::testing::TempDir dir;
  Put(dir, "process.json", R"({"pid": 5})");
  std::string tail = Put(dir, "stderr.tail", "");
  ASSERT_EQ(::truncate(tail.c_str(), off_t{2} << 30), 0);
  {
    std::ofstream out(tail, std::ios::binary | std::ios::in);
    out.seekp((off_t{2} << 30) - 6);
    out << "last\n";
  }
  Result<Bundle> bundle = ReadBundle(dir.path());
  ASSERT_TRUE(bundle.ok()) << bundle.error().message;
  EXPECT_EQ(bundle->stderr_tail.size(), kBundleTailMaxBytes);
  EXPECT_EQ(bundle->stderr_tail.substr(bundle->stderr_tail.size() - 6), "last\n" + std::string(1, '\0'));
  EXPECT_EQ(ProblemsOf(*bundle),
            "stderr.tail: 2147483648 bytes, more than the 1048576 gputriage reads of it; its last 1048576 bytes are "
            "used\n");
  struct rusage usage {};
  ASSERT_EQ(getrusage(RUSAGE_SELF, &usage), 0);
  // The whole program's peak (every test before this one too): 92 MiB with the sanitizers (the
  // default preset), far below what reading the 2 GiB file whole would take.
  EXPECT_LT(usage.ru_maxrss, 256 * 1024) << "peak RSS, KiB";
}

// A FIFO, a link and a directory in a bundle are problems, never waited on or followed.
TEST(ReadBundle, OnlyRegularFilesAreRead) {
  gputriage::testing::TempDir dir;
  Put(dir, "process.json", R"({"pid": 5})");
  ASSERT_EQ(::mkfifo((dir / "stderr.tail").c_str(), 0600), 0);
  ASSERT_EQ(::symlink("/etc/passwd", (dir / "stdout.tail").c_str()), 0);
  ASSERT_EQ(::mkdir((dir / "kmsg.log").c_str(), 0700), 0);
  ASSERT_EQ(::mkfifo((dir / "repeat.json").c_str(), 0600), 0);
  Result<Bundle> bundle = ReadBundle(dir.path());
  ASSERT_TRUE(bundle.ok()) << bundle.error().message;
  EXPECT_EQ(ProblemsOf(*bundle),
            "repeat.json: not a regular file\n"
            "stdout.tail: a symbolic link (not followed)\n"
            "stderr.tail: not a regular file\n"
            "kmsg.log: not a regular file\n");
  EXPECT_EQ(bundle->stdout_tail, "");
  gputriage::testing::TempDir fifo;
  ASSERT_EQ(::mkfifo((fifo / "process.json").c_str(), 0600), 0);
  Result<Bundle> refused = ReadBundle(fifo.path());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message, fifo.path() + "/process.json: not a regular file");
}

// Failed before: process.json went to nlohmann::json::parse unbounded in depth, and `{}` gave
// pid 0.
TEST(BundleFromFiles, ProcessJsonIsParsedWithTheDepthLimitAndAMissingPidIsUnknown) {
  BundleFileSet files;
  files["process.json"] = {.exists = true, .bytes = "{}"};
  Result<Bundle> empty = BundleFromFiles("b", files);
  ASSERT_TRUE(empty.ok()) << empty.error().message;
  EXPECT_EQ(empty->process.primary.pid, std::nullopt);
  files["process.json"].bytes = R"({"pid": 7, "threads": )" + std::string(100000, '[') + std::string(100000, ']') + "}";
  Result<Bundle> deep = BundleFromFiles("b", files);
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.error().message,
            "b/process.json: JSON nested deeper than 256 levels at line 1, column 278 (byte 278); not a file "
            "gputriage writes");
  files["process.json"].bytes = "[1]";
  EXPECT_EQ(BundleFromFiles("b", files).error().message, "b/process.json: a JSON array, not an object");
  files.erase("process.json");
  EXPECT_EQ(BundleFromFiles("b", files).error().message,
            "b: not a crash bundle (neither process.json nor manifest.json)");
  // Failed before (`report BUNDLE` refused it): a bundle that lost its process.json is read for
  // what it has, the loss named.
  files["manifest.json"] = {.exists = true, .bytes = R"({"schema_version": 1, "exit_status": 139})"};
  files["stderr.tail"] = {.exists = true, .bytes = "RuntimeError: CUDA error: an illegal memory access\n"};
  Result<Bundle> partial = BundleFromFiles("b", files);
  ASSERT_TRUE(partial.ok()) << partial.error().message;
  EXPECT_EQ(ProblemsOf(*partial),
            "process.json: missing: the process's signal, threads and stacks are not in this bundle\n");
  EXPECT_EQ(partial->stderr_tail, "RuntimeError: CUDA error: an illegal memory access\n");
  ASSERT_TRUE(partial->manifest.has_value());
}

TEST(BundleFromFiles, DamagedFilesBesideProcessJsonAreProblems) {
  BundleFileSet files;
  files["process.json"] = {.exists = true, .bytes = R"({"pid": 9})"};
  files["manifest.json"] = {.exists = true, .bytes = std::string(300, '[') + std::string(300, ']')};
  files["repeat.json"] = {.exists = true, .bytes = "{\"runs\": "};
  files["snapshot.json"] = {.exists = true, .bytes = "{}"};
  files["kmsg.log"] = {.exists = true, .bytes = "rd\n6,1,2,-;NVRM: Xid\n", .problem = "cut"};
  files["stderr.tail"] = {.exists = true, .bytes = "boom\n"};
  Result<Bundle> bundle = BundleFromFiles("b", files);
  ASSERT_TRUE(bundle.ok()) << bundle.error().message;
  EXPECT_EQ(bundle->process.primary.pid, 9);
  EXPECT_FALSE(bundle->manifest);
  EXPECT_FALSE(bundle->repeat);
  EXPECT_FALSE(bundle->snapshot);
  EXPECT_EQ(bundle->stderr_tail, "boom\n");
  EXPECT_EQ(bundle->kmsg, "6,1,2,-;NVRM: Xid\n");  // the partial first record is dropped
  EXPECT_EQ(ProblemsOf(*bundle),
            "manifest.json: JSON nested deeper than 256 levels at line 1, column 257 (byte 257); not a file gputriage "
            "writes\n"
            "snapshot.json: b/snapshot.json: not a gputriage snapshot (no schema_version)\n"
            "repeat.json: invalid JSON at line 1, column 10 (byte 10): syntax error while parsing value - unexpected "
            "end of input; expected '[', '{', or a literal\n"
            "kmsg.log: cut\n");
}

// Failed before: snapshot.json was read up to 256 MiB and parsed (a 170 MB one took 950 MB).
TEST(ReadBundle, ASnapshotLargerThanAnyWrittenIsAProblemNotRead) {
  gputriage::testing::TempDir dir;
  Put(dir, "process.json", R"({"pid": 5})");
  std::string snapshot = Put(dir, "snapshot.json", "{}");
  ASSERT_EQ(::truncate(snapshot.c_str(), off_t{33} << 20), 0);
  Result<Bundle> bundle = ReadBundle(dir.path());
  ASSERT_TRUE(bundle.ok()) << bundle.error().message;
  EXPECT_FALSE(bundle->snapshot);
  EXPECT_EQ(ProblemsOf(*bundle), "snapshot.json: 34603008 bytes, more than the 33554432 gputriage reads of it\n");
}

}  // namespace
}  // namespace gputriage::core
