// Fuzz target for the flight recorder's file reader (forensics::ParseGpuRecord): a record file is
// written by the job's own process, so after a crash or in a hostile job it can hold anything.
// The bytes are copied into 8-byte-aligned memory (as a mapping is) and read as a record file;
// every call, allocation and error count found is rendered as JSON, and every allocation is
// used for an address attribution.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "catalog/catalog.h"
#include "forensics/gpu_record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const gputriage::catalog::Catalog* catalog = *gputriage::catalog::BuiltinCatalog();
  std::vector<uint64_t> aligned((size + 7) / 8);
  if (size > 0) std::memcpy(aligned.data(), data, size);
  std::string_view bytes(reinterpret_cast<const char*>(aligned.data()), size);
  auto calls = gputriage::forensics::ParseGpuRecord(bytes, "fuzz.ring", catalog->errors);
  if (!calls.ok()) return 0;
  (void)gputriage::core::ToJson(*calls).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  for (const auto& a : calls->allocations) {
    uint64_t start = std::stoull(a.address, nullptr, 16);
    (void)gputriage::forensics::AttributeAddress(*calls, start + static_cast<uint64_t>(a.bytes));
  }
  return 0;
}
