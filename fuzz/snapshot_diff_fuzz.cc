// Fuzzes snapshot JSON parsing (ParseSnapshotJson, which `gputriage diff FILE` runs on any file
// it is given), the typed model's lenient reading and writing of arbitrary JSON shapes, and the
// semantic diff. The input is either one JSON document, diffed against itself and against an
// empty snapshot, or a JSON array of two documents, diffed both ways. Checks that nothing throws,
// that a snapshot never differs from itself, that writing what was read and reading it again
// changes nothing, and that the JSON form of every diff serializes.
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

using gputriage::core::Snapshot;
using gputriage::core::SnapshotFromJsonUnchecked;

Snapshot Read(const Json& json) {
  Snapshot snapshot = SnapshotFromJsonUnchecked(json);
  // The typed model's JSON form reads back to itself.
  Json written = gputriage::core::ToJson(snapshot);
  if (gputriage::core::ToJson(SnapshotFromJsonUnchecked(written)) != written) std::abort();
  return snapshot;
}

void CheckDiff(const Json& before_json, const Json& after_json) {
  auto changes = DiffSnapshots(Read(before_json), Read(after_json));
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
  if (!DiffSnapshots(Read(document), Read(document)).empty()) std::abort();
  CheckDiff(document, Json::object());
  CheckDiff(Json::object(), document);
  return 0;
}
