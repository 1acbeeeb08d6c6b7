// The common language of every layer: findings with their evidence, the "not collected,
// because..." notes, and the section a collector hands back. JSON forms are versioned.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gputriage::core {

using Json = nlohmann::json;

/// Bumped whenever a JSON field is renamed or its meaning changes (additions do not bump it).
inline constexpr int kSnapshotSchemaVersion = 1;
inline constexpr int kFindingsSchemaVersion = 1;

enum class Severity { kInfo = 0, kWarning = 1, kError = 2, kCritical = 3 };

/// "info" | "warning" | "error" | "critical".
std::string_view SeverityName(Severity severity);
std::optional<Severity> ParseSeverity(std::string_view name);

/// The JSON names of core's enums, for the models' field lists (found by argument-dependent
/// lookup): EnumName(value) and ParseEnum(name, &value), false when `name` is not one of them.
inline std::string_view EnumName(Severity severity) { return SeverityName(severity); }
bool ParseEnum(std::string_view name, Severity& out);

/// One piece of evidence: where it came from (a file, a log, a library call) and what it said.
struct Evidence {
  std::string source;
  std::string text;
  bool operator==(const Evidence&) const = default;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("source", s.source);
    v("text", s.text);
  }
};

/// A conclusion with the evidence it rests on. `id` is stable across releases
/// ("pci.link_downtrained"); `layer` is the method's layer (1..5).
struct Finding {
  std::string id;
  int layer = 1;
  Severity severity = Severity::kInfo;
  std::string title;
  std::string detail;
  std::vector<Evidence> evidence;
  std::string fix;
  std::vector<std::string> references;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("id", s.id);
    v("layer", s.layer);
    v("severity", s.severity);
    v("title", s.title);
    v("detail", s.detail);
    v("evidence", s.evidence);
    v("fix", s.fix);
    v("references", s.references);
  }
};

/// Something a collector could not collect, and why ("no permission to read /dev/kmsg").
struct NotCollected {
  std::string item;
  std::string reason;
  bool operator==(const NotCollected&) const = default;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("item", s.item);
    v("reason", s.reason);
  }
};

/// What one collector returns: its data, what it could not collect, and findings it raised
/// directly (a hung probe, an unreadable file that matters).
struct Section {
  Json data = Json::object();
  std::vector<NotCollected> not_collected;
  std::vector<Finding> findings;
  /// How long each collector of the section took, in ms ("software.toolchain": 1970.2).
  std::map<std::string, double> timings_ms;

  void NoteMissing(std::string item, std::string reason) {
    not_collected.push_back({std::move(item), std::move(reason)});
  }
};

void to_json(Json& j, const Evidence& e);
void from_json(const Json& j, Evidence& e);
void to_json(Json& j, const Finding& f);
void from_json(const Json& j, Finding& f);
void to_json(Json& j, const NotCollected& n);
void from_json(const Json& j, NotCollected& n);
void to_json(Json& j, const Section& s);
void from_json(const Json& j, Section& s);

/// Sorts most severe first; ties keep their order (stable).
void SortBySeverity(std::vector<Finding>& findings);

/// Highest severity among `findings`, nullopt when empty.
std::optional<Severity> MaxSeverity(const std::vector<Finding>& findings);

/// Sets `obj[key] = value` when `value` holds something; unknown stays absent, never zero.
template <typename T>
void SetIf(Json& obj, const char* key, const std::optional<T>& value) {
  if (value) obj[key] = *value;
}

}  // namespace gputriage::core
