// Fuzz target for the compute-sanitizer / cuda-memcheck report parser: the text is the job's
// output mixed with the tool's, so anything can be in it. Every error found is rendered as
// JSON, and every kernel name goes through KernelBaseName (which builds the --kernel-name filter).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/gpu_calls.h"
#include "forensics/sanitizer_report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  gputriage::forensics::SanitizerReport report = gputriage::forensics::ParseSanitizerReport(text);
  gputriage::core::EscalationStep step;
  step.errors = report.errors;
  (void)gputriage::core::ToJson(gputriage::core::Escalation{.steps = {step}})
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  for (const auto& e : report.errors) (void)gputriage::forensics::KernelBaseName(e.kernel);
  (void)gputriage::forensics::KernelBaseName(text);
  return 0;
}
