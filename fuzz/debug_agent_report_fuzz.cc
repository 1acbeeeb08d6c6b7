// Fuzz target for the ROCm debug agent report parser: the text is the job's output mixed with
// the agent's, so anything can be in it. Every error found is rendered as JSON.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/gpu_calls.h"
#include "forensics/debug_agent_report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  gputriage::forensics::SanitizerReport report = gputriage::forensics::ParseDebugAgentReport(text);
  gputriage::core::EscalationStep step;
  step.errors = report.errors;
  (void)gputriage::core::ToJson(gputriage::core::Escalation{.steps = {step}})
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return 0;
}
