#include "collect/amd/amdgpu_text.h"

#include <fmt/format.h>

#include "collect/amd/problem_list.h"
#include "core/text.h"

namespace gputriage::amd {

namespace {

// Bounds past which a value is damage, not a clock: no GPU clock reaches 100 GHz, no PCIe
// generation 128 GT/s (PCIe 7 is 128; allow it), no link is wider than 32 lanes.
constexpr uint64_t kMaxMhz = 100000;
constexpr double kMaxGts = 128.0;
constexpr uint64_t kMaxWidth = 32;

bool IsLevelName(std::string_view s) {
  if (s == "S") return true;
  if (s.empty() || s.size() > 3) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool EndsWithIgnoreCase(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && core::ToLower(s.substr(s.size() - suffix.size())) == suffix;
}

// Applies one value token ("1500Mhz", "8.0GT/s,", "x16", "*") to `level`; false when the
// token is none of those or out of range.
bool ApplyToken(std::string_view token, DpmLevel& level) {
  if (token == "*") {
    level.current = true;
    return true;
  }
  if (EndsWithIgnoreCase(token, "mhz")) {
    std::optional<uint64_t> mhz = core::ParseU64(token.substr(0, token.size() - 3), 10);
    if (!mhz || *mhz > kMaxMhz || level.mhz) return false;
    level.mhz = mhz;
    return true;
  }
  if (token.ends_with(',')) token.remove_suffix(1);
  if (EndsWithIgnoreCase(token, "gt/s")) {
    std::optional<double> gts = core::ParseDouble(token.substr(0, token.size() - 4));
    // Written so that NaN (from_chars accepts "nan") fails too.
    if (!gts || !(*gts > 0 && *gts <= kMaxGts) || level.pcie_gts) return false;
    level.pcie_gts = gts;
    return true;
  }
  if (token.size() > 1 && token.front() == 'x') {
    std::optional<uint64_t> width = core::ParseU64(token.substr(1), 10);
    if (!width || *width == 0 || *width > kMaxWidth || level.pcie_width) return false;
    level.pcie_width = width;
    return true;
  }
  return false;
}

}  // namespace

const DpmLevel* DpmTable::Current() const {
  for (const DpmLevel& level : levels) {
    if (level.current) return &level;
  }
  return nullptr;
}

DpmTable ParseDpmLevels(std::string_view text) {
  DpmTable table;
  ProblemList problems(table.problems);
  size_t line_number = 0;
  for (std::string_view line : core::SplitLines(text)) {
    ++line_number;
    std::vector<std::string_view> tokens = core::SplitWhitespace(line);
    if (tokens.empty()) continue;
    std::string_view head = tokens[0];
    if (!head.ends_with(':') || !IsLevelName(head.substr(0, head.size() - 1))) {
      problems.Add(line_number, "expected \"N: <value> [*]\"", core::Trim(line));
      continue;
    }
    DpmLevel level;
    level.level = std::string(head.substr(0, head.size() - 1));
    bool ok = tokens.size() > 1;
    for (size_t i = 1; ok && i < tokens.size(); ++i) ok = ApplyToken(tokens[i], level);
    if (!ok || (!level.mhz && !level.pcie_gts)) {
      problems.Add(line_number, "unexpected level value", core::Trim(line));
      continue;
    }
    table.levels.push_back(std::move(level));
  }
  problems.Finish();
  if (table.levels.empty()) {
    table.problems.push_back(fmt::format("no DPM level in {} bytes", text.size()));
  }
  return table;
}

RasErrorCount ParseRasErrorCount(std::string_view text) {
  RasErrorCount out;
  ProblemList problems(out.problems);
  size_t line_number = 0;
  for (std::string_view line : core::SplitLines(text)) {
    ++line_number;
    std::string_view trimmed = core::Trim(line);
    if (trimmed.empty()) continue;
    size_t colon = trimmed.find(':');
    std::optional<uint64_t> value;
    std::string_view key;
    if (colon != std::string_view::npos) {
      key = core::Trim(trimmed.substr(0, colon));
      value = core::ParseU64(trimmed.substr(colon + 1), 10);
    }
    std::optional<uint64_t>* slot = key == "ue" ? &out.ue : key == "ce" ? &out.ce : key == "de" ? &out.de : nullptr;
    if (slot == nullptr || !value || slot->has_value()) {
      problems.Add(line_number, "expected \"ue: N\", \"ce: N\" or \"de: N\"", trimmed);
      continue;
    }
    *slot = value;
  }
  problems.Finish();
  if (!out.ue && !out.ce) {
    out.problems.push_back(fmt::format("no \"ue:\" or \"ce:\" count in {} bytes", text.size()));
  }
  return out;
}

}  // namespace gputriage::amd
