// Fuzz target for the flight-recorder dump reader (a restricted unpickler): any bytes are a dump
// or an error naming the offset, never a crash, a hang or unbounded memory; a dump read is compared
// with itself as two ranks and made findings, as `run` does. Seeds: the real dumps
// of tests/fixtures/pytorch/flight-recorder.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "forensics/collectives.h"
#include "forensics/torch_flight_recorder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto dump = gputriage::forensics::ParseFlightRecorderDump(bytes, "fuzz");
  if (dump.ok()) {
    // What run does with the dumps of two ranks: compare them, and say what they show.
    gputriage::core::CollectiveDump a, b;
    a.rank = 0;
    b.rank = 1;
    auto report = gputriage::core::CompareCollectives({{a, *dump}, {b, *dump}});
    (void)gputriage::forensics::CollectiveFindings(report);
  }
  return 0;
}
