// The previous boot's kernel messages from the systemd journal (sd-journal, libsystemd). An Xid
// 79 or a GPU that fell off the bus usually ends in a reboot, which empties /dev/kmsg; a
// persistent journal (/var/log/journal) still holds what the kernel said before it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/os_view.h"
#include "core/result.h"
#include "kmsg/kmsg.h"

namespace gputriage::kernel_log {

/// The persistent journal's directory. Only it can hold an earlier boot: /run/log/journal is
/// emptied by the reboot.
inline constexpr std::string_view kPersistentJournalDir = "/var/log/journal";

/// The fields of one journal entry that make a kernel-log record, each as sd_journal_get_data
/// returns it: the field name, '=', the value ("PRIORITY=3"). Empty when the entry lacks it.
struct JournalEntryFields {
  std::string_view message;           ///< MESSAGE=
  std::string_view priority;          ///< PRIORITY=
  std::string_view facility;          ///< SYSLOG_FACILITY=
  std::string_view source_monotonic;  ///< _SOURCE_MONOTONIC_TIMESTAMP= (the printk time, us)
};

/// Messages longer than this are cut: printk stores at most 8 KiB (CONSOLE_EXT_LOG_MAX), and
/// journal-remote or a damaged file could hand over anything.
inline constexpr size_t kMaxJournalMessageBytes = 16u << 10;

/// The kmsg::Record an entry of _TRANSPORT=kernel makes. Untrusted input (a captured tree's
/// journal): the message is kept as bytes (journald already undid /dev/kmsg's \xNN escapes),
/// cut at kMaxJournalMessageBytes; a missing SYSLOG_FACILITY is 0 (journald before v235 wrote
/// none for the kernel's own records). nullopt, a malformed entry, when MESSAGE is missing or
/// PRIORITY is missing or not 0..7, or SYSLOG_FACILITY is not a number 0..127. A
/// _SOURCE_MONOTONIC_TIMESTAMP that is not a decimal number leaves the time unknown.
std::optional<kmsg::Record> RecordFromJournalFields(const JournalEntryFields& fields);

/// One kernel message of the previous boot.
struct JournalRecord {
  kmsg::Record record;
  /// The entry's wall-clock time (microseconds since the epoch): when journald received the
  /// record, which for a running system is when the kernel printed it.
  std::optional<uint64_t> realtime_us;
};

struct JournalOptions {
  /// At most this many kernel entries of the previous boot are read (newest first).
  size_t max_entries = 1u << 20;
  /// Time allowed for finding the previous boot and reading it; what was read when it runs out
  /// is kept and the read is marked incomplete. A boot's kernel log (1-20k records) reads in
  /// tens of milliseconds; the budget stops a journal of years on a slow disk.
  std::chrono::milliseconds budget{2000};
};

/// What the journal said about the previous boot.
struct PreviousBoot {
  std::string journal;                        ///< the directory read ("/var/log/journal", or its path in a tree)
  std::string boot_id;                        ///< 32 lower-case hex digits
  std::optional<uint64_t> first_realtime_us;  ///< the boot's first entry (any transport)
  std::optional<uint64_t> last_realtime_us;   ///< the boot's last entry: where it ended
  size_t kernel_entries = 0;                  ///< kernel entries read (malformed ones too)
  size_t malformed_entries = 0;               ///< kernel entries RecordFromJournalFields refused
  /// Why reading stopped before the boot's first kernel entry ("the 2000 ms budget ran out
  /// after its newest 15104 kernel entries"); empty when everything was read.
  std::string incomplete;
  /// Problems that did not stop the read: journal files that cannot be read, ...
  std::vector<std::string> notes;
};

/// Receives the previous boot's kernel records, newest first.
using JournalSink = std::function<void(JournalRecord&&)>;

/// Finds the boot before the current one in the persistent journal and hands its kernel
/// messages (_TRANSPORT=kernel) to `sink`, newest first, within `options`. The live machine's
/// journal is opened with sd_journal_open(SD_JOURNAL_LOCAL_ONLY) and its current boot is
/// sd_id128_get_boot(); under a root, sd_journal_open_directory(<root>/var/log/journal), and
/// the current boot is the tree's proc/sys/kernel/random/boot_id, else the journal's newest
/// boot. The previous boot is the one whose entry journald wrote just before the current
/// boot's first: the journal's own order (sequence numbers), not the wall clock's.
/// Fails, with the reason in the user's terms, when there is no previous boot to read:
/// /var/log/journal missing, no journal file, none readable (permission, corrupt files), only
/// the current boot kept.
core::Result<PreviousBoot> ReadPreviousBootKernelLog(const core::OsView& os, const JournalOptions& options,
                                                     const JournalSink& sink);

/// "2026-12-02T13:39:18.373Z" for microseconds since the epoch; "" past year 9999.
std::string FormatRealtimeUs(uint64_t realtime_us);

}  // namespace gputriage::kernel_log
