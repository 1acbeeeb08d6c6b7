// Fuzzes snapshot JSON parsing (ParseSnapshotJson, which `gputriage diff FILE` runs on any file
// it is given) and the semantic diff over arbitrary JSON shapes. The input is either one JSON
// document, diffed against itself and against an empty snapshot, or a JSON array of two
// documents, diffed both ways. Checks that nothing throws, that a snapshot never differs from
// itself, and that the JSON form of every diff serializes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "store/diff.h"
#include "store/snapshot_arg.h"

namespace {

using gputriage::core::Json;
using gputriage::store::DiffSnapshots;
using gputriage::store::DiffToJson;

void CheckDiff(const Json& before, const Json& after) {
  auto changes = DiffSnapshots(before, after);
  for (const auto& change : changes) {
    if (change.kind.empty() || change.path.empty() || change.summary.empty()) std::abort();
  }
  (void)DiffToJson(changes).dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)gputriage::store::ParseSnapshotJson(text, "fuzz");
  Json document = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) return 0;
  if (document.is_array() && document.size() == 2) {
    CheckDiff(document[0], document[1]);
    CheckDiff(document[1], document[0]);
  }
  if (!DiffSnapshots(document, document).empty()) std::abort();
  CheckDiff(document, Json::object());
  CheckDiff(Json::object(), document);
  return 0;
}
