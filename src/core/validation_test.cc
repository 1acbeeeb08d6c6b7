#include "core/validation.h"

#include <gtest/gtest.h>

namespace gputriage::core {
namespace {

TEST(ValidationReport, ContractNamesAlwaysPresentAndARoundTrip) {
  ValidationReport report;
  report.level = 2;
  report.devices_found = 1;
  ValidationDevice device;
  device.vendor = "nvidia";
  device.name = "NVIDIA H200";
  device.arch = "sm_90";
  report.devices.push_back(device);
  ValidationCheck skipped;
  skipped.name = "conv2d";
  skipped.device = 0;
  skipped.dtype = "fp16";
  skipped.status = CheckStatus::kSkip;
  skipped.detail = "libcudnn.so.9 not found";
  ValidationCheck passed = skipped;
  passed.name = "gemm";
  passed.status = CheckStatus::kPass;
  passed.max_rel_error = 1e-3;
  passed.median_ms = 0.25;
  passed.throughput = 700;
  passed.throughput_unit = "TFLOP/s";
  report.checks = {skipped, passed};
  Json j = ToJson(report);
  for (const Json& d : j["devices"]) {
    EXPECT_EQ(d["vendor"], "nvidia");
    EXPECT_EQ(d["name"], "NVIDIA H200");
  }
  for (const Json& c : j["checks"]) {
    for (const char* key :
         {"name", "device", "dtype", "status", "detail", "max_rel_error", "median_ms", "throughput"}) {
      EXPECT_TRUE(c.contains(key)) << key;
    }
  }
  EXPECT_EQ(j["checks"][0]["status"], "skip");
  EXPECT_TRUE(j["checks"][0]["max_rel_error"].is_null());
  EXPECT_EQ(j["checks"][1]["status"], "pass");
  ValidationReport back = ValidationReportFromJson(j);
  ASSERT_EQ(back.checks.size(), 2u);
  EXPECT_EQ(back.checks[1].status, CheckStatus::kPass);
  EXPECT_EQ(back.checks[1].throughput, 700);
  EXPECT_EQ(back.devices_found, 1);
  CheckCounts counts = CountChecks(back.checks);
  EXPECT_EQ(counts.pass, 1);
  EXPECT_EQ(counts.skip, 1);
}

TEST(CheckStatus, NamesParseBack) {
  for (CheckStatus s : {CheckStatus::kPass, CheckStatus::kFail, CheckStatus::kSkip, CheckStatus::kError}) {
    CheckStatus parsed = CheckStatus::kPass;
    ASSERT_TRUE(ParseEnum(EnumName(s), parsed));
    EXPECT_EQ(parsed, s);
  }
  CheckStatus parsed = CheckStatus::kPass;
  EXPECT_FALSE(ParseEnum("passed", parsed));
}

}  // namespace
}  // namespace gputriage::core
