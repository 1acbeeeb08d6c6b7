// What `gputriage diff A B` accepts for A and B: a stored snapshot or a snapshot JSON file.
#pragma once

#include <string_view>

#include "core/result.h"
#include "core/snapshot.h"
#include "store/snapshot_store.h"

namespace gputriage::store {

/// Parses `text` as a snapshot through core::ParseJson; `source` names it in errors (a file
/// name). Fails with the position on bad JSON ("a.json: invalid JSON at line 3, column 7: ..."),
/// for JSON nested deeper than core::kMaxJsonDepth, for a document that is not an object, and
/// through core::CheckSnapshotVersion ("<source>: not a gputriage
/// snapshot (no schema_version)", "<source>: snapshot schema_version 2 is newer than this
/// gputriage (knows 1); upgrade gputriage").
core::Result<core::Snapshot> ParseSnapshotJson(std::string_view text, std::string_view source);

/// Resolves one diff operand:
///   "12"       the stored snapshot with id 12 (digits only; write "./12" for a file named 12),
///   "latest"   the newest stored snapshot, "previous" the one before it,
///   "-"        snapshot JSON on standard input,
///   otherwise  a path to a snapshot JSON file.
/// A file or standard input holds at most core::kSnapshotMaxBytes (32 MiB): a regular file is
/// refused from its size before anything is read; a pipe or a device (/dev/zero) is read no
/// further than that.
/// `store` may be null when no database is open; then only files and "-" resolve. Every
/// result passes core::CheckSnapshotVersion. Errors name the operand, the database or the file.
core::Result<core::Snapshot> LoadSnapshotArg(SnapshotStore* store, std::string_view arg);

/// True when `arg` names a snapshot of the database (an id, "latest", "previous"), not a file.
bool NamesStoredSnapshot(std::string_view arg);

/// LoadSnapshotArg against the default database (SnapshotStore::OpenDefault) when it opens;
/// when it does not (no usable data home, a damaged database), with no store: then only files
/// and "-" resolve, and a stored snapshot's id fails saying no database is open.
core::Result<core::Snapshot> LoadSnapshotArgFromDefaultStore(std::string_view arg);

}  // namespace gputriage::store
