#include "core/model.h"

#include <algorithm>

#include "core/json_fields.h"

namespace gputriage::core {

std::string_view SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kError:
      return "error";
    case Severity::kCritical:
      return "critical";
  }
  return "info";
}

std::optional<Severity> ParseSeverity(std::string_view name) {
  for (Severity s : {Severity::kInfo, Severity::kWarning, Severity::kError, Severity::kCritical}) {
    if (SeverityName(s) == name) return s;
  }
  return std::nullopt;
}

bool ParseEnum(std::string_view name, Severity& out) {
  std::optional<Severity> parsed = ParseSeverity(name);
  if (parsed) out = *parsed;
  return parsed.has_value();
}

namespace {

template <typename T>
void ToJsonVia(Json& j, const T& value) {
  j = json_fields::WriteValue(value);
}

// Lenient: members of another type keep their defaults; never throws.
template <typename T>
void FromJsonVia(const Json& j, T& value) {
  value = T{};
  json_fields::ReadValue(j, value);
}

}  // namespace

void to_json(Json& j, const Evidence& e) { ToJsonVia(j, e); }
void from_json(const Json& j, Evidence& e) { FromJsonVia(j, e); }
void to_json(Json& j, const Finding& f) { ToJsonVia(j, f); }
void from_json(const Json& j, Finding& f) { FromJsonVia(j, f); }
void to_json(Json& j, const NotCollected& n) { ToJsonVia(j, n); }
void from_json(const Json& j, NotCollected& n) { FromJsonVia(j, n); }

void to_json(Json& j, const Section& s) {
  j = Json{{"data", s.data},
           {"not_collected", json_fields::WriteValue(s.not_collected)},
           {"findings", json_fields::WriteValue(s.findings)}};
}

void from_json(const Json& j, Section& s) {
  s = Section{};
  if (!j.is_object()) return;
  if (auto data = j.find("data"); data != j.end() && data->is_object()) s.data = *data;
  if (auto notes = j.find("not_collected"); notes != j.end()) json_fields::ReadValue(*notes, s.not_collected);
  if (auto found = j.find("findings"); found != j.end()) json_fields::ReadValue(*found, s.findings);
}

void SortBySeverity(std::vector<Finding>& findings) {
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    return static_cast<int>(a.severity) > static_cast<int>(b.severity);
  });
}

std::optional<Severity> MaxSeverity(const std::vector<Finding>& findings) {
  std::optional<Severity> max;
  for (const Finding& f : findings) {
    if (!max || static_cast<int>(f.severity) > static_cast<int>(*max)) max = f.severity;
  }
  return max;
}

}  // namespace gputriage::core
