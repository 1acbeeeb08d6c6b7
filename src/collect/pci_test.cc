#include "collect/pci.h"

#include <gtest/gtest.h>

#include "capture_tree.h"

namespace gputriage::collect {
namespace {

TEST(PciTest, FindsTheH200InTheCapturedTree) {
  auto os = core::OsView::Rooted(std::string(GT_FIXTURES_DIR) + "/h200-root").value();
  core::Section section = CollectPciGpus(os);
  ASSERT_EQ(section.data["gpus"].size(), 1u) << section.data.dump(2);
  const core::Json& gpu = section.data["gpus"][0];
  EXPECT_EQ(gpu["vendor"], "nvidia");
  EXPECT_EQ(gpu["pci_address"], "0000:00:06.0");
  EXPECT_EQ(gpu["vendor_id"], "0x10de");
  EXPECT_EQ(gpu["device_id"], "0x2335");
  EXPECT_EQ(gpu["subsystem_device_id"], "0x18bf");
  EXPECT_EQ(gpu["revision"], "0xa1");
  EXPECT_EQ(gpu["driver"], "nvidia");
  EXPECT_FALSE(gpu.contains("numa_node"));  // the kernel reports -1: unknown, not node 0
  EXPECT_EQ(gpu["local_cpus"], "0-15");     // the VM's 16 CPUs, all near the GPU
  EXPECT_EQ(gpu["link"]["current_speed_gts"], 32.0);
  EXPECT_EQ(gpu["link"]["max_width"], 16);
  ASSERT_EQ(gpu["bars"].size(), 3u);
  EXPECT_EQ(gpu["bars"][0]["size_bytes"], 16ull << 20);  // BAR0 registers
  EXPECT_EQ(gpu["bars"][1]["index"], 2);
  EXPECT_EQ(gpu["bars"][1]["size_bytes"], 256ull << 30);  // BAR1 window over HBM
  EXPECT_EQ(gpu["bars"][1]["prefetchable"], true);
  EXPECT_EQ(gpu["bars"][1]["is_64bit"], true);
  EXPECT_TRUE(section.not_collected.empty());
}

TEST(PciTest, DowntrainedLinkFromARealCapture) {
  // nokyan/resources#512: `tail -v` of the link files of an AMD GPU at x8 / 16 GT/s in a
  // PCIe 5 x16 slot. The capture has no id files; the test adds vendor and class.
  testing::TempDir dir;
  ASSERT_EQ(testing::MaterializeTailV(testing::ReadFixture("pci/pci-link-speed-width-tail-v-gpu-0000-01-00.0-x8.txt"),
                                      dir.path()),
            4);
  testing::WriteFile(dir.path(), "/sys/bus/pci/devices/0000:01:00.0/vendor", "0x1002\n");
  testing::WriteFile(dir.path(), "/sys/bus/pci/devices/0000:01:00.0/class", "0x030000\n");
  core::Section section = CollectPciGpus(core::OsView::Rooted(dir.path()).value());
  ASSERT_EQ(section.data["gpus"].size(), 1u);
  const core::Json& link = section.data["gpus"][0]["link"];
  EXPECT_EQ(link["current_speed_gts"], 16.0);
  EXPECT_EQ(link["current_width"], 8);
  EXPECT_EQ(link["max_speed_gts"], 32.0);
  EXPECT_EQ(link["max_width"], 16);
  EXPECT_EQ(section.data["gpus"][0]["vendor"], "amd");
  EXPECT_FALSE(section.data["gpus"][0].contains("driver"));
}

TEST(PciTest, AerCountersFromARealCapture) {
  testing::TempDir dir;
  testing::MaterializeGrepDot(
      testing::ReadFixture("pci/grep-dot-drm-card1-device-aer-dev-correctable-fatal-polaris-excerpt.txt"), dir.path());
  auto text = core::OsView::Rooted(dir.path())->TryReadFile("/sys/class/drm/card1/device/aer_dev_correctable");
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(ParseAerTotal(*text), 0u);
  EXPECT_EQ(ParseAerTotal("RxErr 3\nTOTAL_ERR_COR 7\n"), 7u);
  EXPECT_EQ(ParseAerTotal("RxErr 3\n"), std::nullopt);
}

TEST(PciTest, NamesComeFromPciIds) {
  // lspci printed "NVIDIA Corporation GA102GL [RTX A6000]" for 10de:2230 in
  // tests/fixtures/pci/lspci-vvd-10de-rtx-a6000-*.txt; libpci over Debian's pci.ids must agree.
  std::string lspci = testing::ReadFixture("pci/lspci-vvd-10de-rtx-a6000-lnksta-2.5gts-downgraded-aer-caps.txt");
  ASSERT_NE(lspci.find("GA102GL [RTX A6000]"), std::string::npos);
  core::Json gpus = core::Json::array(
      {{{"vendor_id", "0x10de"}, {"device_id", "0x2230"}}, {{"vendor_id", "0x10de"}, {"device_id", "0x2335"}}});
  core::Section notes;
  AddPciNames(core::OsView::Live(), gpus, notes);
  EXPECT_EQ(gpus[0]["pci_name"], "GA102GL [RTX A6000]");
  EXPECT_FALSE(gpus[1].contains("pci_name"));  // the H200 is newer than Debian 12's pci.ids
}

TEST(PciTest, ParsersRejectGarbage) {
  EXPECT_EQ(ParseLinkSpeed("Unknown"), std::nullopt);
  EXPECT_EQ(ParseLinkSpeed("2.5 GT/s"), 2.5);
  EXPECT_EQ(ParseLinkSpeed("8.0 GT/s PCIe"), 8.0);
  EXPECT_EQ(ParseLinkSpeed("-1 GT/s"), std::nullopt);
  EXPECT_EQ(ParseLinkSpeed("\xff\xfe"), std::nullopt);
  EXPECT_TRUE(ParseResourceFile("zz yy xx\n0x1 0x0 0x200\n").empty());
  EXPECT_EQ(NormalizePciAddress("00000000:00:06.0"), "0000:00:06.0");
  EXPECT_EQ(NormalizePciAddress("PCI:0000:00:06"), "0000:00:06.0");
  EXPECT_EQ(NormalizePciAddress("0000:C1:00.0"), "0000:c1:00.0");
  EXPECT_EQ(NormalizePciAddress("01:00.0"), "0000:01:00.0");
  EXPECT_EQ(NormalizePciAddress("garbage"), "garbage");
}

TEST(PciTest, NotATreeIsAClearError) {
  auto os = core::OsView::Rooted(std::string(GT_FIXTURES_DIR) + "/h200-root.SOURCE.md");
  ASSERT_FALSE(os.ok());
  EXPECT_NE(os.error().message.find("not a directory"), std::string::npos) << os.error().message;
  auto missing = core::OsView::Rooted("/nonexistent/tree");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "--root /nonexistent/tree: No such file or directory");
}

}  // namespace
}  // namespace gputriage::collect
