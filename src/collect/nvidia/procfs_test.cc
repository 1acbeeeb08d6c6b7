// The /proc/driver/nvidia parsers on real captured files (tests/fixtures/nvidia/, each with a
// "# source:" first line that is stripped here, and the H200 tree in tests/fixtures/h200-root).
#include "collect/nvidia/procfs.h"

#include <gtest/gtest.h>

#include <string>

#include "capture_tree.h"

namespace gputriage::nvidia {
namespace {

// A fixture's captured text: everything after its "# source:" line.
std::string ProcfsCapture(const std::string& name) { return gputriage::testing::ReadCapture("nvidia/" + name); }

// A file of the captured H200 tree (tests/fixtures/h200-root), as it is.
std::string H200File(const std::string& path) {
  return gputriage::testing::ReadFixture(
      "h200-root" + path, {.source_line = gputriage::testing::SourceLine::kKeep, .missing_fails_test = true});
}

TEST(ParseVersionFile, OpenModule565) {
  DriverVersionInfo info = ParseVersionFile(ProcfsCapture("version-open-565.57.01-ubuntu24.04.txt"));
  EXPECT_EQ(info.version_line,
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build  "
            "(dvs-builder@U16-A24-9-2)  Thu Oct 10 12:15:00 UTC 2024");
  EXPECT_EQ(info.driver_version, "565.57.01");
  EXPECT_EQ(info.kernel_module, "open");
  EXPECT_EQ(info.arch, "x86_64");
  EXPECT_EQ(info.gcc_version, "gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)");
  EXPECT_TRUE(info.problems.empty());
}

TEST(ParseVersionFile, TrailingSpacesAreNotPartOfTheValues) {
  DriverVersionInfo info = ParseVersionFile(ProcfsCapture("version-open-525.60.11-arch-trailing-spaces.txt"));
  EXPECT_EQ(info.version_line,
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  525.60.11  Release Build  "
            "(archlinux-builder@localhost)");
  EXPECT_EQ(info.driver_version, "525.60.11");
  EXPECT_EQ(info.gcc_version, "gcc version 12.2.0 (GCC)");
  EXPECT_TRUE(info.problems.empty());
}

TEST(ParseVersionFile, JetsonAarch64WithL4tNumbering) {
  DriverVersionInfo info = ParseVersionFile(ProcfsCapture("version-open-aarch64-jetson-35.3.1.txt"));
  EXPECT_EQ(info.driver_version, "35.3.1");
  EXPECT_EQ(info.kernel_module, "open");
  EXPECT_EQ(info.arch, "aarch64");
  EXPECT_EQ(info.gcc_version, "gcc version 9.3.0 (Buildroot 2020.08)");
  EXPECT_TRUE(info.problems.empty());
}

TEST(ParseVersionFile, LineCutShortStillYieldsTheVersion) {
  DriverVersionInfo info = ParseVersionFile(ProcfsCapture("version-open-515.43.04-first-line-cut.txt"));
  EXPECT_EQ(info.version_line,
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  515.43.04  Release Build  "
            "(roo");
  EXPECT_EQ(info.driver_version, "515.43.04");
  EXPECT_EQ(info.gcc_version, "gcc version 4.8.5 20150623 (Red Hat 4.8.5-36) (GCC)");
  EXPECT_TRUE(info.problems.empty());
}

TEST(ParseVersionFile, H200CapturedTree) {
  DriverVersionInfo info = ParseVersionFile(H200File("/proc/driver/nvidia/version"));
  EXPECT_EQ(info.version_line,
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  "
            "(nixbld@)");
  EXPECT_EQ(info.driver_version, "580.159.04");
  EXPECT_EQ(info.kernel_module, "open");
  EXPECT_EQ(info.arch, "x86_64");
  EXPECT_EQ(info.gcc_version, "gcc version 15.3.0 (GCC)");
  EXPECT_TRUE(info.problems.empty());
}

TEST(ParseVersionFile, GarbageIsReportedNotGuessed) {
  DriverVersionInfo empty = ParseVersionFile("");
  EXPECT_EQ(empty.driver_version, std::nullopt);
  ASSERT_EQ(empty.problems.size(), 1u);
  EXPECT_EQ(empty.problems[0], "empty file");

  DriverVersionInfo binary =
      ParseVersionFile(std::string("\x7f"
                                   "ELF\x02\x01\x01\0\0\0",
                                   10));
  EXPECT_EQ(binary.driver_version, std::nullopt);
  ASSERT_EQ(binary.problems.size(), 2u);
  EXPECT_EQ(binary.problems[0], "7 control or NUL bytes in 10 bytes (not a text file?)");
  EXPECT_EQ(binary.problems[1], "no 'NVRM version:' line");

  DriverVersionInfo no_number = ParseVersionFile("NVRM version: NVIDIA UNIX Open Kernel Module\n");
  EXPECT_EQ(no_number.driver_version, std::nullopt);
  EXPECT_EQ(no_number.kernel_module, "open");
  ASSERT_EQ(no_number.problems.size(), 1u);
  EXPECT_EQ(no_number.problems[0], "no driver version number in the NVRM version line");
}

TEST(ParseInformationFile, NvidiaL4) {
  GpuInformation info = ParseInformationFile(ProcfsCapture("information-l4-0000-70-00.0.txt"));
  EXPECT_TRUE(info.problems.empty());
  ASSERT_EQ(info.fields.size(), 10u);
  EXPECT_EQ(info.fields[0], std::make_pair(std::string("Model"), std::string("NVIDIA L4")));
  EXPECT_EQ(info.fields[9], std::make_pair(std::string("GPU Excluded"), std::string("No")));
  EXPECT_EQ(info.model, "NVIDIA L4");
  EXPECT_EQ(info.irq, 16u);
  EXPECT_EQ(info.uuid, "GPU-3291dfa4-fcc4-0110-615b-c894a0d7c689");
  EXPECT_EQ(info.video_bios, "95.04.65.00.13");
  EXPECT_EQ(info.bus_type, "PCIe");
  EXPECT_EQ(info.dma_size_bits, 47u);
  EXPECT_EQ(info.dma_mask, 0x7fffffffffffu);
  EXPECT_EQ(info.bus_location, "0000:70:00.0");
  EXPECT_EQ(info.device_minor, 0u);
  EXPECT_EQ(info.gpu_firmware, std::nullopt);
  EXPECT_EQ(info.excluded, false);
}

TEST(ParseInformationFile, H200WithGpuFirmware) {
  GpuInformation info = ParseInformationFile(H200File("/proc/driver/nvidia/gpus/0000:00:06.0/information"));
  EXPECT_TRUE(info.problems.empty());
  EXPECT_EQ(info.model, "NVIDIA H200");
  EXPECT_EQ(info.irq, 41u);
  EXPECT_EQ(info.uuid, "GPU-6562dc0d-c3be-5b83-aaf0-0ec13858250e");
  EXPECT_EQ(info.video_bios, "96.00.a5.00.1a");
  EXPECT_EQ(info.dma_size_bits, 52u);
  EXPECT_EQ(info.dma_mask, 0xfffffffffffffu);
  EXPECT_EQ(info.bus_location, "0000:00:06.0");
  EXPECT_EQ(info.gpu_firmware, "580.159.04");
  EXPECT_EQ(info.excluded, false);
}

TEST(ParseInformationFile, TruncatedCaptureKeepsWhatWasThere) {
  std::string full = ProcfsCapture("information-l4-0000-70-00.0.txt");
  std::string cut = full.substr(0, full.find("GPU UUID") + 6);  // ends in "GPU UU"
  GpuInformation info = ParseInformationFile(cut);
  EXPECT_EQ(info.model, "NVIDIA L4");
  EXPECT_EQ(info.irq, 16u);
  EXPECT_EQ(info.uuid, std::nullopt);
  ASSERT_EQ(info.problems.size(), 3u);
  EXPECT_EQ(info.problems[0], "not 'Key: value': line 3 \"GPU UU\"");
  EXPECT_EQ(info.problems[1], "missing Bus Type, Bus Location (truncated?)");
  EXPECT_EQ(info.problems[2], "does not end with a newline (truncated?)");
}

TEST(ParseInformationFile, DriverPlaceholdersReadAsUnknown) {
  // Not a capture: written from the format strings of the kernel module's nv-procfs.c, which
  // prints "Unknown" and "??" digits when the GPU could not be read (no public capture with
  // the complete placeholder lines was found).
  GpuInformation info = ParseInformationFile(
      "Model: \t\t Unknown\nIRQ:   \t\t 35\nGPU UUID: \t GPU-????????"
      "-????"
      "-????"
      "-????"
      "-????????????\n"
      "Video BIOS: \t ??.??.??.??.??\nBus Type: \t PCIe\nBus Location: \t 0000:00:08.0\n");
  EXPECT_TRUE(info.problems.empty());
  EXPECT_EQ(info.model, std::nullopt);
  EXPECT_EQ(info.uuid, std::nullopt);
  EXPECT_EQ(info.video_bios, std::nullopt);
  EXPECT_EQ(info.irq, 35u);
  ASSERT_EQ(info.fields.size(), 6u);
  EXPECT_EQ(info.fields[0].second, "Unknown");
}

TEST(ParseInformationFile, BinaryBytes) {
  GpuInformation info =
      ParseInformationFile(std::string("\x7f"
                                       "ELF\x02\x01\x01\0\0\0",
                                       10));
  EXPECT_TRUE(info.fields.empty());
  ASSERT_EQ(info.problems.size(), 4u);
  EXPECT_EQ(info.problems[0], "7 control or NUL bytes in 10 bytes (not a text file?)");
  EXPECT_EQ(info.problems[1],
            "not 'Key: value': line 1 \"\xEF\xBF\xBD"
            "ELF\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");
  EXPECT_EQ(info.problems[2], "no 'Key: value' lines");
  EXPECT_EQ(info.problems[3], "does not end with a newline (truncated?)");
}

TEST(ParseInformationFile, InvalidUtf8IsReplacedInValues) {
  GpuInformation info = ParseInformationFile("Model: \t\t NVIDIA \xff\xfe\nIRQ: 1\nBus Type: PCIe\nBus Location: x\n");
  EXPECT_EQ(info.model, "NVIDIA \xEF\xBF\xBD\xEF\xBF\xBD");
  ASSERT_EQ(info.problems.size(), 1u);
  EXPECT_EQ(info.problems[0], "invalid UTF-8 (replaced with U+FFFD)");
}

TEST(ParseInformationFile, ManyBadLinesAreCounted) {
  GpuInformation info = ParseInformationFile("a\nb\nc\nd\ne\n");
  ASSERT_FALSE(info.problems.empty());
  EXPECT_EQ(info.problems[0], "not 'Key: value': line 1 \"a\", line 2 \"b\", line 3 \"c\" and 2 more");
}

TEST(NormalizePciBusId, Forms) {
  EXPECT_EQ(NormalizePciBusId("00000000:00:06.0"), "0000:00:06.0");
  EXPECT_EQ(NormalizePciBusId("0000:C1:00.0"), "0000:c1:00.0");
  EXPECT_EQ(NormalizePciBusId(" 0000:70:00.0\n"), "0000:70:00.0");
  EXPECT_EQ(NormalizePciBusId("00010000:01:00.0"), "10000:01:00.0");
  EXPECT_EQ(NormalizePciBusId("0000:00:20.0"), std::nullopt);  // device > 31
  EXPECT_EQ(NormalizePciBusId("0000:00:06.8"), std::nullopt);  // function > 7
  EXPECT_EQ(NormalizePciBusId("0"), std::nullopt);
  EXPECT_EQ(NormalizePciBusId("0000:0g:06.0"), std::nullopt);
  EXPECT_EQ(NormalizePciBusId(""), std::nullopt);
}

}  // namespace
}  // namespace gputriage::nvidia
