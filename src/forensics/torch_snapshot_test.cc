#include "forensics/torch_snapshot.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "forensics/gpu_record.h"

namespace gputriage::forensics {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;

const std::string kFixtures = std::string(GT_SOURCE_DIR) + "/tests/fixtures/torch-snapshot/";

bool HavePython() { return system("python3 -c pass >/dev/null 2>&1") == 0; }

// The snapshot PyTorch wrote on the H200 after a Triton store faulted at the end of its output's
// segment (SOURCE.md): read as data, the Python frames of each tensor kept.
TEST(TorchSnapshot, ReadsARealSnapshotWrittenAfterAFault) {
  if (!HavePython()) GTEST_SKIP() << "python3 is not installed";
  auto memory = ReadTorchSnapshot(kFixtures + "h200-triton-oob-after-fault.pickle");
  ASSERT_TRUE(memory.ok()) << memory.error().message;
  ASSERT_EQ(memory->segments.size(), 3u);
  const core::TorchSegment& third = memory->segments[2];
  EXPECT_EQ(third.address, "0x7f5d22c00000");
  EXPECT_EQ(third.bytes, 2 << 20);
  EXPECT_EQ(third.type, "small");
  ASSERT_EQ(third.blocks.size(), 3u);
  EXPECT_EQ(third.blocks[1].address, "0x7f5d22c40000");
  EXPECT_EQ(third.blocks[1].bytes, 256 << 10);
  EXPECT_EQ(third.blocks[1].state, "active_allocated");
  ASSERT_EQ(third.blocks[1].frames.size(), 2u);
  EXPECT_EQ(third.blocks[1].frames[0], "/work/main/tests/gpu/torch_snapshot_after_fault.py:21 in make_tensors");
  EXPECT_EQ(third.blocks[1].frames[1], "/work/main/tests/gpu/torch_snapshot_after_fault.py:28 in <module>");
  EXPECT_EQ(third.blocks[2].state, "inactive");
  EXPECT_TRUE(third.blocks[2].frames.empty());

  // The Xid 31 address of the same run (the segment's end) lands past dst, the segment's last
  // live tensor; an address inside src names src; the free block says so.
  auto past = PlaceInTensors(*memory, 0x7f5d22e00000);
  ASSERT_TRUE(past.has_value());
  EXPECT_EQ(past->block.address, "0x7f5d22c40000");
  EXPECT_EQ(past->summary,
            "1.5 MiB past the end of a 256 KiB tensor at 0x7f5d22c40000, allocated at "
            "/work/main/tests/gpu/torch_snapshot_after_fault.py:21 in make_tensors (called from "
            "/work/main/tests/gpu/torch_snapshot_after_fault.py:28 in <module>) (the segment's last live tensor)");
  auto inside = PlaceInTensors(*memory, 0x7f5d22c00010);
  ASSERT_TRUE(inside.has_value());
  EXPECT_EQ(inside->summary.rfind("16 bytes into a live 256 KiB tensor at 0x7f5d22c00000", 0), 0u) << inside->summary;
  auto freed = PlaceInTensors(*memory, 0x7f5d22c90000);
  ASSERT_TRUE(freed.has_value());
  EXPECT_NE(freed->summary.find("into a free block of 1.5 MiB (state inactive)"), std::string::npos) << freed->summary;
  EXPECT_FALSE(PlaceInTensors(*memory, 0x1000).has_value());
  EXPECT_FALSE(PlaceInTensors(*memory, 0x7f5d22e00000 + (2 << 20)).has_value());  // 2 MiB past: near none
}

class TorchSnapshotBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gt-torch-snapshot-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& bytes) {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  fs::path dir_;
};

// A pickle that names a class would run code when loaded: refused before anything is built; a
// missing file, garbage and a pickle of other data are named with why.
TEST_F(TorchSnapshotBadInput, RefusedOrNamedNeverRun) {
  if (!HavePython()) GTEST_SKIP() << "python3 is not installed";
  // pickle.dumps of os.system("touch ...") through __reduce__ (protocol 2), written by hand.
  std::string marker = (dir_ / "ran").string();
  std::string evil =
      "\x80\x02"
      "cposix\nsystem\nq\x00"
      "X"s +
      static_cast<char>(6 + marker.size()) + "\0\0\0"s + "touch " + marker +
      "q\x01\x85q\x02R"
      "q\x03."s;
  auto refused = ReadTorchSnapshot(Write("evil.pickle", evil));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("it names a class (posix.system)"), std::string::npos)
      << refused.error().message;
  EXPECT_FALSE(fs::exists(marker));

  auto missing = ReadTorchSnapshot((dir_ / "absent.pickle").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("absent.pickle"), std::string::npos);

  auto garbage = ReadTorchSnapshot(Write("garbage.pickle", std::string("\x00\xff\xfe garbage", 11)));
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.error().message.find("garbage.pickle: not read as a PyTorch allocator snapshot"), std::string::npos)
      << garbage.error().message;

  // pickle.dumps({"a": 1}, protocol=2): a dict, but not a snapshot.
  auto other = ReadTorchSnapshot(Write("other.pickle",
                                       "\x80\x02}q\x00"
                                       "X\x01\x00\x00\x00"
                                       "aq\x01K\x01s."s));
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message.find("no 'segments' list"), std::string::npos) << other.error().message;

  auto no_python = ReadTorchSnapshot(kFixtures + "h200-triton-oob-after-fault.pickle", "/nonexistent/python3");
  ASSERT_FALSE(no_python.ok());
  EXPECT_NE(no_python.error().message.find("/nonexistent/python3"), std::string::npos) << no_python.error().message;
}

}  // namespace
}  // namespace gputriage::forensics
