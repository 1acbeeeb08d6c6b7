#include "collect/host.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "capture_tree.h"

namespace gputriage::collect {
namespace {

core::OsView H200View() { return core::OsView::Rooted(std::string(GT_FIXTURES_DIR) + "/h200-root").value(); }

TEST(HostTest, ReadsTheCapturedH200Tree) {
  core::Section section = CollectHost(H200View());
  const core::Json& host = section.data;
  EXPECT_EQ(host["hostname"], "vm");
  EXPECT_EQ(host["kernel"]["release"], "6.18.44-fc-v973-gpu");
  EXPECT_EQ(host["os"]["pretty_name"], "Ubuntu 24.04.3 LTS");
  EXPECT_EQ(host["os"]["version_id"], "24.04");
  EXPECT_EQ(host["cpu"]["model"], "Intel(R) Xeon(R) Processor");
  EXPECT_EQ(host["cpu"]["logical_cpus"], 16);
  EXPECT_EQ(host["cpu"]["flags"]["hypervisor"], true);
  EXPECT_EQ(host["memory"]["total_bytes"], 131961788ull * 1024);
  EXPECT_EQ(host["memory"]["available_bytes"], 131454628ull * 1024);
  EXPECT_DOUBLE_EQ(host["uptime_s"].get<double>(), 24.62);
  EXPECT_EQ(host["boot_time"], "2026-12-02T13:37:51Z");  // btime 1796218671
  EXPECT_EQ(host["cmdline"]["flags"]["pci"], "realloc=off");
  EXPECT_EQ(host["cmdline"]["flags"]["swiotlb"], "noforce");
  EXPECT_FALSE(host["cmdline"]["flags"].contains("console"));
  EXPECT_EQ(host["virtualization"]["is_vm"], true);
  // The capture's /sys/kernel/iommu_groups was an empty directory, which git does not keep:
  // in the stored tree the directory is missing, so the state is unknown, not "0 groups".
  EXPECT_FALSE(host["iommu"].contains("groups"));
  EXPECT_FALSE(host["iommu"].contains("enabled"));
}

TEST(HostTest, IommuGroupsAreCounted) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.path() + "/sys/kernel/iommu_groups");
  auto os = core::OsView::Rooted(dir.path()).value();
  EXPECT_EQ(CollectHost(os).data["iommu"]["groups"], 0);
  EXPECT_EQ(CollectHost(os).data["iommu"]["enabled"], false);
  for (const char* group : {"/sys/kernel/iommu_groups/0", "/sys/kernel/iommu_groups/17"}) {
    std::filesystem::create_directories(dir.path() + group);
  }
  testing::WriteFile(dir.path(), "/sys/class/iommu/ivhd0/uevent", "");
  core::Json iommu = CollectHost(os).data["iommu"];
  EXPECT_EQ(iommu["groups"], 2);
  EXPECT_EQ(iommu["enabled"], true);
  EXPECT_EQ(iommu["type"], "amd-vi");
}

TEST(HostTest, CmdlineStopsAtInitArguments) {
  core::Json flags = ParseCmdlineFlags("ro iommu=pt amd_iommu=on -- pci=foo");
  EXPECT_EQ(flags["iommu"], "pt");
  EXPECT_EQ(flags["amd_iommu"], "on");
  EXPECT_FALSE(flags.contains("pci"));
  EXPECT_EQ(ParseCmdlineFlags("amdgpu.ppfeaturemask=0xffffffff nouveau.modeset=0 quiet").dump(),
            R"({"amdgpu.ppfeaturemask":"0xffffffff","nouveau.modeset":"0"})");
}

TEST(HostTest, MissingFilesBecomeNotesNotZeros) {
  testing::TempDir dir;
  testing::WriteFile(dir.path(), "/proc/cpuinfo", "garbage\x01\x02 without colons\n");
  core::Section section = CollectHost(core::OsView::Rooted(dir.path()).value());
  EXPECT_FALSE(section.data.contains("hostname"));
  EXPECT_FALSE(section.data.contains("uptime_s"));
  EXPECT_FALSE(section.data["cpu"].contains("logical_cpus"));
  bool memory_noted = false;
  for (const auto& note : section.not_collected) {
    if (note.item == "host.memory") {
      memory_noted = true;
      EXPECT_NE(note.reason.find(dir.path() + "/proc/meminfo"), std::string::npos) << note.reason;
    }
  }
  EXPECT_TRUE(memory_noted);
}

TEST(HostTest, OsReleaseQuotesAndGarbage) {
  core::Json os =
      ParseOsRelease("ID=debian\nVERSION_ID=\"12\"\nPRETTY_NAME='Debian GNU/Linux 12 (bookworm)'\n\xff\xfe=\n");
  EXPECT_EQ(os["id"], "debian");
  EXPECT_EQ(os["version_id"], "12");
  EXPECT_EQ(os["pretty_name"], "Debian GNU/Linux 12 (bookworm)");
}

}  // namespace
}  // namespace gputriage::collect
