#include "core/validation.h"

#include <array>
#include <utility>

#include "core/json_fields.h"

namespace gputriage::core {

namespace {

constexpr std::array<std::pair<CheckStatus, std::string_view>, 4> kStatusNames = {{
    {CheckStatus::kPass, "pass"},
    {CheckStatus::kFail, "fail"},
    {CheckStatus::kSkip, "skip"},
    {CheckStatus::kError, "error"},
}};

}  // namespace

std::string_view EnumName(CheckStatus status) {
  for (const auto& [value, name] : kStatusNames) {
    if (value == status) return name;
  }
  return "error";
}

bool ParseEnum(std::string_view name, CheckStatus& out) {
  for (const auto& [value, text] : kStatusNames) {
    if (text == name) {
      out = value;
      return true;
    }
  }
  return false;
}

CheckCounts CountChecks(const std::vector<ValidationCheck>& checks) {
  CheckCounts counts;
  for (const ValidationCheck& check : checks) {
    switch (check.status) {
      case CheckStatus::kPass:
        ++counts.pass;
        break;
      case CheckStatus::kFail:
        ++counts.fail;
        break;
      case CheckStatus::kSkip:
        ++counts.skip;
        break;
      case CheckStatus::kError:
        ++counts.error;
        break;
    }
  }
  return counts;
}

Json ToJson(const ValidationReport& report) {
  Json j = json_fields::WriteValue(report);
  json_fields::CompleteKeys(j["devices"], {"vendor", "name"});
  json_fields::CompleteKeys(
      j["checks"], {"name", "device", "dtype", "status", "detail", "max_rel_error", "median_ms", "throughput"});
  return j;
}

ValidationReport ValidationReportFromJson(const Json& json) {
  ValidationReport report;
  json_fields::ReadValue(json, report);
  return report;
}

}  // namespace gputriage::core
