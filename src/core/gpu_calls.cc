#include "core/gpu_calls.h"

#include "core/json_fields.h"

namespace gputriage::core {

int64_t GpuCalls::FailedCalls() const {
  int64_t total = 0;
  for (const GpuErrorCount& e : errors) total += e.count;
  return total;
}

std::string DimsText(const std::optional<std::vector<int64_t>>& dims) {
  if (!dims || dims->size() != 3) return "?";
  return "(" + std::to_string((*dims)[0]) + "," + std::to_string((*dims)[1]) + "," + std::to_string((*dims)[2]) + ")";
}

std::string LaunchShapeText(const GpuCall& call) {
  if (!call.grid && !call.block) return "";
  return "grid " + DimsText(call.grid) + ", block " + DimsText(call.block);
}

Json ToJson(const GpuCalls& calls) { return json_fields::WriteValue(calls); }
Json ToJson(const GpuCall& call) { return json_fields::WriteValue(call); }
Json ToJson(const GpuErrorCount& count) { return json_fields::WriteValue(count); }
Json ToJson(const GpuAddressAttribution& attribution) { return json_fields::WriteValue(attribution); }

GpuCalls GpuCallsFromJson(const Json& json) {
  GpuCalls calls;
  json_fields::ReadValue(json, calls);
  return calls;
}

Json ToJson(const Escalation& escalation) { return json_fields::WriteValue(escalation); }

Escalation EscalationFromJson(const Json& json) {
  Escalation escalation;
  json_fields::ReadValue(json, escalation);
  return escalation;
}

}  // namespace gputriage::core
