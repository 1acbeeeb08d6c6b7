#include "report/telemetry_chart.h"

#include <gtest/gtest.h>

namespace gputriage::report {
namespace {

core::TelemetrySample S(double t, int device, int temperature, std::vector<std::string> reasons = {}) {
  core::TelemetrySample s;
  s.t_s = t;
  s.device = device;
  s.temperature_c = temperature;
  s.power_w = 100.0 + temperature;
  s.throttle_reasons = std::move(reasons);
  return s;
}

TEST(TelemetryChart, PanelsForTheQuantitiesPresentOneLinePerGpu) {
  std::vector<core::TelemetrySample> samples = {S(-10, 0, 60), S(-10, 1, 50),
                                                S(-5, 0, 70),  S(-5, 1, 55, {"hw_thermal_slowdown", "gpu_idle"}),
                                                S(0, 0, 80),   S(0, 1, 56)};
  TelemetryChart c = LayoutTelemetry(samples, /*relative_to_failure=*/true, 960);
  ASSERT_EQ(c.panels.size(), 2u);  // temperature and power; no clock or memory in the samples
  EXPECT_EQ(c.panels[0].title, "Temperature (°C)");
  EXPECT_EQ(c.panels[1].title, "Power (W)");
  ASSERT_EQ(c.panels[0].lines.size(), 2u);
  EXPECT_EQ(c.panels[0].lines[0].first, 0);
  ASSERT_EQ(c.panels[0].lines[0].second.size(), 3u);
  // Time runs left to right; the hotter sample is drawn higher.
  EXPECT_LT(c.panels[0].lines[0].second[0].first, c.panels[0].lines[0].second[2].first);
  EXPECT_GT(c.panels[0].lines[0].second[0].second, c.panels[0].lines[0].second[2].second);
  EXPECT_EQ(c.devices, 2u);
  ASSERT_TRUE(c.failure_x.has_value());
  EXPECT_DOUBLE_EQ(*c.failure_x, c.x1);  // the last samples are at the failure
  ASSERT_EQ(c.marks.size(), 1u);
  EXPECT_EQ(c.marks[0].text, "t=-5.0 s GPU 1: hw_thermal_slowdown");

  std::string svg = RenderTelemetrySvg(c);
  EXPECT_EQ(svg.rfind("<svg class=\"telemetry\"", 0), 0u);
  EXPECT_NE(svg.find(">Temperature (°C)</text>"), std::string::npos);
  EXPECT_NE(svg.find("<title>t=-5.0 s GPU 1: hw_thermal_slowdown</title>"), std::string::npos);
  EXPECT_NE(svg.find(">seconds from the failure</text>"), std::string::npos);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
}

TEST(TelemetryChart, FromTheStartWhenTheFailureCannotBePlaced) {
  TelemetryChart c = LayoutTelemetry({S(1, 0, 40), S(2, 0, 40)}, /*relative_to_failure=*/false);
  EXPECT_FALSE(c.failure_x.has_value());
  EXPECT_EQ(c.axis_title, "seconds from the job's start");
  ASSERT_EQ(c.panels.size(), 2u);
  EXPECT_LT(c.panels[0].min, 40);  // a flat line gets a range around it
  EXPECT_GT(c.panels[0].max, 40);
  EXPECT_TRUE(c.marks.empty());
  EXPECT_NE(RenderTelemetrySvg(c).find(">none</text>"), std::string::npos);
}

// Memory used from 0 to 1.2 GiB (the H100 run of 2026-12-05): the axis starts at 0, not below.
TEST(TelemetryChart, AnAxisOfNonNegativeValuesStartsAtZeroAtMost) {
  std::vector<core::TelemetrySample> samples(3);
  for (size_t i = 0; i < samples.size(); ++i) {
    samples[i].t_s = static_cast<double>(i);
    samples[i].memory_used_mib = i == 1 ? 1228.8 : 0.0;
  }
  TelemetryChart c = LayoutTelemetry(samples, /*relative_to_failure=*/false);
  ASSERT_EQ(c.panels.size(), 1u);
  EXPECT_EQ(c.panels[0].min, 0.0);
  EXPECT_GT(c.panels[0].max, 1228.8 / 1024);
}

TEST(TelemetryChart, NoSamplesNoPanels) {
  TelemetryChart c = LayoutTelemetry({}, true);
  EXPECT_TRUE(c.panels.empty());
  EXPECT_EQ(c.samples, 0u);
}

}  // namespace
}  // namespace gputriage::report
