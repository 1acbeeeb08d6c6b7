// The amdgpu telemetry sampler on --root trees materialised from real captures (tests/fixtures/amd/).
#include "collect/amd/telemetry.h"

#include <gtest/gtest.h>

#include "collect/amd/capture_tree_for_test.h"

namespace gputriage::amd {
namespace {

using gputriage::testing::MaterializeCat;
using gputriage::testing::MaterializeGrepDot;
using gputriage::testing::TempTree;
using testing::MaterialiseSensors;
using testing::ReadFixture;

constexpr const char* kAmdgpuDriverLink = "../../../../bus/pci/drivers/amdgpu";

TEST(AmdgpuSampler, SamplesHwmonTemperatureAndPower) {
  TempTree tree;
  std::string dir = "/sys/bus/pci/devices/0000:03:00.0";
  tree.Link(dir + "/driver", kAmdgpuDriverLink);
  MaterialiseSensors(tree, dir + "/hwmon/hwmon0",
                     ReadFixture("hwmon-lm-sensors-amdgpu-rx7900xt-edge-junction-mem-ppt.txt"));
  core::Result<core::OsView> os = core::OsView::Rooted(tree.root());
  ASSERT_TRUE(os.ok());
  AmdgpuSampler sampler(*os);
  ASSERT_EQ(sampler.devices(), 1u);
  std::vector<core::TelemetrySample> samples = sampler.Sample(/*first_index=*/2);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].device, 2);
  EXPECT_EQ(samples[0].temperature_c, 37);  // the edge sensor, not junction (39) or mem (60)
  ASSERT_TRUE(samples[0].power_w.has_value());
  EXPECT_DOUBLE_EQ(*samples[0].power_w, 19.0);
  EXPECT_FALSE(samples[0].sm_clock_mhz.has_value());
  EXPECT_TRUE(samples[0].throttle_reasons.empty());
}

TEST(AmdgpuSampler, SamplesCurrentSclkAndVramUsed) {
  TempTree tree;
  MaterializeGrepDot(ReadFixture("grep-dot-drm-card1-device-pp_dpm_sclk-mclk-pcie-power-profile-excerpt.txt"),
                     tree.root());
  MaterializeCat(ReadFixture("mem_info_vram_used-and-total-cat-nixos.txt"), tree.root());
  tree.Link("/sys/class/drm/card0/device/driver", kAmdgpuDriverLink);
  tree.Link("/sys/class/drm/card1/device/driver", kAmdgpuDriverLink);
  core::Result<core::OsView> os = core::OsView::Rooted(tree.root());
  ASSERT_TRUE(os.ok());
  AmdgpuSampler sampler(*os);
  std::vector<core::TelemetrySample> samples = sampler.Sample();
  ASSERT_EQ(samples.size(), 2u);
  ASSERT_TRUE(samples[0].memory_used_mib.has_value());
  EXPECT_NEAR(*samples[0].memory_used_mib, 6812925952.0 / (1 << 20), 1e-6);
  EXPECT_EQ(samples[1].sm_clock_mhz, 1233);               // the level marked '*'
  EXPECT_FALSE(samples[1].memory_clock_mhz.has_value());  // the excerpt marks no mclk level
}

TEST(AmdgpuSampler, NoAmdgpuDeviceSamplesNothing) {
  TempTree tree;
  tree.Write("/sys/bus/pci/devices/0000:01:00.0/vendor", "0x10de\n");
  core::Result<core::OsView> os = core::OsView::Rooted(tree.root());
  ASSERT_TRUE(os.ok());
  AmdgpuSampler sampler(*os);
  EXPECT_EQ(sampler.devices(), 0u);
  EXPECT_TRUE(sampler.Sample().empty());
}

}  // namespace
}  // namespace gputriage::amd
