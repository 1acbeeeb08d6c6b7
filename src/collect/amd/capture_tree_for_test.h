// Test-only helpers (header-only, so the library glob does not pick them up): read a fixture
// from tests/fixtures/amd/ without its "# source:" line, and materialise the shell captures
// found there ("grep . DIR/*", "tail -v", "cat FILE", a KFD "cat nodes/*/properties", an
// lm-sensors block) as files under a temporary --root tree, so the real collector reads them.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "core/text.h"

namespace gputriage::amd::testing {

/// The fixture's bytes after its first line ("# source: ..."). Fails the test when missing.
inline std::string ReadFixture(const std::string& name) {
  std::string path = std::string(GT_FIXTURES_DIR) + "/amd/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing fixture " << path;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(text.starts_with("# source:")) << path << " has no '# source:' line";
  size_t newline = text.find('\n');
  return newline == std::string::npos ? std::string() : text.substr(newline + 1);
}

/// A temporary directory removed with everything in it at scope exit.
class TempTree {
 public:
  TempTree() {
    std::string pattern = (std::filesystem::temp_directory_path() / "gt_amd_XXXXXX").string();
    char* made = ::mkdtemp(pattern.data());
    EXPECT_NE(made, nullptr);
    root_ = pattern;
  }
  ~TempTree() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;

  const std::string& root() const { return root_; }
  std::string Real(std::string_view path) const { return root_ + std::string(path); }

  /// Writes `content` to absolute in-tree `path`, creating parents; `append` adds to it.
  void Write(std::string_view path, std::string_view content, bool append = false) const {
    std::filesystem::path real = Real(path);
    std::filesystem::create_directories(real.parent_path());
    std::ofstream out(real, std::ios::binary | (append ? std::ios::app : std::ios::trunc));
    out << content;
  }
  void MakeDir(std::string_view path) const { std::filesystem::create_directories(Real(path)); }
  /// Creates the link `path` with the link text `target` (kept as written).
  void Link(std::string_view path, std::string_view target) const {
    std::filesystem::path real = Real(path);
    std::filesystem::create_directories(real.parent_path());
    std::filesystem::create_symlink(std::string(target), real);
  }

 private:
  std::string root_;
};

/// `grep . DIR/*` output: "PATH:VALUE" lines, appended (with '\n') to PATH. Lines not starting
/// with '/' (prompts, "grep: X: Is a directory") are skipped. The first ':' ends the path,
/// which holds for the /sys/class/drm paths of these captures (not for PCI addresses).
inline void MaterialiseGrep(const TempTree& tree, std::string_view capture) {
  for (std::string_view line : core::SplitLines(capture)) {
    if (!line.starts_with("/")) continue;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    tree.Write(line.substr(0, colon), std::string(line.substr(colon + 1)) + "\n", true);
  }
}

/// `tail -v -n +1 FILES` output: "==> PATH <==" headers, each followed by the file's lines and
/// the blank separator line tail prints between files (dropped).
inline void MaterialiseTail(const TempTree& tree, std::string_view capture) {
  std::string path;
  std::vector<std::string_view> lines;
  auto flush = [&] {
    if (path.empty()) return;
    if (!lines.empty() && lines.back().empty()) lines.pop_back();
    std::string content;
    for (std::string_view line : lines) content += std::string(line) + "\n";
    tree.Write(path, content);
    lines.clear();
  };
  for (std::string_view line : core::SplitLines(capture)) {
    if (line.starts_with("==> ") && line.ends_with(" <==")) {
      flush();
      path = std::string(line.substr(4, line.size() - 8));
    } else if (!path.empty()) {
      lines.push_back(line);
    }
  }
  flush();
}

/// Shell transcripts of "PROMPT# cat PATH" (prompt ending in '#', '$' or '>') followed by the
/// file's lines up to a blank line or the next prompt.
inline void MaterialiseCat(const TempTree& tree, std::string_view capture) {
  std::string path;
  std::string content;
  auto flush = [&] {
    if (!path.empty()) tree.Write(path, content);
    path.clear();
    content.clear();
  };
  for (std::string_view line : core::SplitLines(capture)) {
    size_t cat = line.find("cat /");
    bool prompt = cat != std::string_view::npos && cat >= 2 && line[cat - 1] == ' ' &&
                  (line[cat - 2] == '#' || line[cat - 2] == '$' || line[cat - 2] == '>');
    if (prompt) {
      flush();
      path = std::string(core::Trim(line.substr(cat + 4)));
    } else if (core::Trim(line).empty()) {
      flush();
    } else if (!path.empty()) {
      content += std::string(line) + "\n";
    }
  }
  flush();
}

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
inline void MaterialiseSensors(const TempTree& tree, const std::string& hwmon_dir,
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
