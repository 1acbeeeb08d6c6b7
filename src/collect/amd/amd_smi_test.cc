// AMD SMI: the status table and the version gate against the values of AMD's header, and the
// probe's choice between AMD SMI and ROCm SMI with the real libraries of this machine (Debian 12
// has ROCm SMI, librocm-smi64-1, and no AMD SMI package). No stand-in for either library.
#include "collect/amd/amd_smi.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "collect/amd/amd.h"
#include "collect/amd/rocm_smi.h"

namespace gputriage::amd {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

bool Loads(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (void* handle = ::dlopen(name.c_str(), RTLD_LAZY | RTLD_LOCAL)) {
      ::dlclose(handle);
      return true;
    }
  }
  return false;
}

const uint32_t kNoWords[4] = {0, 0, 0, 0};

TEST(AmdSmiStatus, NamesAndDescriptionsFromTheHeader) {
  EXPECT_EQ(AmdSmiStatusName(0), "AMDSMI_STATUS_SUCCESS (Call succeeded)");
  EXPECT_EQ(AmdSmiStatusName(kAmdSmiStatusNotSupported), "AMDSMI_STATUS_NOT_SUPPORTED (Command not supported)");
  EXPECT_EQ(AmdSmiStatusName(kAmdSmiStatusInitError),
            "AMDSMI_STATUS_INIT_ERROR (An error occurred when initializing internal data structures)");
  EXPECT_EQ(AmdSmiStatusName(32), "AMDSMI_STATUS_NOT_INIT (Device not initialized)");
  EXPECT_EQ(AmdSmiStatusName(34), "AMDSMI_STATUS_DRIVER_NOT_LOADED (Processor driver not loaded)");
  EXPECT_EQ(AmdSmiStatusName(55), "AMDSMI_STATUS_SETTING_UNAVAILABLE (Setting is not available)");  // 24.5
  EXPECT_EQ(AmdSmiStatusName(56), "AMDSMI_STATUS_CORRUPTED_EEPROM (EEPROM is corrupted)");          // 26.5
  EXPECT_EQ(AmdSmiStatusName(0xFFFFFFFF), "AMDSMI_STATUS_UNKNOWN_ERROR (An unknown error occurred)");
  // Gaps of the enum are not named.
  EXPECT_EQ(AmdSmiStatusName(22), "unknown status 22");
  EXPECT_EQ(AmdSmiStatusName(57), "unknown status 57");
}

TEST(AmdSmiVersion, BuildStringsOfEachNumberingScheme) {
  auto v = ParseAmdSmiVersion("24.6.2.0", kNoWords);  // ROCm 6.2.0's AMDSMI_LIB_VERSION_STRING
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->text, "24.6.2.0");
  EXPECT_EQ(v->major, 24u);
  EXPECT_EQ(v->minor, 6u);
  EXPECT_EQ(v->patch, 2u);

  v = ParseAmdSmiVersion("26.5.0", kNoWords);  // 26.x: Major.Minor.Release, no year
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->text, "26.5.0");
  EXPECT_EQ(v->major, 26u);
  EXPECT_EQ(v->minor, 5u);

  v = ParseAmdSmiVersion("25.3.0+ede62f2", kNoWords);  // as amd-smi version prints its tool
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->text, "25.3.0");
}

TEST(AmdSmiVersion, WordsWhenTheBuildStringIsMissingOrBroken) {
  const uint32_t words[4] = {24, 5, 2, 0};  // amdsmi_version_t {year, major, minor, release}
  auto v = ParseAmdSmiVersion(std::nullopt, words);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->text, "24.5.2.0");
  v = ParseAmdSmiVersion("not a version", words);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->text, "24.5.2.0");
  const uint32_t garbage[4] = {7, 1, 2, 3};
  EXPECT_FALSE(ParseAmdSmiVersion("24.x", garbage).has_value());
  EXPECT_FALSE(ParseAmdSmiVersion("24", garbage).has_value());
  EXPECT_FALSE(ParseAmdSmiVersion(std::nullopt, garbage).has_value());
}

