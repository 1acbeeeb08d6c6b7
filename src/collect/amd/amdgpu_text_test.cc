#include "collect/amd/amdgpu_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "collect/amd/capture_tree_for_test.h"
#include "core/text.h"

namespace gputriage::amd {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::ReadFixture;

std::vector<uint64_t> Mhz(const DpmTable& table) {
  std::vector<uint64_t> out;
  for (const DpmLevel& level : table.levels) out.push_back(level.mhz.value_or(0));
  return out;
}

// Keeps the lines a capture printed for one file, without the shell prompt lines around them.
std::string WithoutPrompts(std::string_view capture) {
  std::string out;
  for (std::string_view line : core::SplitLines(capture)) {
    if (!line.starts_with("> ")) out += std::string(line) + "\n";
  }
  return out;
}

TEST(DpmLevels, SclkFromAGrepCaptureOfAPolarisCard) {
  std::string sclk;
  static constexpr std::string_view kPrefix = "/sys/class/drm/card1/device/pp_dpm_sclk:";
  std::string capture = ReadFixture("grep-dot-drm-card1-device-pp_dpm_sclk-mclk-pcie-power-profile-excerpt.txt");
  for (std::string_view line : core::SplitLines(capture)) {
    if (line.starts_with(kPrefix)) sclk += std::string(line.substr(kPrefix.size())) + "\n";
  }
  DpmTable table = ParseDpmLevels(sclk);
  EXPECT_THAT(table.problems, IsEmpty());
  EXPECT_THAT(Mhz(table), ElementsAre(300, 588, 976, 1065, 1130, 1192, 1233, 1268));
  ASSERT_NE(table.Current(), nullptr);
  EXPECT_EQ(table.Current()->level, "6");
  EXPECT_EQ(table.Current()->mhz, 1233u);
}

TEST(DpmLevels, MarkdownIndentedMclkOfAPicassoApu) {
  DpmTable table = ParseDpmLevels(ReadFixture("pp_dpm_mclk-picasso-apu-3500u-md-indented.txt"));
  EXPECT_THAT(table.problems, IsEmpty());
  EXPECT_THAT(Mhz(table), ElementsAre(400, 933, 1067, 1200));
  ASSERT_NE(table.Current(), nullptr);
  EXPECT_EQ(table.Current()->mhz, 933u);
}

TEST(DpmLevels, PcieLevelsWithLinkClockAndTrailingSpace) {
  DpmTable table = ParseDpmLevels(ReadFixture("pp_dpm_pcie-rx6800-gen3-board-trailing-space.txt"));
  EXPECT_THAT(table.problems, IsEmpty());
  ASSERT_EQ(table.levels.size(), 2u);
  EXPECT_EQ(table.levels[0].pcie_gts, 2.5);
  EXPECT_EQ(table.levels[0].pcie_width, 1u);
  EXPECT_FALSE(table.levels[0].current);
  const DpmLevel* current = table.Current();
  ASSERT_NE(current, nullptr);
  EXPECT_EQ(current->pcie_gts, 8.0);
  EXPECT_EQ(current->pcie_width, 16u);
  EXPECT_EQ(current->mhz, 619u);
}

TEST(DpmLevels, PcieGen5CardRunningAtX8) {
  DpmTable table = ParseDpmLevels(WithoutPrompts(ReadFixture("pp_dpm_pcie-x8-two-levels-pcie5-card.txt")));
  EXPECT_THAT(table.problems, IsEmpty());
  ASSERT_NE(table.Current(), nullptr);
  EXPECT_EQ(table.Current()->level, "1");
  EXPECT_EQ(table.Current()->pcie_gts, 16.0);
  EXPECT_EQ(table.Current()->pcie_width, 8u);
  EXPECT_EQ(table.Current()->mhz, 1143u);
}

TEST(DpmLevels, ThePromptLineOfACaptureIsAProblemNotALevel) {
  DpmTable table = ParseDpmLevels(ReadFixture("pp_dpm_pcie-x8-two-levels-pcie5-card.txt"));
  EXPECT_EQ(table.levels.size(), 2u);
  EXPECT_THAT(table.problems, ElementsAre("line 1: expected \"N: <value> [*]\": \"> cat /sys/class/drm/card1/"
                                          "device/pp_dpm...\""));
}

TEST(DpmLevels, PcieLevelsWithoutLinkClock) {
  DpmTable table = ParseDpmLevels("0: 2.5GT/s, x8 \n1: 8.0GT/s, x16 *\n");
  EXPECT_THAT(table.problems, IsEmpty());
  ASSERT_NE(table.Current(), nullptr);
  EXPECT_EQ(table.Current()->pcie_width, 16u);
  EXPECT_EQ(table.Current()->mhz, std::nullopt);
}

TEST(DpmLevels, DeepSleepLevelAndNoCurrentLevel) {
  DpmTable table = ParseDpmLevels("S: 19Mhz\n0: 500Mhz\n1: 2100Mhz\n");
  EXPECT_THAT(table.problems, IsEmpty());
  EXPECT_EQ(table.levels[0].level, "S");
  EXPECT_EQ(table.Current(), nullptr);
}

TEST(DpmLevels, GarbageAndAbsurdLinesAreProblems) {
  DpmTable table = ParseDpmLevels(
      "0: 300Mhz\n"
      "1: abcMhz *\n"
      "2 500Mhz\n"
      "3: 999999999Mhz\n"
      "4: 8.0GT/s, x64\n"
      "5: nanGT/s, x8\n"
      "\x01\x02\xff\n");
  EXPECT_THAT(Mhz(table), ElementsAre(300));
  EXPECT_EQ(table.Current(), nullptr);
  EXPECT_THAT(table.problems,
              ElementsAre("line 2: unexpected level value: \"1: abcMhz *\"",
                          "line 3: expected \"N: <value> [*]\": \"2 500Mhz\"",
                          "line 4: unexpected level value: \"3: 999999999Mhz\"", "3 more malformed lines"));
}

TEST(DpmLevels, EmptyFileSaysSo) {
  DpmTable table = ParseDpmLevels("\n\n");
  EXPECT_TRUE(table.levels.empty());
  EXPECT_THAT(table.problems, ElementsAre("no DPM level in 2 bytes"));
}

// The layout amdgpu_ras_sysfs_read() prints ("%s: %lu\n%s: %lu\n"); values illustrative.
TEST(RasErrorCount, ParsesUeCeAndDeferred) {
  RasErrorCount count = ParseRasErrorCount("ue: 0\nce: 3\n");
  EXPECT_EQ(count.ue, 0u);
  EXPECT_EQ(count.ce, 3u);
  EXPECT_EQ(count.de, std::nullopt);
  EXPECT_THAT(count.problems, IsEmpty());
  count = ParseRasErrorCount("ue: 1\nce: 0\nde: 2\n");
  EXPECT_EQ(count.de, 2u);
}

TEST(RasErrorCount, GarbageIsAProblem) {
  RasErrorCount count = ParseRasErrorCount("ue: -1\nxx: 3\nce: 1\nce: 2\n");
  EXPECT_EQ(count.ue, std::nullopt);
  EXPECT_EQ(count.ce, 1u);
  EXPECT_THAT(count.problems, ElementsAre("line 1: expected \"ue: N\", \"ce: N\" or \"de: N\": \"ue: -1\"",
                                          "line 2: expected \"ue: N\", \"ce: N\" or \"de: N\": \"xx: 3\"",
                                          "line 4: expected \"ue: N\", \"ce: N\" or \"de: N\": \"ce: 2\""));
  EXPECT_EQ(ParseRasErrorCount("\xff\xfe").problems.back(), "no \"ue:\" or \"ce:\" count in 2 bytes");
}

}  // namespace
}  // namespace gputriage::amd
