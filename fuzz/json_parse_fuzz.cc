// Fuzz target for core::ParseJson, the one entry point of untrusted JSON (snapshot files and
// standard input, the history database, a crash bundle's JSON files): the depth limit must hold
// whatever the bytes, so what it returns can be walked recursively (read as a snapshot, printed)
// without exhausting the stack.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/json_parse.h"
#include "core/snapshot.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  gputriage::core::Result<gputriage::core::Json> json = gputriage::core::ParseJson(text, "fuzz");
  if (!json.ok()) {
    // Refused for its depth exactly when the pre-scan says so.
    bool deep = gputriage::core::FindJsonDepthExcess(text, gputriage::core::kMaxJsonDepth).has_value();
    if (deep != (json.error().message.rfind("fuzz: JSON nested deeper than ", 0) == 0)) __builtin_trap();
    return 0;
  }
  (void)json->dump(-1, ' ', false, gputriage::core::Json::error_handler_t::replace);
  if (json->is_object()) {
    gputriage::core::Snapshot snapshot = gputriage::core::SnapshotFromJsonUnchecked(*json);
    (void)gputriage::core::ToJson(snapshot).dump(-1, ' ', false, gputriage::core::Json::error_handler_t::replace);
  }
  return 0;
}
