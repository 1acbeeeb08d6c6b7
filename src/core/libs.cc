#include "core/libs.h"

#include "core/json_fields.h"

namespace gputriage::core {

Json ToJson(const LibraryReport& report) { return json_fields::WriteValue(report); }
Json ToJson(const SymbolDiff& diff) { return json_fields::WriteValue(diff); }

LibraryReport LibraryReportFromJson(const Json& json) {
  LibraryReport report;
  json_fields::ReadValue(json, report);
  return report;
}

}  // namespace gputriage::core
