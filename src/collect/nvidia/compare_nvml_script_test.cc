// scripts/compare-nvml.py on outputs captured on the project's H200: its nvidia-smi XML reader,
// and a whole comparison of the nvidia probe's output with nvidia-smi taken moments apart.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace {

// Runs `command`, returns its stdout and sets `status` to its wait status.
std::string RunCapture(const std::string& command, int& status) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    status = -1;
    return out;
  }
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
  status = ::pclose(pipe);
  return out;
}

bool HavePython() {
  int status = 0;
  RunCapture("python3 -c 'import xml.etree.ElementTree' 2>/dev/null", status);
  return status == 0;
}

std::string Script() { return std::string("python3 ") + GT_SOURCE_DIR + "/scripts/compare-nvml.py"; }

TEST(CompareNvmlScript, ReadsTheH200Xml) {
  if (!HavePython()) GTEST_SKIP() << "python3 is not installed here";
  int status = 0;

  std::string command =
      Script() + " --self-test-xml " + GT_FIXTURES_DIR + "/nvidia/nvidia-smi-q-x-h200-driver580.159.04.xml";
  std::string out = RunCapture(command, status);
  ASSERT_EQ(status, 0) << out;
  nlohmann::json parsed = nlohmann::json::parse(out);
  EXPECT_EQ(parsed["driver_version"], "580.159.04");
  EXPECT_EQ(parsed["cuda_version"], "13.0");
  ASSERT_EQ(parsed["gpus"].size(), 1u);
  const nlohmann::json& gpu = parsed["gpus"]["0000:00:06.0"];
  EXPECT_EQ(gpu["name"], "NVIDIA H200");
  EXPECT_EQ(gpu["uuid"], "GPU-1ad98ee1-eab6-388c-0aef-e0643de2f411");
  EXPECT_EQ(gpu["serial"], "1653724026364");
  EXPECT_EQ(gpu["vbios_version"], "96.00.A5.00.1A");
  EXPECT_EQ(gpu["memory_total_mib"], 143771);
  EXPECT_EQ(gpu["power_limit_w"], 700.0);
  EXPECT_EQ(gpu["ecc_mode"], "Enabled");
  EXPECT_EQ(gpu["persistence_mode"], "Enabled");
  EXPECT_EQ(gpu["compute_mode"], "Default");
  EXPECT_EQ(gpu["mig_mode"], "Disabled");
  EXPECT_EQ(gpu["max_graphics_mhz"], 1980);
  EXPECT_EQ(gpu["max_sm_mhz"], 1980);
  EXPECT_EQ(gpu["max_memory_mhz"], 3201);
  EXPECT_EQ(gpu["pcie_max_gen"], 5);
  EXPECT_EQ(gpu["pcie_max_width"], 16);
  // Hopper retires no pages (it remaps rows): nvidia-smi prints N/A, read as unknown.
  EXPECT_TRUE(gpu["retired_pages_single_bit"].is_null());
  EXPECT_TRUE(gpu["retired_pages_pending"].is_null());
  EXPECT_EQ(gpu["remapped_rows_correctable"], 0);
  EXPECT_EQ(gpu["remapped_rows_uncorrectable"], 0);
  EXPECT_EQ(gpu["remapped_rows_pending"], "No");
  EXPECT_EQ(gpu["remapped_rows_failure"], "No");
  EXPECT_EQ(gpu["temperature_c"], 40);
  EXPECT_EQ(gpu["power_draw_w"], 124.79);
}

TEST(CompareNvmlScript, H200LivePairAgrees) {
  if (!HavePython()) GTEST_SKIP() << "python3 is not installed here";
  std::string dir = std::string(GT_FIXTURES_DIR) + "/nvidia/h200-live";
  int status = 0;
  std::string out =
      RunCapture(Script() + " --snapshot " + dir + "/probe-nvidia.json --xml " + dir + "/nvidia-smi-q-x.xml", status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_TRUE(out.ends_with("30 of 30 fields agree (2 shown, not compared)\n")) << out;
  EXPECT_NE(out.find("0000:00:06.0 uuid                          "
                     "GPU-d2acd226-ca09-5f15-7f23-58e0e13907d6  "
                     "GPU-d2acd226-ca09-5f15-7f23-58e0e13907d6  yes\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("0000:00:06.0 temperature_c ~               36"), std::string::npos) << out;
}

TEST(CompareNvmlScript, TheProbeOfToday) {
  if (!HavePython()) GTEST_SKIP() << "python3 is not installed here";
  // gputriage __probe nvidia and nvidia-smi -q -x, one after the other on an H200 (2026-12-03).
  std::string dir = std::string(GT_FIXTURES_DIR) + "/nvidia/h200-live-2026-12-03";
  int status = 0;
  std::string out =
      RunCapture(Script() + " --snapshot " + dir + "/probe-nvidia.json --xml " + dir + "/nvidia-smi-q-x.xml", status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_TRUE(out.ends_with("30 of 30 fields agree (2 shown, not compared)\n")) << out;
}

TEST(CompareNvmlScript, DisagreementExitsOne) {
  if (!HavePython()) GTEST_SKIP() << "python3 is not installed here";
  // The probe from one H200 against nvidia-smi of another (the shared fixture): the GPUs sit at
  // the same address but are different boards, so identity fields must disagree.
  int status = 0;
  std::string out =
      RunCapture(Script() + " --snapshot " + GT_FIXTURES_DIR + "/nvidia/h200-live/probe-nvidia.json --xml " +
                     GT_FIXTURES_DIR + "/nvidia/nvidia-smi-q-x-h200-driver580.159.04.xml",
                 status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << out;
  EXPECT_NE(out.find("0000:00:06.0 uuid"), std::string::npos);
  EXPECT_NE(out.find("  NO\n"), std::string::npos) << out;
  EXPECT_TRUE(out.ends_with("28 of 30 fields agree (2 shown, not compared)\n")) << out;
}

}  // namespace
