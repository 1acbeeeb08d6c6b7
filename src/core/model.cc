#include "core/model.h"

#include <algorithm>

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

void to_json(Json& j, const Evidence& e) { j = Json{{"source", e.source}, {"text", e.text}}; }

void from_json(const Json& j, Evidence& e) {
  e.source = j.value("source", "");
  e.text = j.value("text", "");
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
  f.id = j.value("id", "");
  f.layer = j.value("layer", 1);
  f.severity = ParseSeverity(j.value("severity", "info")).value_or(Severity::kInfo);
  f.title = j.value("title", "");
  f.detail = j.value("detail", "");
  f.evidence = j.value("evidence", std::vector<Evidence>{});
  f.fix = j.value("fix", "");
  f.references = j.value("references", std::vector<std::string>{});
}

void to_json(Json& j, const NotCollected& n) { j = Json{{"item", n.item}, {"reason", n.reason}}; }

void from_json(const Json& j, NotCollected& n) {
  n.item = j.value("item", "");
  n.reason = j.value("reason", "");
}

void to_json(Json& j, const Section& s) {
  j = Json{{"data", s.data}, {"not_collected", s.not_collected}, {"findings", s.findings}};
}

void from_json(const Json& j, Section& s) {
  s.data = j.value("data", Json::object());
  s.not_collected = j.value("not_collected", std::vector<NotCollected>{});
  s.findings = j.value("findings", std::vector<Finding>{});
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
