#include "core/telemetry.h"

#include <gtest/gtest.h>

namespace gputriage::core {
namespace {

TelemetrySample Sample(double t, int device) {
  TelemetrySample s;
  s.t_s = t;
  s.device = device;
  s.phase = "run";
  s.temperature_c = 71;
  s.power_w = 512.25;
  s.sm_clock_mhz = 1980;
  s.memory_clock_mhz = 3201;
  s.memory_used_mib = 80123.5;
  s.throttle_reasons = {"sw_power_cap", "hw_thermal_slowdown"};
  return s;
}

TEST(TelemetryCsv, RoundTripsEveryColumn) {
  TelemetrySample partial;
  partial.t_s = 1.5;
  partial.device = 1;
  partial.phase = "run";
  partial.power_w = 90;
  std::string csv = TelemetryCsv({Sample(-2.25, 0), partial});
  EXPECT_EQ(csv,
            "t_s,device,temperature_c,power_w,sm_clock_mhz,memory_clock_mhz,memory_used_mib,throttle_reasons\n"
            "-2.250,0,71,512.2,1980,3201,80123.5,sw_power_cap;hw_thermal_slowdown\n"
            "1.500,1,,90.0,,,,\n");
  Result<TelemetryCsvContents> back = ParseTelemetryCsv(csv);
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->samples.size(), 2u);
  EXPECT_TRUE(back->problems.empty());
  EXPECT_DOUBLE_EQ(back->samples[0].t_s, -2.25);
  EXPECT_EQ(back->samples[0].temperature_c, 71);
  EXPECT_EQ(back->samples[0].throttle_reasons, (std::vector<std::string>{"sw_power_cap", "hw_thermal_slowdown"}));
  EXPECT_EQ(back->samples[1].device, 1);
  EXPECT_FALSE(back->samples[1].temperature_c.has_value());
  EXPECT_EQ(back->samples[1].power_w, 90.0);
  EXPECT_TRUE(back->samples[1].throttle_reasons.empty());
}

TEST(TelemetryCsv, ANameThatCouldBreakTheCsvIsNotWritten) {
  TelemetrySample s;
  s.throttle_reasons = {"hw_slowdown", "evil,\nline", "0x400"};
  EXPECT_EQ(TelemetryCsvLine(s), "0.000,0,,,,,,hw_slowdown;0x400");
}

TEST(TelemetryCsv, BadLinesAreSkippedAndNamed) {
  std::string csv = std::string(kTelemetryCsvColumns) +
                    "\n"
                    "1.0,0,50,100,1000,2000,10,\n"
                    "x,0,50,100,1000,2000,10,\n"
                    "2.0,-1,50,100,1000,2000,10,\n"
                    "3.0,0,hot,100,1000,2000,10,\n"
                    "4.0,0,50,100\n"
                    "5.0,0,50,100,1000,2000,10,bad reason\n"
                    "6.0,0,50,1e300,1000,2000,10,\n"
                    "\xff\xfe,\x01\n"
                    "7.0,1,,,,,,\n";
  Result<TelemetryCsvContents> out = ParseTelemetryCsv(csv);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->samples.size(), 2u);
  EXPECT_DOUBLE_EQ(out->samples[1].t_s, 7.0);
  ASSERT_EQ(out->problems.size(), 7u);
  EXPECT_EQ(out->problems[0], "line 3: t_s 'x' is not a time");
  EXPECT_EQ(out->problems[1], "line 4: device '-1' is not a GPU index");
  EXPECT_EQ(out->problems[2], "line 5: a value is not a number");
  EXPECT_EQ(out->problems[3], "line 6: 4 fields, expected 8");
  EXPECT_EQ(out->problems[4], "line 7: a throttle reason is not a reason name");
  EXPECT_EQ(out->problems[5], "line 8: a value is not a number");
}

TEST(TelemetryCsv, AnotherHeaderIsNotTelemetry) {
  EXPECT_FALSE(ParseTelemetryCsv("").ok());
  EXPECT_FALSE(ParseTelemetryCsv("time,temp\n1,2\n").ok());
  Result<TelemetryCsvContents> r = ParseTelemetryCsv("t_s,device\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("not a telemetry CSV"), std::string::npos);
}

TEST(TelemetryCsv, KeepsAtMostTheCapAndSaysSo) {
  std::string csv = std::string(kTelemetryCsvColumns) + "\n";
  for (int i = 0; i < 10; ++i) csv += std::to_string(i) + ",0,,,,,,\n";
  Result<TelemetryCsvContents> out = ParseTelemetryCsv(csv, "run", 4);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->samples.size(), 4u);
  ASSERT_EQ(out->problems.size(), 1u);
  EXPECT_EQ(out->problems[0], "6 samples past the first 4 were not read");
}

TEST(Telemetry, SlowdownReasons) {
  EXPECT_TRUE(IsSlowdownReason("hw_thermal_slowdown"));
  EXPECT_TRUE(IsSlowdownReason("sw_power_cap"));
  EXPECT_TRUE(IsSlowdownReason("hw_power_brake_slowdown"));
  EXPECT_FALSE(IsSlowdownReason("gpu_idle"));
  EXPECT_FALSE(IsSlowdownReason("applications_clocks_setting"));
  EXPECT_FALSE(IsSlowdownReason("sync_boost"));
}

}  // namespace
}  // namespace gputriage::core
