#include "collect/kernel_log/journal.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <systemd/sd-id128.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>

#include "core/clock.h"
#include "core/text.h"

namespace gputriage::kernel_log {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kBootIdPath = "/proc/sys/kernel/random/boot_id";
// journald keeps a few dozen files per machine; a directory with more is not a journal.
constexpr size_t kMaxJournalFiles = 4096;
// The clock is read once per this many entries (a read costs ~20 ns, an entry ~5 us).
constexpr size_t kEntriesPerClockCheck = 64;
// 9999-12-31T23:59:59Z in microseconds: later times come from a wrong clock or a damaged file.
constexpr uint64_t kMaxRealtimeUs = 253402300799ull * 1000000;

struct JournalCloser {
  void operator()(sd_journal* journal) const { sd_journal_close(journal); }
};
using JournalHandle = std::unique_ptr<sd_journal, JournalCloser>;

std::string ErrnoText(int negative_errno) { return std::strerror(-negative_errno); }

std::string BootIdText(const sd_id128_t& id) {
  char text[SD_ID128_STRING_MAX];
  return sd_id128_to_string(id, text);
}

/// The value of a "FIELD=value" data object, or nullopt when it is not of `field`.
std::optional<std::string_view> FieldValue(std::string_view data, std::string_view field) {
  if (data.size() <= field.size() || !core::StartsWith(data, field) || data[field.size()] != '=') {
    return std::nullopt;
  }
  return data.substr(field.size() + 1);
}

/// The journal files (*.journal, *.journal~) under the persistent directory: directly in it
/// and in its machine-id (or namespace) directories, as sd-journal looks for them.
struct JournalFiles {
  size_t total = 0;
  std::vector<std::string> readable;  // real paths
  uint64_t readable_bytes = 0;        // their disk usage, as sd_journal_get_usage counts it
  std::vector<std::string> unreadable;
};

bool IsJournalFileName(std::string_view name) {
  return core::EndsWith(name, ".journal") || core::EndsWith(name, ".journal~");
}

void AddJournalFile(const core::OsView& os, const std::string& path, JournalFiles& files) {
  if (files.total >= kMaxJournalFiles) return;
  std::string real = os.Resolve(path);
  struct stat st {};
  // A FIFO or device named like a journal (an untrusted tree) is no journal file; libsystemd
  // would refuse it too (EBADFD).
  if (::stat(real.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return;
  ++files.total;
  if (::access(real.c_str(), R_OK) == 0) {
    files.readable_bytes += static_cast<uint64_t>(st.st_blocks) * 512;
    files.readable.push_back(std::move(real));
  } else {
    files.unreadable.push_back(std::move(real));
  }
}

JournalFiles ScanJournalFiles(const core::OsView& os, const std::vector<std::string>& names) {
  JournalFiles files;
  for (const std::string& name : names) {
    std::string path = std::string(kPersistentJournalDir) + "/" + name;
    if (IsJournalFileName(name)) {
      AddJournalFile(os, path, files);
      continue;
    }
    if (!os.IsDirectory(path)) continue;
    core::Result<std::vector<std::string>> inner = os.TryListDir(path);
    if (!inner.ok()) {
      // journald makes these 2755 root:systemd-journal; a listing error is worth naming.
      if (inner.error().code == core::ErrorCode::kPermissionDenied) files.unreadable.push_back(os.Resolve(path));
      continue;
    }
    for (const std::string& file : *inner) {
      if (IsJournalFileName(file)) AddJournalFile(os, path + "/" + file, files);
    }
  }
  return files;
}

std::string PermissionAdvice() {
  return ::geteuid() == 0 ? "" : ": run as root or as a member of the systemd-journal group";
}

/// Why the persistent journal's files cannot be read: "no permission" with the advice.
core::Error PermissionError(const std::string& dir, const JournalFiles& files) {
  return core::MakeErrorCode(
      core::ErrorCode::kPermissionDenied, "no permission to read the journal under {} ({} cannot be read{}){}", dir,
      files.unreadable.front(),
      files.unreadable.size() > 1 ? fmt::format(", and {} more", files.unreadable.size() - 1) : "", PermissionAdvice());
}

/// The readable journal files libsystemd rejects, "PATH: error (why)" each: sd_journal_open and
/// sd_journal_open_directory skip them without a word; sd_journal_open_files on each one says.
std::vector<std::string> ProbeUnusableFiles(const JournalFiles& files) {
  std::vector<std::string> out;
  for (const std::string& path : files.readable) {
    sd_journal* raw = nullptr;
    const char* paths[] = {path.c_str(), nullptr};
    int r = sd_journal_open_files(&raw, paths, 0);
    JournalHandle journal(raw);
    if (r < 0) {
      // journald marks a file with the features it used; an older libsystemd refuses those.
      std::string_view why = r == -EPROTONOSUPPORT ? "written by a newer systemd than this libsystemd reads"
                                                   : "a corrupt file, or not a journal file";
      out.push_back(fmt::format("{}: {} ({})", path, ErrnoText(r), why));
    }
  }
  return out;
}

/// Why readable journal files gave no entry.
core::Error DescribeEmptyJournal(const std::string& dir, const JournalFiles& files) {
  std::vector<std::string> unusable = ProbeUnusableFiles(files);
  if (unusable.empty()) {
    return core::MakeErrorCode(core::ErrorCode::kNotFound, "the journal under {} holds no entries ({} files)", dir,
                               files.total);
  }
  return core::MakeErrorCode(core::ErrorCode::kDataLoss, "the journal under {} cannot be read: {}{}", dir,
                             unusable.front(),
                             files.total > 1 ? fmt::format("; {} journal files in all", files.total) : "");
}

/// Notes the files the open journal left out when its usage falls short of what was found
/// (on the live machine, other machines' directories are left out too: those open fine).
void NoteUnusableFiles(sd_journal* journal, const JournalFiles& files, std::vector<std::string>& notes) {
  uint64_t used = 0;
  if (sd_journal_get_usage(journal, &used) < 0 || used >= files.readable_bytes) return;
  for (const std::string& unusable : ProbeUnusableFiles(files)) {
    notes.push_back("left out " + unusable);
  }
}

/// The boot id of the entry the journal is positioned at.
std::optional<std::string> EntryBootId(sd_journal* journal) {
  uint64_t monotonic = 0;
  sd_id128_t boot{};
  if (sd_journal_get_monotonic_usec(journal, &monotonic, &boot) < 0) return std::nullopt;
  return BootIdText(boot);
}

std::optional<uint64_t> EntryRealtime(sd_journal* journal) {
  uint64_t realtime = 0;
  if (sd_journal_get_realtime_usec(journal, &realtime) < 0 || realtime == 0 || realtime > kMaxRealtimeUs) {
    return std::nullopt;
  }
  return realtime;
}

/// The current boot's id: this machine's, or the tree's proc/sys/kernel/random/boot_id;
/// nullopt when the tree has none.
std::optional<std::string> CurrentBootId(const core::OsView& os) {
  sd_id128_t id{};
  if (os.live()) {
    if (sd_id128_get_boot(&id) < 0) return std::nullopt;
    return BootIdText(id);
  }
  std::optional<std::string> text = os.ReadTrimmed(kBootIdPath);
  if (!text || sd_id128_from_string(text->c_str(), &id) < 0) return std::nullopt;
  return BootIdText(id);
}

class PreviousBootReader {
 public:
  PreviousBootReader(sd_journal* journal, const JournalOptions& options, PreviousBoot& boot)
      : journal_(journal), options_(options), boot_(boot), deadline_(Clock::now() + options.budget) {}

  /// True when the journal holds at least one entry; leaves it positioned at the newest.
  core::Result<bool> TrySeekNewest() {
    int r = sd_journal_seek_tail(journal_);
    if (r >= 0) r = sd_journal_previous(journal_);
    if (r < 0) return core::MakeErrorCode(core::ErrorCode::kIo, "{}: {}", boot_.journal, ErrnoText(r));
    return r > 0;
  }

  /// Walks back from the journal's newest entry (TrySeekNewest) to the boot before the current
  /// one: the current boot's first entry, then the entry written before it. The journal
  /// interleaves its files by sequence number, so this is the order journald wrote them in,
  /// whatever the wall clock said.
  core::Result<std::string> FindPreviousBoot(const std::optional<std::string>& current) {
    std::optional<std::string> newest = EntryBootId(journal_);
    if (!newest) {
      return core::MakeErrorCode(core::ErrorCode::kDataLoss, "{}: the newest entry has no boot id", boot_.journal);
    }
    if (current && *newest != *current) {
      boot_.notes.push_back(
          fmt::format("the current boot ({}) is not in the journal: the newest boot it holds ({}) "
                      "is read as the previous one",
                      *current, *newest));
      return *newest;
    }
    std::string cursor;
    std::optional<uint64_t> current_first;
    GT_RETURN_IF_ERROR(FirstEntryOfBoot(*newest, &cursor, &current_first));
    sd_journal_flush_matches(journal_);
    int r = sd_journal_seek_cursor(journal_, cursor.c_str());
    if (r >= 0) r = sd_journal_next(journal_);
    if (r >= 0) r = sd_journal_previous(journal_);
    if (r < 0) return core::MakeErrorCode(core::ErrorCode::kIo, "{}: {}", boot_.journal, ErrnoText(r));
    std::optional<std::string> before = r > 0 ? EntryBootId(journal_) : std::nullopt;
    if (!before || *before == *newest) {
      return core::MakeErrorCode(core::ErrorCode::kNotFound,
                                 "the journal under {} holds no boot before the current one (boot {}{})", boot_.journal,
                                 *newest, current_first ? ", from " + FormatRealtimeUs(*current_first) : "");
    }
    return *before;
  }

  /// Fills the boot's first and last entry times; the journal is left unfiltered.
  core::Result<void> DescribeBoot(const std::string& boot_id) {
    std::string cursor;
    GT_RETURN_IF_ERROR(FirstEntryOfBoot(boot_id, &cursor, &boot_.first_realtime_us));
    int r = sd_journal_seek_tail(journal_);
    if (r >= 0) r = sd_journal_previous(journal_);
    if (r > 0) boot_.last_realtime_us = EntryRealtime(journal_);
    sd_journal_flush_matches(journal_);
    return {};
  }

  /// Reads the boot's kernel entries from the newest, within the budget and the entry cap.
  void ReadKernelEntries(const std::string& boot_id, const JournalSink& sink) {
    sd_journal_flush_matches(journal_);
    std::string boot_match = "_BOOT_ID=" + boot_id;
    int r = sd_journal_add_match(journal_, boot_match.data(), boot_match.size());
    if (r >= 0) r = sd_journal_add_match(journal_, "_TRANSPORT=kernel", 0);
    if (r >= 0) r = sd_journal_seek_tail(journal_);
    if (r < 0) {
      boot_.incomplete = fmt::format("{}: cannot filter the journal: {}", boot_.journal, ErrnoText(r));
      return;
    }
    size_t& entries = boot_.kernel_entries;
    for (;;) {
      if (entries == options_.max_entries) {
        boot_.incomplete = fmt::format("stopped after its newest {} kernel entries (the limit)", entries);
        return;
      }
      if (entries % kEntriesPerClockCheck == 0 && entries > 0 && Clock::now() > deadline_) {
        boot_.incomplete = fmt::format("the {} ms budget ran out after its newest {} kernel entries",
                                       options_.budget.count(), entries);
        return;
      }
      r = sd_journal_previous(journal_);
      if (r == 0) return;
      if (r < 0) {
        boot_.incomplete =
            fmt::format("reading stopped after {} kernel entries: {} (a damaged journal file)", entries, ErrnoText(r));
        return;
      }
      ++entries;
      std::optional<JournalRecord> record = ReadEntry();
      if (!record) {
        ++boot_.malformed_entries;
        continue;
      }
      sink(std::move(*record));
    }
  }

 private:
  /// Positions the journal at `boot_id`'s first entry (leaving the match on) and gives its
  /// cursor and time.
  core::Result<void> FirstEntryOfBoot(const std::string& boot_id, std::string* cursor,
                                      std::optional<uint64_t>* realtime) {
    sd_journal_flush_matches(journal_);
    std::string match = "_BOOT_ID=" + boot_id;
    int r = sd_journal_add_match(journal_, match.data(), match.size());
    if (r >= 0) r = sd_journal_seek_head(journal_);
    if (r >= 0) r = sd_journal_next(journal_);
    if (r == 0) {
      return core::MakeErrorCode(core::ErrorCode::kDataLoss,
                                 "{}: the first entry of boot {} cannot be found (a damaged journal file)",
                                 boot_.journal, boot_id);
    }
    char* text = nullptr;
    if (r > 0) r = sd_journal_get_cursor(journal_, &text);
    if (r < 0) {
      return core::MakeErrorCode(core::ErrorCode::kIo, "{}: boot {}: {}", boot_.journal, boot_id, ErrnoText(r));
    }
    *cursor = text;
    ::free(text);
    *realtime = EntryRealtime(journal_);
    return {};
  }

  /// One field of the current entry ("" when absent or unreadable).
  std::string_view Field(const char* name) {
    const void* data = nullptr;
    size_t size = 0;
    if (sd_journal_get_data(journal_, name, &data, &size) < 0 || data == nullptr) return {};
    return {static_cast<const char*>(data), size};
  }

  std::optional<JournalRecord> ReadEntry() {
    // Each view stays valid only until the next sd_journal_get_data: copy one by one.
    std::string message(Field("MESSAGE").substr(0, kMaxJournalMessageBytes + 8));
    std::string priority(Field("PRIORITY"));
    std::string facility(Field("SYSLOG_FACILITY"));
    std::string monotonic(Field("_SOURCE_MONOTONIC_TIMESTAMP"));
    std::optional<kmsg::Record> record = RecordFromJournalFields({message, priority, facility, monotonic});
    if (!record) return std::nullopt;
    return JournalRecord{std::move(*record), EntryRealtime(journal_)};
  }

  sd_journal* journal_;
  const JournalOptions& options_;
  PreviousBoot& boot_;
  Clock::time_point deadline_;
};

}  // namespace

std::optional<kmsg::Record> RecordFromJournalFields(const JournalEntryFields& fields) {
  std::optional<std::string_view> message = FieldValue(fields.message, "MESSAGE");
  std::optional<std::string_view> priority_text = FieldValue(fields.priority, "PRIORITY");
  if (!message || !priority_text) return std::nullopt;
  std::optional<uint64_t> priority = core::ParseU64(*priority_text, 10);
  if (!priority || *priority > 7) return std::nullopt;
  kmsg::Record record;
  record.priority = static_cast<uint8_t>(*priority);
  if (std::optional<std::string_view> facility_text = FieldValue(fields.facility, "SYSLOG_FACILITY")) {
    // syslog's facility is the priority's upper bits: at most 1023 >> 3 in /dev/kmsg's PRIO.
    std::optional<uint64_t> facility = core::ParseU64(*facility_text, 10);
    if (!facility || *facility > 127) return std::nullopt;
    record.facility = static_cast<uint8_t>(*facility);
  }
  if (std::optional<std::string_view> monotonic = FieldValue(fields.source_monotonic, "_SOURCE_MONOTONIC_TIMESTAMP")) {
    record.monotonic_us = core::ParseU64(*monotonic, 10);
  }
  record.message = std::string(message->substr(0, kMaxJournalMessageBytes));
  return record;
}

std::string FormatRealtimeUs(uint64_t realtime_us) {
  if (realtime_us > kMaxRealtimeUs) return "";
  std::string text = core::FormatUtcIso(static_cast<double>(realtime_us / 1000000));
  if (text.empty() || text.back() != 'Z') return "";
  text.pop_back();
  return text + fmt::format(".{:03}Z", (realtime_us % 1000000) / 1000);
}

core::Result<PreviousBoot> ReadPreviousBootKernelLog(const core::OsView& os, const JournalOptions& options,
                                                     const JournalSink& sink) {
  PreviousBoot boot;
  boot.journal = os.Resolve(kPersistentJournalDir);
  if (!os.IsDirectory(kPersistentJournalDir)) {
    return core::MakeErrorCode(core::ErrorCode::kNotFound,
                               "the journal keeps no previous boot: {} does not exist (Storage=auto without it keeps "
                               "logs in /run only)",
                               boot.journal);
  }
  core::Result<std::vector<std::string>> names = os.TryListDir(kPersistentJournalDir);
  if (!names.ok()) return names.error();
  JournalFiles files = ScanJournalFiles(os, *names);
  if (files.total == 0 && files.unreadable.empty()) {
    return core::MakeErrorCode(core::ErrorCode::kNotFound,
                               "the journal keeps no previous boot: {} holds no journal files (journald has not "
                               "written there: it is not running, or Storage=volatile or none)",
                               boot.journal);
  }
  if (files.readable.empty()) return PermissionError(boot.journal, files);
  if (!files.unreadable.empty()) {
    boot.notes.push_back(fmt::format("{} of {} journal files under {} cannot be read (the first {}){}",
                                     files.unreadable.size(), files.total, boot.journal, files.unreadable.front(),
                                     PermissionAdvice()));
  }

  sd_journal* raw = nullptr;
  int r = os.live() ? sd_journal_open(&raw, SD_JOURNAL_LOCAL_ONLY)
                    : sd_journal_open_directory(&raw, boot.journal.c_str(), 0);
  JournalHandle journal(raw);
  if (r < 0) {
    return core::MakeErrorCode(core::ErrorCode::kIo, "{}: cannot open the journal: {}", boot.journal, ErrnoText(r));
  }
  // Only the start of a field is wanted; large compressed fields are not inflated in full.
  sd_journal_set_data_threshold(journal.get(), kMaxJournalMessageBytes + 64);

  PreviousBootReader reader(journal.get(), options, boot);
  GT_ASSIGN_OR_RETURN(bool has_entries, reader.TrySeekNewest());
  if (!has_entries) return DescribeEmptyJournal(boot.journal, files);
  NoteUnusableFiles(journal.get(), files, boot.notes);
  GT_ASSIGN_OR_RETURN(boot.boot_id, reader.FindPreviousBoot(CurrentBootId(os)));
  // Finding the boot takes a few index lookups; the budget is for the reading, which grows
  // with the log (and the collector's own timeout still bounds the whole).
  GT_RETURN_IF_ERROR(reader.DescribeBoot(boot.boot_id));
  reader.ReadKernelEntries(boot.boot_id, sink);
  return boot;
}

}  // namespace gputriage::kernel_log
