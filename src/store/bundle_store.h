// The crash-bundle index for `gputriage bundles`: the indexed bundles grouped by signature (the
// way crash reporters group crashes), one bundle read for `show`, and retention (`prune`): which
// bundles go by age, count and size, and removing a bundle's directory and its index row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/bundle.h"
#include "core/model.h"
#include "core/result.h"
#include "store/snapshot_store.h"

namespace gputriage::store {

/// The indexed bundles of one signature.
struct BundleGroup {
  std::optional<std::string> signature;  ///< as stored (redacted); nullopt groups the bundles without one
  std::optional<std::string> category;   ///< the newest bundle's
  int64_t count = 0;
  std::string first_seen;  ///< the oldest bundle's created_at
  std::string last_seen;   ///< the newest bundle's created_at
  BundleRow newest;        ///< the newest bundle of the group
};

/// `rows` newest first: by created_at (ISO-8601 UTC, so text order is time order), ties by the
/// higher id.
void SortBundlesNewestFirst(std::vector<BundleRow>& rows);

/// `rows` (any order) grouped by signature, newest group (by its newest bundle) first.
std::vector<BundleGroup> GroupBundlesBySignature(std::vector<BundleRow> rows);

/// Every indexed bundle, newest first, and where the index is.
struct BundleIndexListing {
  std::string database;            ///< the database file (it may not exist)
  bool database_exists = false;    ///< false: no bundle was ever indexed here
  std::vector<BundleRow> bundles;  ///< newest first
};

/// All the bundles of the database at `db_path`, opened read-only (nothing is created: a
/// missing file is an empty listing with database_exists false). Fails as
/// SnapshotStore::OpenReadOnly and ListBundles do, except for the missing file.
core::Result<BundleIndexListing> ListBundleIndex(const std::string& db_path);

/// ListBundleIndex on the default database (LocateDefaultDatabase: nothing is created).
core::Result<BundleIndexListing> ListDefaultBundleIndex();

/// `bundles list --json`: {database, total_groups, total_bundles, groups: [{signature,
/// category, count, first_seen, last_seen, newest: {id, created_at, path}}]} with at most
/// `limit` groups (all when 0). An unknown signature or category is null.
core::Json BundleGroupsToJson(const BundleIndexListing& listing, size_t limit);

/// `bundles list --all --json`: {database, total_bundles, bundles: [row...]} with at most `limit`
/// bundles (all when 0); each row as BundleRowToJson.
core::Json BundleRowsToJson(const BundleIndexListing& listing, size_t limit);

/// {id, created_at, path, command, exit_status, signal, kind, category, signature, summary};
/// unknown members are null.
core::Json BundleRowToJson(const BundleRow& row);

/// One entry of a bundle directory, as lstat sees it (symbolic links are not followed).
struct BundleDirEntry {
  std::string name;
  std::string type;         ///< "file", "directory", "symlink", "other"
  uint64_t size_bytes = 0;  ///< st_size
};

/// A bundle for `bundles show`: its index row when it has one, the bundle as core::ReadBundle
/// read it (redacted with core::RedactBundle, as `analyze` shows it) and its directory's
/// entries, sorted by name.
struct BundleDetails {
  std::string path;
  std::optional<BundleRow> row;
  core::Bundle bundle;
  std::vector<BundleDirEntry> files;
};

/// The bundle `arg` names: an id of the index at `db_path` (all digits), or else a bundle
/// directory (whose index row is the one with the same path, when there is one). Fails naming
/// `arg` (an id as "bundle 7 (PATH)"): kNotFound for an id the index does not have ("no bundle
/// with id 42 in DB"; also when there is no database) or a directory that is not there (for an
/// id whose indexed path is relative, the message says so: it was relative to where `run` ran);
/// kInvalidArgument for what is not a bundle ("DIR: not a crash bundle (no manifest.json)") or
/// a damaged one (core::ReadBundle's message: process.json missing or not JSON); kIo when the
/// index cannot be read to look an id up. The index is opened read-only; for a directory it is
/// only consulted (the bundle is shown without a row when the index is missing or unreadable).
core::Result<BundleDetails> LoadBundleArg(const std::string& db_path, const std::string& arg);

/// LoadBundleArg on the default database (LocateDefaultDatabase: nothing is created).
core::Result<BundleDetails> LoadBundleArgFromDefaultStore(const std::string& arg);

/// `bundles show --json`: {path, indexed (BundleRowToJson or null), created_at, command,
/// exit_status, signal, kind, category, summary, signature, timed_out, top_frames: [{function,
/// module, offset, file, line}], files: [{name, type, size_bytes}], problems: [{item, reason}]}.
/// At most `max_frames` frames of the crashed thread.
core::Json BundleDetailsToJson(const BundleDetails& details, size_t max_frames);

/// An age as people write it for retention: a number (decimals allowed) and a unit, s, m (or
/// min), h, d or w: "90m", "36h", "30d", "2w". nullopt for anything else, a bare number (which
/// unit would it be?), negatives, or more than 100 years.
std::optional<double> ParseAgeSeconds(std::string_view text);

/// What `bundles prune` removes; a bundle goes when any criterion chooses it.
struct PruneCriteria {
  std::optional<double> older_than_s;      ///< created more than this many seconds before now
  std::optional<size_t> keep;              ///< all but the newest `keep`
  std::optional<uint64_t> max_size_bytes;  ///< all but the newest bundles that together fit
  bool any() const { return older_than_s || keep || max_size_bytes; }
};

/// An indexed bundle with the disk space its directory takes.
struct SizedBundle {
  BundleRow row;
  /// st_blocks * 512 of everything in it, as du counts; 0 when it is gone, not a bundle, or
  /// cannot be measured (a directory inside cannot be read, another file system is mounted inside)
  uint64_t disk_bytes = 0;
};

/// A bundle the criteria chose, and why ("older than 30d", "not among the newest 5",
/// "beyond --max-size 1G").
struct PruneChoice {
  SizedBundle bundle;
  std::vector<std::string> reasons;
};

/// Which of `bundles` (any order) `criteria` remove at `now_epoch_s`, newest first. By age: a
/// created_at that does not parse is never old. By size: walking from the newest, bundles are
/// kept while their running total fits max_size_bytes; the first that does not fit and every
/// older one go.
std::vector<PruneChoice> SelectBundlesToPrune(std::vector<SizedBundle> bundles, const PruneCriteria& criteria,
                                              double now_epoch_s);

/// What happened to one chosen bundle.
enum class PruneStatus {
  kRemoved,      ///< directory and index row removed
  kWouldRemove,  ///< --dry-run: it would be removed
  kGone,         ///< the directory was already gone: only the index row was (or would be) removed
  kRefused,      ///< not removed: the path does not look like a bundle (`detail` says why)
  kFailed,       ///< removing failed midway (`detail`); the index row stays
};

/// "removed", "would-remove", "gone", "refused", "failed".
std::string_view PruneStatusName(PruneStatus status);

struct PruneAction {
  PruneChoice choice;
  PruneStatus status = PruneStatus::kRefused;
  std::string detail;  ///< why refused or failed; "" otherwise
};

struct PruneResult {
  std::string database;
  bool database_exists = false;
  bool dry_run = false;
  size_t indexed = 0;                ///< bundles in the index before pruning
  std::vector<PruneAction> actions;  ///< newest first
  uint64_t freed_bytes = 0;          ///< disk space of the removed (or, dry run, removable) directories
  /// True when every chosen bundle was removed (or, dry run, would be).
  bool complete() const;
};

/// Applies `criteria` (at least one: kInvalidArgument otherwise) to the index at `db_path`. Each
/// chosen bundle's directory, as the index names it, is checked before anything is removed: an
/// absolute path, a real directory (not a symbolic link) holding a regular manifest.json whose
/// kind is "gputriage.crash-bundle"; anything else is refused and left alone. The directory is
/// then removed through file descriptors opened with O_NOFOLLOW (a symbolic link inside is
/// removed, never followed), its manifest.json last, then its index row. A walk before removing
/// anything finds what would stop the removal midway (another file system mounted inside, a
/// directory that cannot be read): such a bundle stays whole (kFailed).
/// A directory already gone loses only its row. With `dry_run` nothing is removed and the index
/// is opened read-only. A missing database prunes nothing and is not created. Fails on database
/// errors; a bundle that cannot be removed is a kFailed action, not a failure.
core::Result<PruneResult> PruneBundles(const std::string& db_path, const PruneCriteria& criteria, bool dry_run,
                                       double now_epoch_s);

/// PruneBundles on the default database at the current time.
core::Result<PruneResult> PruneDefaultBundleIndex(const PruneCriteria& criteria, bool dry_run);

/// `bundles prune --json`: {database, dry_run, indexed, freed_bytes, complete, bundles: [{id,
/// created_at, path, signature, disk_bytes, reasons, status, detail}]}.
core::Json PruneResultToJson(const PruneResult& result);

}  // namespace gputriage::store