TEST(AmdSmiVersion, GateChoosesTheLayoutsReadFromTheHeader) {
  auto layout = [](std::string_view text) {
    auto v = ParseAmdSmiVersion(text, kNoWords);
    return v ? AmdSmiLayoutFor(*v) : AmdSmiLayout::kUnverified;
  };
  EXPECT_EQ(layout("23.4.0.0"), AmdSmiLayout::kRocm60);      // rocm-6.0.0, rocm-6.0.2
  EXPECT_EQ(layout("24.5.0.0"), AmdSmiLayout::kRocm61);      // rocm-6.1.0
  EXPECT_EQ(layout("24.5.2.0"), AmdSmiLayout::kRocm61);      // rocm-6.1.2
  EXPECT_EQ(layout("24.6.3.0"), AmdSmiLayout::kRocm61);      // rocm-6.2.1, rocm-6.2.2
  EXPECT_EQ(layout("24.7.0.0"), AmdSmiLayout::kRocm61);      // ROCm 6.3 development
  EXPECT_EQ(layout("23.2.0.0"), AmdSmiLayout::kUnverified);  // ROCm 5.7: not read
  EXPECT_EQ(layout("24.4.0.0"), AmdSmiLayout::kUnverified);  // unreleased, between the two
  EXPECT_EQ(layout("25.3.0"), AmdSmiLayout::kUnverified);    // ROCm 6.4: power_info reshaped
  EXPECT_EQ(layout("26.5.0"), AmdSmiLayout::kUnverified);    // 256-byte strings
  EXPECT_EQ(AmdSmiLayoutName(AmdSmiLayout::kRocm60), "rocm-6.0");
  EXPECT_EQ(AmdSmiLayoutName(AmdSmiLayout::kRocm61), "rocm-6.1");
  EXPECT_EQ(AmdSmiLayoutName(AmdSmiLayout::kUnverified), "unverified");
}

TEST(AmdSmiProbe, MissingLibraryIsAnErrorNamingIt) {
  core::Result<AmdSmiReport> report = ProbeAmdSmi({"libgt_no_such_amd_smi.so"});
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(report.error().message,
              HasSubstr("cannot load libgt_no_such_amd_smi.so: cannot open shared object file"));
}

TEST(AmdSmiProbe, LibraryWithoutTheEntryPointsIsAnError) {
  core::Result<AmdSmiReport> report = ProbeAmdSmi({"libc.so.6"});
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(report.error().message, HasSubstr("symbol amdsmi_init not found"));
}

TEST(AmdSmiProbe, RealLibraryWhenInstalled) {
  if (!Loads(DefaultAmdSmiLibraries())) GTEST_SKIP() << "libamd_smi.so is not installed (no Debian package)";
  core::Result<AmdSmiReport> report = ProbeAmdSmi();
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_THAT(report->library_path, HasSubstr("libamd_smi.so"));
  EXPECT_FALSE(report->init_status_text.empty());
  if (report->initialized()) {
    EXPECT_TRUE(report->library_version.has_value());
  }
}

TEST(CollectSmi, WithoutAmdSmiRocmSmiAnswersAndTheNoteSaysWhy) {
  if (!Loads(DefaultRocmSmiLibraries())) GTEST_SKIP() << "librocm_smi64 is not installed (apt install librocm-smi64-1)";
  core::Section section;
  CollectSmi(section, {{"libgt_no_such_amd_smi.so"}, DefaultRocmSmiLibraries()});
  EXPECT_EQ(section.data["smi_library"], "rocm_smi");
  EXPECT_FALSE(section.data.contains("amd_smi"));  // nothing loaded, nothing answered
  ASSERT_TRUE(section.data.contains("smi"));
  EXPECT_THAT(section.data["smi"]["library_path"].get<std::string>(), HasSubstr("librocm_smi64.so"));
  bool noted = false;
  for (const core::NotCollected& note : section.not_collected) {
    if (note.item != "amd.amd_smi") continue;
    noted = true;
    EXPECT_THAT(note.reason, StartsWith("AMD SMI: cannot load libgt_no_such_amd_smi.so: cannot open shared object"));
    EXPECT_THAT(note.reason, ::testing::EndsWith("; ROCm SMI was asked instead"));
  }
  EXPECT_TRUE(noted);
}

TEST(CollectSmi, AmdSmiWithMissingSymbolsFallsBackToo) {
  if (!Loads(DefaultRocmSmiLibraries())) GTEST_SKIP() << "librocm_smi64 is not installed";
  core::Section section;
  CollectSmi(section, {{"libc.so.6"}, DefaultRocmSmiLibraries()});
  EXPECT_EQ(section.data["smi_library"], "rocm_smi");
  ASSERT_FALSE(section.not_collected.empty());
  EXPECT_EQ(section.not_collected.back().item, "amd.amd_smi");
  EXPECT_THAT(section.not_collected.back().reason, HasSubstr("symbol amdsmi_init not found"));
}

TEST(CollectSmi, NeitherLibraryLoads) {
  core::Section section;
  CollectSmi(section, {{"libgt_no_such_amd_smi.so"}, {"libgt_no_such_rocm_smi.so"}});
  EXPECT_FALSE(section.data.contains("smi_library"));
  EXPECT_FALSE(section.data.contains("smi"));
  ASSERT_EQ(section.not_collected.size(), 2u);
  EXPECT_EQ(section.not_collected[0].item, "amd.smi");
  EXPECT_THAT(section.not_collected[0].reason, StartsWith("ROCm SMI: cannot load libgt_no_such_rocm_smi.so"));
  EXPECT_EQ(section.not_collected[1].item, "amd.amd_smi");
  EXPECT_THAT(section.not_collected[1].reason, ::testing::EndsWith("; ROCm SMI did not load either"));
}

}  // namespace
}  // namespace gputriage::amd
