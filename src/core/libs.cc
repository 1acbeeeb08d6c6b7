#include "core/libs.h"

#include "core/json_fields.h"

namespace gputriage::core {

namespace {

// The contract's names are always there: null when unknown rather than absent.
void Complete(Json& list, std::initializer_list<const char*> keys) {
  if (!list.is_array()) return;
  for (Json& item : list) {
    for (const char* key : keys) {
      if (!item.contains(key)) item[key] = nullptr;
    }
  }
}

}  // namespace

Json ToJson(const LibraryReport& report) {
  Json j = json_fields::WriteValue(report);
  Complete(j["libraries"], {"soname", "path", "needed_by", "component", "version"});
  Complete(j["undefined_symbols"], {"symbol", "version", "needed_by"});
  return j;
}

Json ToJson(const SymbolDiff& diff) {
  Json j = json_fields::WriteValue(diff);
  for (const char* list : {"added", "removed", "changed"}) Complete(j[list], {"symbol", "version"});
  return j;
}

LibraryReport LibraryReportFromJson(const Json& json) {
  LibraryReport report;
  json_fields::ReadValue(json, report);
  return report;
}

}  // namespace gputriage::core
