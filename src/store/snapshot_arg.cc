#include "store/snapshot_arg.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/file.h"
#include "core/json_parse.h"
#include "core/text.h"

namespace gputriage::store {
namespace {

using core::Json;
using core::MakeError;
using core::Result;

// A snapshot's text as core::ReadFile/ReadFd gave it, with this module's message for one that
// is too large (core says so with kInvalidArgument, and for nothing else).
Result<std::string> SnapshotText(Result<std::string> text, std::string_view name) {
  if (!text.ok() && text.error().code == core::ErrorCode::kInvalidArgument) {
    return MakeError("{}: larger than {} bytes; not a snapshot (gputriage writes snapshots of a few MiB at most)", name,
                     core::kSnapshotMaxBytes);
  }
  return text;
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

Result<core::Snapshot> StoredSnapshot(SnapshotStore* store, std::string_view arg) {
  if (store == nullptr) {
    return MakeError("'{}' names a stored snapshot, but no snapshot database is open", arg);
  }
  if (arg == "latest") return store->Latest();
  if (arg == "previous") {
    GT_ASSIGN_OR_RETURN(std::vector<SnapshotRow> rows, store->List(2));
    if (rows.size() < 2) {
      return MakeError("'previous' needs two stored snapshots; {} has {}", store->path(), rows.size());
    }
    return store->Load(rows[1].id);
  }
  std::optional<int64_t> id = core::ParseI64(arg);
  if (!id) return MakeError("'{}' is not a snapshot id", arg);
  return store->Load(*id);
}

}  // namespace

Result<core::Snapshot> ParseSnapshotJson(std::string_view text, std::string_view source) {
  GT_ASSIGN_OR_RETURN(Json snapshot, core::ParseJson(text, source));
  return core::SnapshotFromJson(snapshot, source);
}

Result<core::Snapshot> LoadSnapshotArg(SnapshotStore* store, std::string_view arg) {
  if (arg.empty()) return MakeError("an empty snapshot operand (want an id, 'latest' or a file)");
  if (NamesStoredSnapshot(arg)) return StoredSnapshot(store, arg);
  if (arg == "-") {
    GT_ASSIGN_OR_RETURN(
        std::string text,
        SnapshotText(core::ReadFd(STDIN_FILENO, "standard input", core::kSnapshotMaxBytes), "standard input"));
    return ParseSnapshotJson(text, "standard input");
  }
  std::string path(arg);
  GT_ASSIGN_OR_RETURN(std::string text, SnapshotText(core::ReadFile(path, core::kSnapshotMaxBytes), path));
  return ParseSnapshotJson(text, path);
}

bool NamesStoredSnapshot(std::string_view arg) { return AllDigits(arg) || arg == "latest" || arg == "previous"; }

Result<core::Snapshot> LoadSnapshotArgFromDefaultStore(std::string_view arg) {
  Result<SnapshotStore> store = SnapshotStore::OpenDefault();
  return LoadSnapshotArg(store.ok() ? &*store : nullptr, arg);
}

}  // namespace gputriage::store
