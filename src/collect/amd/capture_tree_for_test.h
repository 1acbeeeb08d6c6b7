// AMD-only test helpers (header-only, so the library glob does not pick them up), on top of the
// shared tests/support/capture_tree.h (TempTree, ReadCapture, the grep / tail / cat
// materialisers): read a fixture from tests/fixtures/amd/, split a KFD "cat nodes/*/properties"
// capture, extract an rvs gpup trace, and turn an lm-sensors block back into hwmon files.
#pragma once

#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "capture_tree.h"
#include "core/text.h"

namespace gputriage::amd::testing {

/// tests/fixtures/amd/<name> without its "# source:" line; fails the test when the file or
/// that line is missing.
inline std::string ReadFixture(const std::string& name) { return gputriage::testing::ReadCapture("amd/" + name); }

/// The blocks of a KFD capture that printed every nodes/N/properties between lines of dashes,
/// in node order: block i is nodes/i/properties.
inline std::vector<std::string> SplitDashedBlocks(std::string_view capture) {
  std::vector<std::string> blocks;
  std::string current;
  bool open = false;
  for (std::string_view line : core::SplitLines(capture)) {
    if (line.starts_with("-----")) {
      if (open && !current.empty()) blocks.push_back(current);
      current.clear();
      open = true;
    } else if (open) {
      current += std::string(line) + "\n";
    }
  }
  if (open && !current.empty()) blocks.push_back(current);
  return blocks;
}

/// The "name value" lines that rocm-validation-suite's gpup module traced for GPU `gpu_id`
/// ("[RESULT] [ 95216.773278] [action_1] gpup 38156 simd_count 144"), as a properties file.
inline std::string RvsGpupProperties(std::string_view capture, std::string_view gpu_id) {
  std::string marker = "gpup " + std::string(gpu_id) + " ";
  std::string out;
  for (std::string_view line : core::SplitLines(capture)) {
    size_t at = line.find(marker);
    if (at != std::string_view::npos) out += std::string(line.substr(at + marker.size())) + "\n";
  }
  return out;
}

/// An lm-sensors block for an amdgpu chip turned back into the hwmon files it was printed from
/// (the inverse of libsensors' formatting, which prints input / 1000 for temperatures and
/// input / 1e6 for power): "edge: +37.0°C" -> tempN_label "edge", tempN_input 37000, labelled
/// temperatures numbered 1, 2, 3 in order as amdgpu numbers edge, junction, mem; "temp1:" ->
/// temp1_input only (no label); "PPT: 19.00 W (cap = 250.00 W)" or "power1: ..." ->
/// power1_average (+ power1_label "PPT") and power1_cap in microwatts; "fan1: 3997 RPM" ->
/// fan1_input. Voltage lines are skipped. This derivation is a test construction, not a capture.
inline void MaterialiseSensors(const gputriage::testing::TempTree& tree, const std::string& hwmon_dir,
                               std::string_view capture) {
  int next_temp = 1;
  for (std::string_view line : core::SplitLines(capture)) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || line.starts_with(" ")) continue;
    std::string label(core::Trim(line.substr(0, colon)));
    std::vector<std::string_view> fields = core::SplitWhitespace(line.substr(colon + 1));
    if (fields.empty()) continue;
    std::string_view value = fields[0];
    if (value.find("\xC2\xB0"
                   "C") != std::string_view::npos) {
      double celsius = std::stod(std::string(value.substr(0, value.find("\xC2\xB0"))));
      int index = label.starts_with("temp") ? std::stoi(label.substr(4)) : next_temp++;
      if (!label.starts_with("temp")) {
        tree.Write(hwmon_dir + "/temp" + std::to_string(index) + "_label", label + "\n");
      }
      tree.Write(hwmon_dir + "/temp" + std::to_string(index) + "_input",
                 std::to_string(std::llround(celsius * 1000)) + "\n");
    } else if (fields.size() >= 2 && fields[1] == "W") {
      tree.Write(hwmon_dir + "/power1_average",
                 std::to_string(std::llround(std::stod(std::string(value)) * 1e6)) + "\n");
      if (label != "power1") tree.Write(hwmon_dir + "/power1_label", label + "\n");
      size_t cap = line.find("cap =");
      if (cap != std::string_view::npos) {
        double watts = std::stod(std::string(core::Trim(line.substr(cap + 5))));
        tree.Write(hwmon_dir + "/power1_cap", std::to_string(std::llround(watts * 1e6)) + "\n");
      }
    } else if (fields.size() >= 2 && fields[1] == "RPM") {
      tree.Write(hwmon_dir + "/fan1_input", std::string(value) + "\n");
    }
  }
}

}  // namespace gputriage::amd::testing
