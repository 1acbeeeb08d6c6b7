// Fuzz target for the flight-recorder dump reader (a restricted unpickler): any bytes are a dump
// or an error naming the offset, never a crash, a hang or unbounded memory. Seeds: the real dumps
// of tests/fixtures/pytorch/flight-recorder.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kb/flight_recorder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto dump = gputriage::kb::ParseFlightRecorderDump(bytes, "fuzz");
  if (dump.ok()) {
    size_t frames = 0;
    for (const auto& e : dump->entries) frames += e.frames.size();
    (void)frames;
  }
  return 0;
}
