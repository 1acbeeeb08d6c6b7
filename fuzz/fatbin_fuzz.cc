// Fuzz target for the NVIDIA fatbin reader: the bytes are read as a fatbin (containers, entry
// headers, LZ4/zstd payloads, cubins with their .nv.info records, PTX), as `gputriage inspect`
// reads a .fatbin file or a host binary's .nv_fatbin section, and every object is rendered as
// JSON. A cubin is also read directly.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "inspect/inspect.h"
#include "inspect/nvidia.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (const gputriage::inspect::CodeObject& co : gputriage::inspect::ReadNvFatbin(bytes, "fuzz")) {
    (void)gputriage::inspect::ToJson(co).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  (void)gputriage::inspect::ToJson(gputriage::inspect::ReadCubin(bytes, "fuzz"));
  (void)gputriage::inspect::ReadPtx(bytes, "fuzz");
  return 0;
}
