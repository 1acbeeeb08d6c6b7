#include "store/snapshot_arg.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/file.h"
#include "core/text.h"

namespace gputriage::store {
namespace {

using core::Json;
using core::MakeError;
using core::Result;

constexpr size_t kMaxSnapshotFileBytes = size_t{1} << 30;

// A snapshot's text as core::ReadFile/ReadFd gave it, with this module's message for one that
// is too large (core says so with kInvalidArgument, and for nothing else).
Result<std::string> SnapshotText(Result<std::string> text, std::string_view name) {
  if (!text.ok() && text.error().code == core::ErrorCode::kInvalidArgument) {
    return MakeError("{}: larger than {} bytes; not a snapshot", name, kMaxSnapshotFileBytes);
  }
  return text;
}

// 1-based line and column of byte offset `byte` (nlohmann counts the byte after the error).
std::pair<size_t, size_t> LineColumn(std::string_view text, size_t byte) {
  size_t end = std::min(byte > 0 ? byte - 1 : 0, text.size());
  size_t line = 1;
  size_t column = 1;
  for (size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

// nlohmann's message without its "[json.exception.parse_error.101] parse error at line 1,
// column 2: " preamble, which we replace with our own position.
std::string ParseReason(std::string_view what) {
  size_t at = what.find("parse error");
  if (at != std::string_view::npos) {
    size_t colon = what.find(": ", at);
    if (colon != std::string_view::npos) return std::string(what.substr(colon + 2));
  }
  size_t bracket = what.find("] ");
  if (bracket != std::string_view::npos) return std::string(what.substr(bracket + 2));
  return std::string(what);
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
  Json snapshot;
  try {
    snapshot = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    auto [line, column] = LineColumn(text, e.byte);
    return MakeError("{}: invalid JSON at line {}, column {} (byte {}): {}", source, line, column, e.byte,
                     ParseReason(e.what()));
  } catch (const Json::exception& e) {
    return MakeError("{}: invalid JSON: {}", source, ParseReason(e.what()));
  }
  return core::SnapshotFromJson(snapshot, source);
}

Result<core::Snapshot> LoadSnapshotArg(SnapshotStore* store, std::string_view arg) {
  if (arg.empty()) return MakeError("an empty snapshot operand (want an id, 'latest' or a file)");
  if (AllDigits(arg) || arg == "latest" || arg == "previous") return StoredSnapshot(store, arg);
  if (arg == "-") {
    GT_ASSIGN_OR_RETURN(
        std::string text,
        SnapshotText(core::ReadFd(STDIN_FILENO, "standard input", kMaxSnapshotFileBytes), "standard input"));
    return ParseSnapshotJson(text, "standard input");
  }
  std::string path(arg);
  GT_ASSIGN_OR_RETURN(std::string text, SnapshotText(core::ReadFile(path, kMaxSnapshotFileBytes), path));
  return ParseSnapshotJson(text, path);
}

Result<core::Snapshot> LoadSnapshotArgFromDefaultStore(std::string_view arg) {
  Result<SnapshotStore> store = SnapshotStore::OpenDefault();
  return LoadSnapshotArg(store.ok() ? &*store : nullptr, arg);
}

}  // namespace gputriage::store
