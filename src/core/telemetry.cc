#include "core/telemetry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/terminal.h"
#include "core/text.h"

namespace gputriage::core {

namespace {

template <class T>
std::string Field(const std::optional<T>& value) {
  if (!value) return "";
  if constexpr (std::is_floating_point_v<T>) return fmt::format("{:.1f}", *value);
  return fmt::format("{}", *value);
}

// A reason name as it may stand in the CSV: NVML's names and "0x.." for unknown bits.
bool IsReasonName(std::string_view name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == 'x';
  });
}

template <class T>
bool ParseOptional(std::string_view text, std::optional<T>& out) {
  if (text.empty()) return true;
  std::optional<double> value = ParseDouble(text);
  if (!value || !std::isfinite(*value) || std::fabs(*value) > 1e9) return false;
  if constexpr (std::is_integral_v<T>) {
    out = static_cast<T>(std::lround(*value));
  } else {
    out = *value;
  }
  return true;
}

}  // namespace

std::string TelemetryCsvLine(const TelemetrySample& s) {
  std::string reasons;
  for (const std::string& r : s.throttle_reasons) {
    if (!IsReasonName(r)) continue;  // never a comma or a newline into the CSV
    reasons += (reasons.empty() ? "" : ";") + r;
  }
  return fmt::format("{:.3f},{},{},{},{},{},{},{}", s.t_s, s.device, Field(s.temperature_c), Field(s.power_w),
                     Field(s.sm_clock_mhz), Field(s.memory_clock_mhz), Field(s.memory_used_mib), reasons);
}

std::string TelemetryCsv(const std::vector<TelemetrySample>& samples) {
  std::string out(kTelemetryCsvColumns);
  out += '\n';
  for (const TelemetrySample& s : samples) {
    out += TelemetryCsvLine(s);
    out += '\n';
  }
  return out;
}

Result<TelemetryCsvContents> ParseTelemetryCsv(std::string_view text, std::string_view phase, size_t max_samples) {
  std::vector<std::string_view> lines = SplitLines(text);
  if (lines.empty() || Trim(lines.front()) != kTelemetryCsvColumns) {
    return MakeErrorCode(ErrorCode::kInvalidArgument, "not a telemetry CSV: the first line is not '{}'",
                         kTelemetryCsvColumns);
  }
  TelemetryCsvContents out;
  size_t over = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::string_view line = Trim(lines[i]);
    if (line.empty()) continue;
    if (out.samples.size() >= max_samples) {
      ++over;
      continue;
    }
    std::vector<std::string_view> f = Split(line, ',');
    auto bad = [&](std::string_view why) {
      if (out.problems.size() < 20) out.problems.push_back(fmt::format("line {}: {}", i + 1, why));
    };
    if (f.size() != 8) {
      bad(fmt::format("{} fields, expected 8", f.size()));
      continue;
    }
    TelemetrySample s;
    s.phase = std::string(phase);
    std::optional<double> t = ParseDouble(f[0]);
    std::optional<int64_t> device = ParseI64(f[1]);
    if (!t || !std::isfinite(*t) || std::fabs(*t) > 1e9) {
      bad(fmt::format("t_s '{}' is not a time", SanitizeForTerminal(f[0].substr(0, 32))));
      continue;
    }
    if (!device || *device < 0 || *device > 4096) {
      bad(fmt::format("device '{}' is not a GPU index", SanitizeForTerminal(f[1].substr(0, 32))));
      continue;
    }
    s.t_s = *t;
    s.device = static_cast<int>(*device);
    if (!ParseOptional(f[2], s.temperature_c) || !ParseOptional(f[3], s.power_w) ||
        !ParseOptional(f[4], s.sm_clock_mhz) || !ParseOptional(f[5], s.memory_clock_mhz) ||
        !ParseOptional(f[6], s.memory_used_mib)) {
      bad("a value is not a number");
      continue;
    }
    bool reasons_ok = true;
    if (!f[7].empty()) {
      for (std::string_view r : Split(f[7], ';')) {
        if (!IsReasonName(r)) reasons_ok = false;
        s.throttle_reasons.emplace_back(r);
      }
    }
    if (!reasons_ok) {
      bad("a throttle reason is not a reason name");
      continue;
    }
    out.samples.push_back(std::move(s));
  }
  if (over > 0) out.problems.push_back(fmt::format("{} samples past the first {} were not read", over, max_samples));
  return out;
}

bool IsSlowdownReason(std::string_view reason) {
  return reason == "sw_power_cap" || reason == "hw_slowdown" || reason == "sw_thermal_slowdown" ||
         reason == "hw_thermal_slowdown" || reason == "hw_power_brake_slowdown";
}

}  // namespace gputriage::core
