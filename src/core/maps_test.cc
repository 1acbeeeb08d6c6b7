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
