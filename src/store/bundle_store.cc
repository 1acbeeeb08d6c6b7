#include "store/bundle_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "core/category.h"
#include "core/clock.h"
#include "core/file.h"
#include "core/json_parse.h"
#include "core/redact_job.h"
#include "core/scoped_fd.h"
#include "core/signals.h"
#include "core/text.h"
#include "store/data_home.h"
#include "store/sqlite.h"

namespace gputriage::store {
namespace {

using core::Json;
using core::MakeError;
using core::MakeErrorCode;
using core::Result;

constexpr std::string_view kBundleKind = "gputriage.crash-bundle";
// Bundles are two levels deep at most today (a hidden recorder directory); anything far deeper
// is not something `run` wrote.
constexpr int kMaxRemoveDepth = 32;

bool NewerThan(const BundleRow& a, const BundleRow& b) {
  if (a.created_at != b.created_at) return a.created_at > b.created_at;
  return a.id > b.id;
}

Json OptionalText(const std::optional<std::string>& value) { return value ? Json(*value) : Json(nullptr); }

template <class T>
Json OptionalNumber(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}

bool IsRowNumber(std::string_view text) {
  return !text.empty() && text.size() <= 18 &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "30d", "36h", "90m", "45s", "1.5d": the largest unit the value is a whole number of.
std::string FormatAge(double seconds) {
  struct Unit {
    const char* suffix;
    double seconds;
  };
  static constexpr Unit kUnits[] = {{"w", 7 * 86400.0}, {"d", 86400.0}, {"h", 3600.0}, {"m", 60.0}};
  for (const Unit& unit : kUnits) {
    double count = seconds / unit.seconds;
    if (count >= 1 && std::fabs(count - std::round(count)) < 1e-9) return fmt::format("{}{}", count, unit.suffix);
  }
  return fmt::format("{}s", seconds);
}

// "1 GiB", "512 MiB", "4096 bytes".
std::string FormatSize(uint64_t bytes) {
  static constexpr std::pair<const char*, uint64_t> kUnits[] = {
      {"TiB", 1ull << 40}, {"GiB", 1ull << 30}, {"MiB", 1ull << 20}, {"KiB", 1ull << 10}};
  for (const auto& [suffix, size] : kUnits) {
    if (bytes >= size && bytes % size == 0) return fmt::format("{} {}", bytes / size, suffix);
  }
  return fmt::format("{} bytes", bytes);
}

// --- The bundle directory, reached through file descriptors -------------------------------

// What a look at a directory the index names found.
enum class DirState { kBundle, kGone, kRefused };

struct OpenedBundle {
  DirState state = DirState::kRefused;
  std::string why;  // for kRefused
  core::ScopedFd parent;
  core::ScopedFd dir;
  std::string name;  // of the directory in `parent`
  dev_t dev = 0;
};

// Whether `dir` holds a regular manifest.json (not followed when it is a link) whose kind is a
// crash bundle's; "" when it does, else why not.
std::string WhyNotABundle(int dir, const std::string& path) {
  core::ScopedFd fd(::openat(dir, "manifest.json", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) {
    int err = errno;
    if (err == ENOENT) return "not a crash bundle (no manifest.json)";
    if (err == ELOOP) return "not a crash bundle (manifest.json is a symbolic link)";
    return fmt::format("cannot open manifest.json: {}", std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return "not a crash bundle (manifest.json is not a regular file)";
  auto text = core::ReadFd(fd.get(), path + "/manifest.json", core::kBundleManifestMaxBytes);
  if (!text.ok()) return "manifest.json: " + text.error().message;
  auto json = core::ParseJson(*text, path + "/manifest.json");
  if (!json.ok()) return json.error().message;
  if (!json->is_object() || !json->contains("kind") || !(*json)["kind"].is_string() ||
      (*json)["kind"].get<std::string>() != kBundleKind) {
    return fmt::format("not a crash bundle (manifest.json's kind is not \"{}\")", kBundleKind);
  }
  return "";
}

// Opens the directory `path` names without following a symbolic link in its last component and
// checks that it is a crash bundle. Nothing is removed.
OpenedBundle OpenBundleDir(const std::string& path) {
  OpenedBundle out;
  std::filesystem::path normal = std::filesystem::path(path).lexically_normal();
  if (!normal.is_absolute()) {
    out.why = "the index names a relative path; where it was relative to is not known, so it is left alone";
    return out;
  }
  std::string name = normal.filename().string();
  if (name.empty() || name == "." || name == "..") {
    out.why = "not a bundle directory's path";
    return out;
  }
  out.name = name;
  out.parent.reset(::open(normal.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!out.parent.valid()) {
    int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      out.state = DirState::kGone;
      return out;
    }
    out.why = fmt::format("cannot open {}: {}", normal.parent_path().string(), std::strerror(err));
    return out;
  }
  out.dir.reset(::openat(out.parent.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!out.dir.valid()) {
    int err = errno;
    struct stat st {};
    if (err == ENOENT) {
      out.state = DirState::kGone;
    } else if (err == ELOOP ||
               (::fstatat(out.parent.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))) {
      // O_NOFOLLOW | O_DIRECTORY on a link answers ENOTDIR.
      out.why = "a symbolic link, not a bundle directory (not followed)";
    } else if (err == ENOTDIR) {
      out.why = "not a directory";
    } else {
      out.why = fmt::format("cannot open: {}", std::strerror(err));
    }
    return out;
  }
  struct stat st {};
  if (::fstat(out.dir.get(), &st) != 0) {
    out.why = fmt::format("cannot stat: {}", std::strerror(errno));
    return out;
  }
  out.dev = st.st_dev;
  out.why = WhyNotABundle(out.dir.get(), normal.string());
  if (out.why.empty()) out.state = DirState::kBundle;
  return out;
}

// The names in the directory `fd` (not "." or ".."); `fd` stays open and owned by the caller.
Result<std::vector<std::string>> ListNames(int fd, const std::string& path) {
  int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return core::ErrnoError(errno, "{}: cannot read the directory", path);
  DIR* dir = ::fdopendir(copy);
  if (dir == nullptr) {
    int err = errno;
    ::close(copy);
    return core::ErrnoError(err, "{}: cannot read the directory", path);
  }
  ::rewinddir(dir);
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* entry = ::readdir(dir)) {
    std::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
    errno = 0;
  }
  int err = errno;
  ::closedir(dir);
  if (err != 0) return core::ErrnoError(err, "{}: cannot read the directory", path);
  std::sort(names.begin(), names.end());
  return names;
}

// The disk space (st_blocks * 512, as du counts it) of the directory `fd` and everything in it;
// symbolic links are counted, not followed. Fails when a directory inside is on another device
// than `dev` (a file system mounted there), so that removal can refuse before it starts.
Result<uint64_t> DiskUsage(int fd, const std::string& path, dev_t dev, int depth) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return core::ErrnoError(errno, "{}: cannot stat", path);
  uint64_t total = static_cast<uint64_t>(st.st_blocks) * 512;
  if (depth > kMaxRemoveDepth) return MakeError("{}: nested deeper than {} directories", path, kMaxRemoveDepth);
  GT_ASSIGN_OR_RETURN(std::vector<std::string> names, ListNames(fd, path));
  for (const std::string& name : names) {
    std::string child_path = path + "/" + name;
    if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;
      return core::ErrnoError(errno, "{}: cannot stat", child_path);
    }
    if (!S_ISDIR(st.st_mode)) {
      total += static_cast<uint64_t>(st.st_blocks) * 512;
      continue;
    }
    if (st.st_dev != dev) return MakeError("{}: another file system is mounted there; not removed", child_path);
    core::ScopedFd child(::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!child.valid()) return core::ErrnoError(errno, "{}: cannot open", child_path);
    GT_ASSIGN_OR_RETURN(uint64_t inner, DiskUsage(child.get(), child_path, dev, depth + 1));
    total += inner;
  }
  return total;
}

// Empties the directory `fd` (on device `dev`): files and symbolic links are unlinked (a link's
// target is never touched), directories emptied the same way and removed. A directory on another
// device (a mount inside the bundle) is an error and stays, like `rm --one-file-system`.
Result<void> EmptyDirectory(int fd, const std::string& path, dev_t dev, int depth) {
  if (depth > kMaxRemoveDepth) return MakeError("{}: nested deeper than {} directories", path, kMaxRemoveDepth);
  GT_ASSIGN_OR_RETURN(std::vector<std::string> names, ListNames(fd, path));
  // The bundle's manifest.json goes last: a removal that stops midway leaves a directory that is
  // still recognisably a bundle, so the next prune tries again.
  if (depth == 0) {
    std::stable_partition(names.begin(), names.end(), [](const std::string& name) { return name != "manifest.json"; });
  }
  for (const std::string& name : names) {
    std::string child_path = path + "/" + name;
    struct stat st {};
    if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;
      return core::ErrnoError(errno, "{}: cannot stat", child_path);
    }
    if (S_ISDIR(st.st_mode)) {
      if (st.st_dev != dev) return MakeError("{}: another file system is mounted there; not removed", child_path);
      core::ScopedFd child(::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!child.valid()) return core::ErrnoError(errno, "{}: cannot open", child_path);
      struct stat opened {};
      if (::fstat(child.get(), &opened) != 0 || opened.st_dev != dev || opened.st_ino != st.st_ino) {
        return MakeError("{}: changed while being removed; not removed", child_path);
      }
      GT_RETURN_IF_ERROR(EmptyDirectory(child.get(), child_path, dev, depth + 1));
      if (::unlinkat(fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
        return core::ErrnoError(errno, "{}: cannot remove", child_path);
      }
    } else if (::unlinkat(fd, name.c_str(), 0) != 0 && errno != ENOENT) {
      return core::ErrnoError(errno, "{}: cannot remove", child_path);
    }
  }
  return {};
}

// Removes the bundle directory that OpenBundleDir checked, through its descriptors. A walk first
// finds what would stop the removal midway (a file system mounted inside, a directory that
// cannot be read), so that such a bundle is left whole.
Result<void> RemoveBundleDir(OpenedBundle& opened, const std::string& path) {
  GT_RETURN_IF_ERROR(DiskUsage(opened.dir.get(), path, opened.dev, 0));
  GT_RETURN_IF_ERROR(EmptyDirectory(opened.dir.get(), path, opened.dev, 0));
  opened.dir.reset();
  if (::unlinkat(opened.parent.get(), opened.name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
    return core::ErrnoError(errno, "{}: cannot remove", path);
  }
  return {};
}

// --- The index ----------------------------------------------------------------------------

// The bundles of the database at `db_path`, read-only; exists=false (and no rows) when there is
// no file.
Result<BundleIndexListing> ReadListing(const std::string& db_path) {
  BundleIndexListing listing;
  listing.database = db_path;
  Result<SnapshotStore> store = SnapshotStore::OpenReadOnly(db_path);
  if (!store.ok() && store.error().code == core::ErrorCode::kNotFound) return listing;
  if (!store.ok()) return store.error();
  listing.database_exists = true;
  GT_ASSIGN_OR_RETURN(listing.bundles, store->ListBundles(0));
  SortBundlesNewestFirst(listing.bundles);
  return listing;
}

// Removes the index row `row` (only while it still names the same path: an id may be reused).
Result<void> DeleteRow(const sqlite::Connection& connection, const BundleRow& row) {
  GT_ASSIGN_OR_RETURN(auto statement,
                      sqlite::Statement::Prepare(connection, "DELETE FROM bundles WHERE id = ? AND path = ?"));
  statement.BindInt64(1, row.id);
  statement.BindText(2, row.path);
  GT_ASSIGN_OR_RETURN(bool has_row, statement.Step(fmt::format("cannot remove index row {}", row.id)));
  (void)has_row;
  return {};
}

// The entries of the directory `path` as lstat sees them, sorted by name.
Result<std::vector<BundleDirEntry>> ListEntries(const std::string& path) {
  core::ScopedFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return core::ErrnoError(errno, "{}", path);
  GT_ASSIGN_OR_RETURN(std::vector<std::string> names, ListNames(fd.get(), path));
  std::vector<BundleDirEntry> entries;
  for (const std::string& name : names) {
    struct stat st {};
    if (::fstatat(fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone meanwhile
    BundleDirEntry entry;
    entry.name = core::SanitizeUtf8(name);
    entry.type = S_ISREG(st.st_mode)   ? "file"
                 : S_ISDIR(st.st_mode) ? "directory"
                 : S_ISLNK(st.st_mode) ? "symlink"
                                       : "other";
    entry.size_bytes = static_cast<uint64_t>(st.st_size);
    entries.push_back(std::move(entry));
  }
  return entries;
}

bool SamePath(const std::string& a, const std::string& b) {
  std::error_code ec_a, ec_b;
  std::filesystem::path canonical_a = std::filesystem::weakly_canonical(a, ec_a);
  std::filesystem::path canonical_b = std::filesystem::weakly_canonical(b, ec_b);
  if (ec_a || ec_b) return std::filesystem::path(a).lexically_normal() == std::filesystem::path(b).lexically_normal();
  return canonical_a == canonical_b;
}

// A failure to read the bundle named by the user: kNotFound stays, anything else is
// kInvalidArgument (a damaged bundle is a bad input, not our failure); `label` replaces `path` at
// the start of the message when they differ ("bundle 7 (PATH)/process.json: ...").
core::Error AsInputError(core::Error error, const std::string& label, const std::string& path) {
  if (error.code != core::ErrorCode::kNotFound) error.code = core::ErrorCode::kInvalidArgument;
  if (label != path && core::StartsWith(error.message, path)) error.message = label + error.message.substr(path.size());
  return error;
}

// Reads the bundle at `path` for show; `label` starts every message ("bundle 7 (PATH)" or PATH).
Result<BundleDetails> ReadDetails(const std::string& path, const std::string& label) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    int err = errno;
    return core::Error{fmt::format("{}: {}", label, std::strerror(err)), core::ErrorCodeFromErrno(err), err};
  }
  if (!S_ISDIR(st.st_mode)) {
    return MakeErrorCode(core::ErrorCode::kInvalidArgument, "{}: not a directory, so not a crash bundle", label);
  }
  std::string manifest = path + "/manifest.json";
  if (::lstat(manifest.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return MakeErrorCode(core::ErrorCode::kInvalidArgument, "{}: not a crash bundle (no manifest.json)", label);
  }
  Result<core::Bundle> bundle = core::ReadBundle(path);
  if (!bundle.ok()) return AsInputError(bundle.error(), label, path);
  core::RedactBundle(*bundle);
  BundleDetails details;
  details.path = path;
  details.bundle = std::move(*bundle);
  Result<std::vector<BundleDirEntry>> files = ListEntries(path);
  if (!files.ok()) return AsInputError(files.error(), label, path);
  details.files = std::move(*files);
  return details;
}

}  // namespace

void SortBundlesNewestFirst(std::vector<BundleRow>& rows) { std::stable_sort(rows.begin(), rows.end(), NewerThan); }

std::vector<BundleGroup> GroupBundlesBySignature(std::vector<BundleRow> rows) {
  SortBundlesNewestFirst(rows);
  std::vector<BundleGroup> groups;
  std::map<std::optional<std::string>, size_t> index;  // signature -> position in groups
  for (BundleRow& row : rows) {
    auto [it, inserted] = index.try_emplace(row.signature, groups.size());
    if (inserted) {
      BundleGroup group;
      group.signature = row.signature;
      group.category = row.category;
      group.last_seen = row.created_at;
      group.newest = row;
      groups.push_back(std::move(group));
    }
    BundleGroup& group = groups[it->second];
    ++group.count;
    group.first_seen = row.created_at;  // rows come newest first: the last one seen is the oldest
  }
  return groups;
}

Result<BundleIndexListing> ListBundleIndex(const std::string& db_path) { return ReadListing(db_path); }

Result<BundleIndexListing> ListDefaultBundleIndex() {
  GT_ASSIGN_OR_RETURN(std::string path, LocateDefaultDatabase());
  return ListBundleIndex(path);
}

Json BundleRowToJson(const BundleRow& row) {
  return Json{{"id", row.id},
              {"created_at", row.created_at},
              {"path", row.path},
              {"command", row.command},
              {"exit_status", OptionalNumber(row.exit_status)},
              {"signal", OptionalText(row.signal)},
              {"kind", OptionalText(row.kind)},
              {"category", OptionalText(row.category)},
              {"signature", OptionalText(row.signature)},
              {"summary", row.summary}};
}

Json BundleGroupsToJson(const BundleIndexListing& listing, size_t limit) {
  std::vector<BundleGroup> groups = GroupBundlesBySignature(listing.bundles);
  Json out = Json::array();
  for (size_t i = 0; i < groups.size() && (limit == 0 || i < limit); ++i) {
    const BundleGroup& group = groups[i];
    out.push_back(
        {{"signature", OptionalText(group.signature)},
         {"category", OptionalText(group.category)},
         {"count", group.count},
         {"first_seen", group.first_seen},
         {"last_seen", group.last_seen},
         {"newest", {{"id", group.newest.id}, {"created_at", group.newest.created_at}, {"path", group.newest.path}}}});
  }
  return Json{{"database", listing.database},
              {"total_groups", groups.size()},
              {"total_bundles", listing.bundles.size()},
              {"groups", out}};
}

Json BundleRowsToJson(const BundleIndexListing& listing, size_t limit) {
  Json out = Json::array();
  for (size_t i = 0; i < listing.bundles.size() && (limit == 0 || i < limit); ++i) {
    out.push_back(BundleRowToJson(listing.bundles[i]));
  }
  return Json{{"database", listing.database}, {"total_bundles", listing.bundles.size()}, {"bundles", out}};
}

Result<BundleDetails> LoadBundleArg(const std::string& db_path, const std::string& arg) {
  if (arg.empty()) return MakeErrorCode(core::ErrorCode::kInvalidArgument, "no bundle named (an id or a directory)");
  if (IsRowNumber(arg)) {
    int64_t id = static_cast<int64_t>(*core::ParseU64(arg, 10));
    Result<BundleIndexListing> listing = ReadListing(db_path);
    if (!listing.ok()) return core::Error{listing.error().message, core::ErrorCode::kIo, listing.error().sys_errno};
    if (!listing->database_exists) {
      return MakeErrorCode(core::ErrorCode::kNotFound, "no bundle with id {}: no bundle index at {} yet", id, db_path);
    }
    auto it = std::find_if(listing->bundles.begin(), listing->bundles.end(),
                           [id](const BundleRow& row) { return row.id == id; });
    if (it == listing->bundles.end()) {
      return MakeErrorCode(core::ErrorCode::kNotFound, "no bundle with id {} in {}", id, db_path);
    }
    Result<BundleDetails> details = ReadDetails(it->path, fmt::format("bundle {} ({})", id, it->path));
    if (!details.ok() && !std::filesystem::path(it->path).is_absolute()) {
      core::Error error = details.error();
      error.message += "; the index names a relative path, relative to the directory `gputriage run` was started in";
      return error;
    }
    if (!details.ok()) return details.error();
    details->row = *it;
    return details;
  }
  GT_ASSIGN_OR_RETURN(BundleDetails details, ReadDetails(arg, arg));
  Result<BundleIndexListing> listing = ReadListing(db_path);
  if (listing.ok()) {  // the index is a bonus here: the bundle's own files are what is shown
    for (const BundleRow& row : listing->bundles) {
      if (SamePath(row.path, arg)) {
        details.row = row;
        break;
      }
    }
  }
  return details;
}

Result<BundleDetails> LoadBundleArgFromDefaultStore(const std::string& arg) {
  GT_ASSIGN_OR_RETURN(std::string path, LocateDefaultDatabase());
  return LoadBundleArg(path, arg);
}

Json BundleDetailsToJson(const BundleDetails& details, size_t max_frames) {
  const core::Bundle& bundle = details.bundle;
  const core::ProcessFile& process = bundle.process;
  const std::optional<core::BundleManifest>& manifest = bundle.manifest;
  std::optional<core::BundleClassification> classification;
  if (manifest && manifest->classification) classification = manifest->classification;
  Json out;
  out["path"] = details.path;
  out["indexed"] = details.row ? BundleRowToJson(*details.row) : Json(nullptr);
  out["created_at"] = manifest ? OptionalText(manifest->created_at) : Json(nullptr);
  out["command"] = manifest && manifest->command ? Json(*manifest->command) : Json(nullptr);
  std::optional<int64_t> exit_status;
  if (process.exit_status) exit_status = *process.exit_status;
  if (!exit_status && manifest) exit_status = manifest->exit_status;
  out["exit_status"] = OptionalNumber(exit_status);
  std::optional<std::string> signal;
  if (process.primary.signal) signal = core::SignalName(*process.primary.signal);
  if (!signal && process.term_signal) signal = core::SignalName(*process.term_signal);
  out["signal"] = OptionalText(signal);
  std::optional<std::string> kind, category, summary;
  if (classification) {
    kind = classification->kind;
    category = classification->category;
    summary = classification->summary;
  }
  if (process.primary.classification) {
    const core::Classification& c = *process.primary.classification;
    if (!kind) kind = c.kind;
    if (!category) category = std::string(core::CategoryName(c.category));
    if (!summary) summary = c.summary;
  }
  out["kind"] = OptionalText(kind);
  out["category"] = OptionalText(category);
  out["summary"] = OptionalText(summary);
  std::optional<std::string> signature;
  if (!process.signature.empty()) signature = process.signature;
  if (!signature && manifest) signature = manifest->signature;
  out["signature"] = OptionalText(signature);
  out["timed_out"] = process.timed_out;
  Json frames = Json::array();
  if (!process.primary.threads.empty()) {
    const std::vector<core::Frame>& stack = process.primary.threads.front().frames;
    for (size_t i = 0; i < stack.size() && i < max_frames; ++i) {
      const core::Frame& frame = stack[i];
      frames.push_back({{"function", frame.function},
                        {"module", frame.module},
                        {"offset", frame.offset ? Json(core::Hex(*frame.offset)) : Json(nullptr)},
                        {"file", OptionalText(frame.file)},
                        {"line", OptionalNumber(frame.line)}});
    }
  }
  out["top_frames"] = frames;
  Json files = Json::array();
  for (const BundleDirEntry& entry : details.files) {
    files.push_back({{"name", entry.name}, {"type", entry.type}, {"size_bytes", entry.size_bytes}});
  }
  out["files"] = files;
  Json problems = Json::array();
  for (const core::NotCollected& problem : bundle.problems) {
    problems.push_back({{"item", problem.item}, {"reason", problem.reason}});
  }
  out["problems"] = problems;
  return out;
}

std::optional<double> ParseAgeSeconds(std::string_view text) {
  text = core::Trim(text);
  size_t unit_at = text.find_first_not_of("0123456789.");
  if (unit_at == std::string_view::npos || unit_at == 0) return std::nullopt;
  std::optional<double> value = core::ParseDouble(text.substr(0, unit_at));
  if (!value || *value < 0 || !std::isfinite(*value)) return std::nullopt;
  std::string_view unit = text.substr(unit_at);
  double scale = 0;
  if (unit == "s") {
    scale = 1;
  } else if (unit == "m" || unit == "min") {
    scale = 60;
  } else if (unit == "h") {
    scale = 3600;
  } else if (unit == "d") {
    scale = 86400;
  } else if (unit == "w") {
    scale = 7 * 86400;
  } else {
    return std::nullopt;
  }
  double seconds = *value * scale;
  if (seconds > 100 * 366.0 * 86400) return std::nullopt;
  return seconds;
}

std::vector<PruneChoice> SelectBundlesToPrune(std::vector<SizedBundle> bundles, const PruneCriteria& criteria,
                                              double now_epoch_s) {
  std::stable_sort(bundles.begin(), bundles.end(),
                   [](const SizedBundle& a, const SizedBundle& b) { return NewerThan(a.row, b.row); });
  std::vector<PruneChoice> chosen;
  uint64_t running = 0;
  bool over_size = false;
  for (size_t i = 0; i < bundles.size(); ++i) {
    PruneChoice choice{bundles[i], {}};
    if (criteria.older_than_s) {
      std::optional<double> created = core::ParseUtcIso(bundles[i].row.created_at);
      if (created && now_epoch_s - *created > *criteria.older_than_s) {
        choice.reasons.push_back("older than " + FormatAge(*criteria.older_than_s));
      }
    }
    if (criteria.keep && i >= *criteria.keep) {
      choice.reasons.push_back(fmt::format("not among the newest {}", *criteria.keep));
    }
    if (criteria.max_size_bytes) {
      if (!over_size && running + bundles[i].disk_bytes <= *criteria.max_size_bytes) {
        running += bundles[i].disk_bytes;
      } else {
        over_size = true;
        choice.reasons.push_back(
            fmt::format("beyond --max-size {} with the newer ones", FormatSize(*criteria.max_size_bytes)));
      }
    }
    if (!choice.reasons.empty()) chosen.push_back(std::move(choice));
  }
  return chosen;
}

std::string_view PruneStatusName(PruneStatus status) {
  switch (status) {
    case PruneStatus::kRemoved:
      return "removed";
    case PruneStatus::kWouldRemove:
      return "would-remove";
    case PruneStatus::kGone:
      return "gone";
    case PruneStatus::kRefused:
      return "refused";
    case PruneStatus::kFailed:
      return "failed";
  }
  return "failed";
}

bool PruneResult::complete() const {
  return std::all_of(actions.begin(), actions.end(), [](const PruneAction& action) {
    return action.status == PruneStatus::kRemoved || action.status == PruneStatus::kWouldRemove ||
           action.status == PruneStatus::kGone;
  });
}

Result<PruneResult> PruneBundles(const std::string& db_path, const PruneCriteria& criteria, bool dry_run,
                                 double now_epoch_s) {
  if (!criteria.any()) {
    return MakeErrorCode(core::ErrorCode::kInvalidArgument,
                         "prune: no criterion given (--older-than, --keep or --max-size)");
  }
  PruneResult result;
  result.database = db_path;
  result.dry_run = dry_run;
  GT_ASSIGN_OR_RETURN(BundleIndexListing listing, ReadListing(db_path));
  result.database_exists = listing.database_exists;
  result.indexed = listing.bundles.size();
  if (listing.bundles.empty()) return result;

  // Sizes first: --max-size needs every bundle's. What is not a bundle counts nothing.
  std::vector<SizedBundle> sized;
  for (const BundleRow& row : listing.bundles) {
    SizedBundle bundle{row, 0};
    OpenedBundle opened = OpenBundleDir(row.path);
    if (opened.state == DirState::kBundle) {
      bundle.disk_bytes = DiskUsage(opened.dir.get(), row.path, opened.dev, 0).value_or(0);
    }
    sized.push_back(std::move(bundle));
  }
  std::vector<PruneChoice> chosen = SelectBundlesToPrune(std::move(sized), criteria, now_epoch_s);
  if (chosen.empty()) return result;

  std::optional<sqlite::Connection> writer;
  if (!dry_run) {
    GT_ASSIGN_OR_RETURN(sqlite::Connection connection, sqlite::Connection::Open(db_path));
    sqlite3_busy_timeout(connection.get(), sqlite::kBusyTimeoutMs);
    writer = std::move(connection);
  }
  for (PruneChoice& choice : chosen) {
    PruneAction action{std::move(choice), PruneStatus::kRefused, ""};
    const BundleRow& row = action.choice.bundle.row;
    // Checked again, through the descriptors the removal uses: the directory may have changed.
    OpenedBundle opened = OpenBundleDir(row.path);
    if (opened.state == DirState::kRefused) {
      action.detail = opened.why;
    } else if (opened.state == DirState::kGone) {
      action.status = PruneStatus::kGone;
      if (writer) {
        Result<void> deleted = DeleteRow(*writer, row);
        if (!deleted.ok()) return deleted.error();
      }
    } else if (dry_run) {
      action.status = PruneStatus::kWouldRemove;
      result.freed_bytes += action.choice.bundle.disk_bytes;
    } else if (Result<void> removed = RemoveBundleDir(opened, row.path); !removed.ok()) {
      action.status = PruneStatus::kFailed;
      action.detail = removed.error().message;
    } else {
      action.status = PruneStatus::kRemoved;
      result.freed_bytes += action.choice.bundle.disk_bytes;
      Result<void> deleted = DeleteRow(*writer, row);
      if (!deleted.ok()) return deleted.error();
    }
    result.actions.push_back(std::move(action));
  }
  return result;
}

Result<PruneResult> PruneDefaultBundleIndex(const PruneCriteria& criteria, bool dry_run) {
  GT_ASSIGN_OR_RETURN(std::string path, LocateDefaultDatabase());
  return PruneBundles(path, criteria, dry_run, core::NowEpochSeconds());
}

Json PruneResultToJson(const PruneResult& result) {
  Json bundles = Json::array();
  for (const PruneAction& action : result.actions) {
    const SizedBundle& bundle = action.choice.bundle;
    bundles.push_back({{"id", bundle.row.id},
                       {"created_at", bundle.row.created_at},
                       {"path", bundle.row.path},
                       {"signature", OptionalText(bundle.row.signature)},
                       {"disk_bytes", bundle.disk_bytes},
                       {"reasons", action.choice.reasons},
                       {"status", PruneStatusName(action.status)},
                       {"detail", action.detail.empty() ? Json(nullptr) : Json(action.detail)}});
  }
  return Json{{"database", result.database},       {"dry_run", result.dry_run},     {"indexed", result.indexed},
              {"freed_bytes", result.freed_bytes}, {"complete", result.complete()}, {"bundles", bundles}};
}

}  // namespace gputriage::store
