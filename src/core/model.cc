#include "core/model.h"

#include <algorithm>

#include "core/json_read.h"

namespace gputriage::core {

std::string_view SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kError: return "error";
    case Severity::kCritical: return "critical";
  }
  return "info";
}

std::optional<Severity> ParseSeverity(std::string_view name) {
  for (Severity s : {Severity::kInfo, Severity::kWarning, Severity::kError, Severity::kCritical}) {
    if (SeverityName(s) == name) return s;
  }
  return std::nullopt;
}

namespace {

template <typename T>
std::vector<T> ListAt(const Json& j, const char* key) {
  std::vector<T> out;
  if (!j.is_object() || !j.contains(key) || !j[key].is_array()) return out;
  for (const Json& item : j[key]) {
    if constexpr (std::is_same_v<T, std::string>) {
      if (item.is_string()) out.push_back(item.get<std::string>());
    } else {
      if (item.is_object()) out.push_back(item.get<T>());
    }
  }
  return out;
}

}  // namespace

void to_json(Json& j, const Evidence& e) { j = Json{{"source", e.source}, {"text", e.text}}; }

void from_json(const Json& j, Evidence& e) {
  e.source = StringAt(j, "source");
  e.text = StringAt(j, "text");
}

void to_json(Json& j, const Finding& f) {
  j = Json{{"id", f.id},
           {"layer", f.layer},
           {"severity", SeverityName(f.severity)},
           {"title", f.title},
           {"detail", f.detail},
           {"evidence", f.evidence},
           {"fix", f.fix},
           {"references", f.references}};
}

void from_json(const Json& j, Finding& f) {
  f.id = StringAt(j, "id");
  f.layer = j.is_object() && j.contains("layer") && j["layer"].is_number_integer() ? j["layer"].get<int>() : 1;
  f.severity = ParseSeverity(StringAt(j, "severity")).value_or(Severity::kInfo);
  f.title = StringAt(j, "title");
  f.detail = StringAt(j, "detail");
  f.evidence = ListAt<Evidence>(j, "evidence");
  f.fix = StringAt(j, "fix");
  f.references = ListAt<std::string>(j, "references");
}

void to_json(Json& j, const NotCollected& n) { j = Json{{"item", n.item}, {"reason", n.reason}}; }

void from_json(const Json& j, NotCollected& n) {
  n.item = StringAt(j, "item");
  n.reason = StringAt(j, "reason");
}

void to_json(Json& j, const Section& s) {
  j = Json{{"data", s.data}, {"not_collected", s.not_collected}, {"findings", s.findings}};
}

void from_json(const Json& j, Section& s) {
  s.data = j.is_object() && j.contains("data") && j["data"].is_object() ? j["data"] : Json::object();
  s.not_collected = ListAt<NotCollected>(j, "not_collected");
  s.findings = ListAt<Finding>(j, "findings");
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
