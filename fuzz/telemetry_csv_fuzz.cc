// Fuzz target for core::ParseTelemetryCsv, the reader of a bundle's telemetry.csv (a bundle from
// another machine is untrusted): whatever the bytes, every sample it keeps writes back as a line
// that parses again to the same values (no comma or newline smuggled in through a reason name).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/telemetry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gputriage::core;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  Result<TelemetryCsvContents> csv = ParseTelemetryCsv(text, "run", 1000);
  if (!csv.ok()) return 0;
  if (csv->samples.size() > 1000) __builtin_trap();
  Result<TelemetryCsvContents> again = ParseTelemetryCsv(TelemetryCsv(csv->samples), "run", 1000);
  if (!again.ok() || again->samples.size() != csv->samples.size() || !again->problems.empty()) __builtin_trap();
  for (size_t i = 0; i < csv->samples.size(); ++i) {
    if (again->samples[i].device != csv->samples[i].device ||
        again->samples[i].throttle_reasons != csv->samples[i].throttle_reasons) {
      __builtin_trap();
    }
  }
  return 0;
}
