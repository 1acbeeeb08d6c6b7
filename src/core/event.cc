#include "core/event.h"

#include "core/json_fields.h"

namespace gputriage::core {

Json ToJson(const GpuEvent& event) {
  Json out = json_fields::WriteValue(event);
  for (const char* key : {"gpu", "pid", "job", "pod", "bundle"}) {
    if (!out.contains(key)) out[key] = nullptr;
  }
  return out;
}

Result<GpuEvent> EventFromJson(std::string_view line, std::string_view source) {
  GT_ASSIGN_OR_RETURN(Json json, ParseJson(line, source));
  if (!json.is_object())
    return MakeErrorCode(ErrorCode::kDataLoss, "{}: a JSON {}, not an event", source, json.type_name());
  for (const char* key : {"time", "host", "kind", "error_type"}) {
    auto it = json.find(key);
    if (it == json.end() || !it->is_string() || it->get<std::string>().empty()) {
      return MakeErrorCode(ErrorCode::kDataLoss, "{}: not an event (no \"{}\" string)", source, key);
    }
  }
  GpuEvent event;
  json_fields::ReadValue(json, event);
  return event;
}

}  // namespace gputriage::core
