#include "core/maps.h"

#include <gtest/gtest.h>

#include "capture_tree.h"

namespace gputriage::core {
namespace {

std::vector<Mapping> CrasherMaps(size_t* malformed = nullptr) {
  return ParseMaps(testing::ReadCapture("forensics/maps-crasher.txt"), malformed);
}

TEST(Maps, ParsesACapturedMap) {
  size_t malformed = 0;
  std::vector<Mapping> maps = CrasherMaps(&malformed);
  EXPECT_EQ(malformed, 0u);
  ASSERT_EQ(maps.size(), 28u);
  EXPECT_EQ(maps[0].start, 0x55916013f000u);
  EXPECT_EQ(maps[0].end, 0x559160140000u);
  EXPECT_EQ(maps[0].perms, "r--p");
  EXPECT_EQ(maps[0].path, "/work/main/build/tests/crashers/crasher");
  EXPECT_EQ(maps[1].file_offset, 0x1000u);
  EXPECT_EQ(maps[1].inode, 5406727u);
  EXPECT_EQ(maps.back().path, "[vsyscall]");
  const Mapping* stack = FindMapping(maps, 0x7ffd66790000);
  ASSERT_NE(stack, nullptr);
  EXPECT_EQ(stack->path, "[stack]");
  EXPECT_EQ(FindMapping(maps, 0x10), nullptr);
}

TEST(Maps, KeepsPathsWithSpacesAndSkipsGarbage) {
  size_t malformed = 0;
  auto maps = ParseMaps(
      "7f00-7f10 r--p 00000000 08:01 12 /data/my model (v2).bin (deleted)\n"
      "not a line\n"
      "zz-10 r--p 0 0:0 0\n"
      "20-10 r--p 00000000 00:00 0\n"
      "1000-2000 rw-p 00000000 00:00 0\n",
      &malformed);
  ASSERT_EQ(maps.size(), 2u);
  EXPECT_EQ(maps[0].path, "/data/my model (v2).bin (deleted)");
  EXPECT_EQ(maps[1].path, "");
  EXPECT_EQ(malformed, 3u);
}

TEST(MapsLine, ReadsEveryField) {
  auto m = ParseMapsLine(
      "7f1c2a000000-7f1c2a028000 r-xp 00028000 fd:01 1234567                    /usr/lib/x86_64-linux-gnu/libc.so.6");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->start, 0x7f1c2a000000u);
  EXPECT_EQ(m->end, 0x7f1c2a028000u);
  EXPECT_EQ(m->perms, "r-xp");
  EXPECT_EQ(m->file_offset, 0x28000u);
  EXPECT_EQ(m->inode, 1234567u);
  EXPECT_EQ(m->path, "/usr/lib/x86_64-linux-gnu/libc.so.6");

  auto anonymous = ParseMapsLine("7ffd66771000-7ffd66792000 rw-p 00000000 00:00 0 ");
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->inode, 0u);
  EXPECT_EQ(anonymous->path, "");
  auto stack = ParseMapsLine("7ffd66771000-7ffd66792000 rw-p 00000000 00:00 0                          [stack]");
  ASSERT_TRUE(stack);
  EXPECT_EQ(stack->path, "[stack]");
}

TEST(MapsLine, KeepsSpacesAndTheDeletedSuffix) {
  auto m = ParseMapsLine("7f00-7f10 rw-s 00001000 00:05 4096 /dev/shm/my  buffer (deleted)");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->path, "/dev/shm/my  buffer (deleted)");
  EXPECT_EQ(m->inode, 4096u);
  EXPECT_EQ(m->perms, "rw-s");
}

TEST(MapsLine, RefusesWhatIsNotAMapLine) {
  for (const char* line : {
           "",
           "not a line",
           "7f00-7f10 r--p 00000000 08:01",         // no inode
           "7f00-7f10 r--p 00000000 08:01 12x /a",  // inode not decimal
           "7f00-7f10 r--p 00000000 08:01 -1 /a",   // nor negative
           "7f00-7f10 r-p 00000000 08:01 12 /a",    // perms of three characters
           "7f00-7f10 r--p 00000000 0801 12 /a",    // dev without ':'
           "7f007f10 r--p 00000000 08:01 12 /a",    // range without '-'
           "7f10-7f00 r--p 00000000 08:01 12 /a",   // ends before it starts
           "7f00-7f10 r--p 0000zz00 08:01 12 /a",   // offset not hex
           "Rss:                   4 kB",           // smaps detail lines
           "VmFlags: rd ex mr mw me dw sd",
       }) {
    EXPECT_FALSE(ParseMapsLine(line)) << line;
  }
}

TEST(Maps, InodeIsNotWrittenToJson) {
  ProcessReport report;
  report.maps = ParseMaps("1000-2000 r-xp 00000000 fd:01 77 /bin/x\n");
  ASSERT_EQ(report.maps.size(), 1u);
  EXPECT_EQ(report.maps[0].inode, 77u);
  Json json = ToJson(report);
  EXPECT_EQ(json["maps"][0].dump(),
            R"({"end":"0x2000","offset":"0x0","path":"/bin/x","perms":"r-xp","start":"0x1000"})");
  EXPECT_EQ(ProcessReportFromJson(json).maps[0].inode, 0u);
}

TEST(Maps, LocatesFaults) {
  std::vector<Mapping> maps = CrasherMaps();
  FaultLocation null = LocateFault(0, maps, 0x7ffd66790000);
  EXPECT_EQ(null.kind, "null-page");
  EXPECT_EQ(null.description, "address 0x0: a null pointer was dereferenced");
  EXPECT_EQ(LocateFault(0x18, maps, std::nullopt).kind, "null-page");

  // Just below [stack], next to the stack pointer: an overflow.
  FaultLocation guard = LocateFault(0x7ffd6677eff8, maps, 0x7ffd6677f010);
  EXPECT_EQ(guard.kind, "stack-guard");
  // Below [stack] without a stack pointer to compare with: still the guard gap.
  EXPECT_EQ(LocateFault(0x7ffd66700000, maps, std::nullopt).kind, "stack-guard");

  FaultLocation wild = LocateFault(0x7f0000dead00, maps, 0x7ffd66790000);
  EXPECT_EQ(wild.kind, "unmapped");
  EXPECT_NE(wild.description.find("is not mapped"), std::string::npos);

  FaultLocation text = LocateFault(0x559160140010, maps, 0x7ffd66790000);
  EXPECT_EQ(text.kind, "mapped");
  ASSERT_TRUE(text.mapping);
  EXPECT_EQ(text.mapping->perms, "r-xp");
  EXPECT_NE(text.description.find("/work/main/build/tests/crashers/crasher"), std::string::npos);
}

}  // namespace
}  // namespace gputriage::core
