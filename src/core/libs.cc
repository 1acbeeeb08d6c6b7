#include "core/libs.h"

#include "core/json_fields.h"

namespace gputriage::core {

Json ToJson(const LibraryReport& report) {
  Json j = json_fields::WriteValue(report);
  json_fields::CompleteKeys(j["libraries"], {"soname", "path", "needed_by", "component", "version"});
  json_fields::CompleteKeys(j["undefined_symbols"], {"symbol", "version", "needed_by"});
  return j;
}

Json ToJson(const SymbolDiff& diff) {
  Json j = json_fields::WriteValue(diff);
  for (const char* list : {"added", "removed", "changed"}) json_fields::CompleteKeys(j[list], {"symbol", "version"});
  return j;
}

LibraryReport LibraryReportFromJson(const Json& json) {
  LibraryReport report;
  json_fields::ReadValue(json, report);
  return report;
}

}  // namespace gputriage::core
