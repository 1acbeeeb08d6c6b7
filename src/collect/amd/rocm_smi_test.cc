// ROCm SMI through the real librocm_smi64 installed on the machine (Debian's librocm-smi64-1,
// ROCm 5.2, on the development machines), answering for the machine it runs on.
#include "collect/amd/rocm_smi.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "core/text.h"

namespace gputriage::amd {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

bool Exists(const char* path) {
  struct stat st {};
  return ::stat(path, &st) == 0;
}

bool RocmSmiInstalled() {
  for (const std::string& name : DefaultRocmSmiLibraries()) {
    if (void* handle = ::dlopen(name.c_str(), RTLD_LAZY | RTLD_LOCAL)) {
      ::dlclose(handle);
      return true;
    }
  }
  return false;
}

TEST(RocmSmi, RealLibraryGivesTheMachinesRealAnswer) {
  if (!RocmSmiInstalled()) GTEST_SKIP() << "librocm_smi64 is not installed (apt install librocm-smi64-1)";
  if (Exists("/sys/bus/pci/drivers/amdgpu")) GTEST_SKIP() << "this machine has an amdgpu device";
  core::Result<RocmSmiReport> report = ProbeRocmSmi();
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_THAT(report->library_path, HasSubstr("librocm_smi64.so"));
  EXPECT_TRUE(report->library_version.has_value());
  if (!Exists("/sys/class/drm")) {
    // ROCm SMI enumerates GPUs from /sys/class/drm; without it rsmi_init fails with
    // RSMI_STATUS_INIT_ERROR, and the library's text (typo included) is what users will see.
    EXPECT_EQ(report->init_status, kRsmiStatusInitError);
    EXPECT_EQ(report->init_status_text,
              "An error occurred during initialization, during monitor discovery or when when "
              "initializing internal data structures");
    EXPECT_FALSE(report->initialized());
    EXPECT_EQ(report->device_count, std::nullopt);
  } else {
    // DRM without amdgpu (another vendor's card, a virtual GPU): initialised, no device.
    EXPECT_EQ(report->init_status, kRsmiStatusSuccess) << report->init_status_text;
    EXPECT_EQ(report->device_count, 0u);
  }
  EXPECT_THAT(report->devices, IsEmpty());
  EXPECT_THAT(report->problems, IsEmpty());

  core::Json json = RocmSmiReportToJson(*report);
  EXPECT_EQ(json["init_status"], report->init_status);
  EXPECT_EQ(json["library_path"], report->library_path);
  EXPECT_EQ(json.contains("device_count"), report->device_count.has_value());
}

TEST(RocmSmi, ProbingTwiceGivesTheSameAnswer) {
  if (!RocmSmiInstalled()) GTEST_SKIP() << "librocm_smi64 is not installed";
  core::Result<RocmSmiReport> first = ProbeRocmSmi();
  core::Result<RocmSmiReport> second = ProbeRocmSmi();
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->init_status, second->init_status);
  EXPECT_EQ(first->device_count, second->device_count);
}

TEST(RocmSmi, MissingLibraryIsAnErrorNamingIt) {
  core::Result<RocmSmiReport> report = ProbeRocmSmi({"libgt_no_such_rocm_smi.so.1"});
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(report.error().message,
              HasSubstr("cannot load libgt_no_such_rocm_smi.so.1: cannot open shared object file"));
}

TEST(RocmSmi, LibraryWithoutTheEntryPointsIsAnError) {
  core::Result<RocmSmiReport> report = ProbeRocmSmi({"libc.so.6"});
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(report.error().message, HasSubstr("symbol rsmi_init not found"));
}

TEST(RocmSmi, BdfidToPciAddress) {
  EXPECT_EQ(PciAddressFromBdfid(0x8300), "0000:83:00.0");
  EXPECT_EQ(PciAddressFromBdfid((uint64_t{1} << 32) | (0x43 << 8) | (2 << 3) | 1), "0001:43:02.1");
  EXPECT_EQ(PciAddressFromBdfid((uint64_t{3} << 28) | (0x0c << 8)), "0000:0c:00.0");  // partition 3
}

}  // namespace
}  // namespace gputriage::amd
