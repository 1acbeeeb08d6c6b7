// Test support (header only; used by gt_kernel_log_test and gt_checks_test): real journal files
// for the journal reader. The entries are written as a journal export stream
// (https://systemd.io/JOURNAL_EXPORT_FORMATS/) and turned into a journal file by Debian's
// systemd-journal-remote, the same code journald writes files with; the reader under test then
// opens that file with libsystemd as it would /var/log/journal.
#pragma once

#include <fmt/format.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/subprocess.h"
#include "core/text.h"

namespace gputriage::kernel_log::test_support {

/// Debian's systemd-journal-remote (package systemd-journal-remote).
inline constexpr const char* kJournalRemote = "/lib/systemd/systemd-journal-remote";

/// Why journal files cannot be written here ("" when they can): the tests skip with it.
inline std::string JournalRemoteMissing() {
  if (::access(kJournalRemote, X_OK) == 0) return "";
  return fmt::format("{} is not installed (apt-get install systemd-journal-remote)", kJournalRemote);
}

/// One journal entry: its boot, clocks and fields (other than the __ and _BOOT_ID ones).
struct JournalEntry {
  std::string boot_id;  ///< 32 hex digits
  uint64_t realtime_us = 0;
  uint64_t monotonic_us = 0;
  std::vector<std::pair<std::string, std::string>> fields;
};

/// A kernel record as journald stores one read from /dev/kmsg (journald-kmsg.c): received at
/// boot + `monotonic_us`.
inline JournalEntry KernelEntry(const std::string& boot_id, uint64_t boot_s, uint64_t monotonic_us, std::string message,
                                int priority = 4) {
  return {boot_id,
          boot_s * 1000000 + monotonic_us,
          monotonic_us,
          {{"_TRANSPORT", "kernel"},
           {"PRIORITY", std::to_string(priority)},
           {"SYSLOG_FACILITY", "0"},
           {"SYSLOG_IDENTIFIER", "kernel"},
           {"_SOURCE_MONOTONIC_TIMESTAMP", std::to_string(monotonic_us)},
           {"MESSAGE", std::move(message)}}};
}

/// A line a service printed to its standard output (journald's stdout transport).
inline JournalEntry ServiceEntry(const std::string& boot_id, uint64_t boot_s, uint64_t monotonic_us,
                                 std::string identifier, std::string message) {
  return {boot_id,
          boot_s * 1000000 + monotonic_us,
          monotonic_us,
          {{"_TRANSPORT", "stdout"},
           {"PRIORITY", "6"},
           {"SYSLOG_FACILITY", "3"},
           {"SYSLOG_IDENTIFIER", std::move(identifier)},
           {"MESSAGE", std::move(message)}}};
}

/// Kernel entries from a text log as dmesg prints it ("[  123.456789] message"; lines without
/// a time come 1 ms after the one before, the first at `first_us`; "...", "--" and blank lines
/// are dropped), as `boot_id` booted at `boot_s`.
inline std::vector<JournalEntry> KernelEntriesFromDmesg(std::string_view text, const std::string& boot_id,
                                                        uint64_t boot_s, uint64_t first_us = 1000000) {
  std::vector<JournalEntry> out;
  uint64_t last_us = 0;
  for (std::string_view line : core::SplitLines(text)) {
    line = core::Trim(line);
    if (line.empty() || line == "..." || line == "--") continue;
    uint64_t us = out.empty() ? first_us : last_us + 1000;
    size_t close = line.find(']');
    if (line.front() == '[' && close != std::string_view::npos) {
      std::string_view stamp = core::Trim(line.substr(1, close - 1));
      size_t dot = stamp.find('.');
      std::optional<uint64_t> seconds = core::ParseU64(stamp.substr(0, dot), 10);
      std::optional<uint64_t> micros = dot == std::string_view::npos ? 0 : core::ParseU64(stamp.substr(dot + 1), 10);
      if (seconds && micros) {
        us = *seconds * 1000000 + *micros;
        line = core::Trim(line.substr(close + 1));
      }
    }
    last_us = us;
    out.push_back(KernelEntry(boot_id, boot_s, us, std::string(line)));
  }
  return out;
}

/// The export stream of `entries`; every value in the binary-safe form (name, '\n', 64-bit
/// little-endian size, bytes, '\n'), so messages may hold any byte.
inline std::string ExportStream(const std::vector<JournalEntry>& entries) {
  std::string out;
  auto binary_field = [&out](std::string_view name, std::string_view value) {
    out += name;
    out += '\n';
    uint64_t size = value.size();
    for (int i = 0; i < 8; ++i) out += static_cast<char>((size >> (8 * i)) & 0xff);
    out += value;
    out += '\n';
  };
  for (const JournalEntry& entry : entries) {
    out += fmt::format("__REALTIME_TIMESTAMP={}\n__MONOTONIC_TIMESTAMP={}\n_BOOT_ID={}\n", entry.realtime_us,
                       entry.monotonic_us, entry.boot_id);
    for (const auto& [name, value] : entry.fields) binary_field(name, value);
    out += '\n';
  }
  return out;
}

/// Writes `entries`, in this order, into the new journal file `path` (its directory is made;
/// the name must end in ".journal"). Returns "" or what went wrong.
inline std::string WriteJournalFile(const std::string& path, const std::vector<JournalEntry>& entries) {
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), error);
  if (error) return path + ": " + error.message();
  // The stream goes through a file: RunWithTimeout feeds standard input one pipe-full only.
  std::string stream_path = path + ".export";
  {
    std::ofstream stream(stream_path, std::ios::binary);
    stream << ExportStream(entries);
    if (!stream.flush()) return stream_path + ": cannot write";
  }
  core::RunOptions options;
  options.timeout = std::chrono::milliseconds(120000);
  core::Result<core::ProcessOutcome> outcome =
      core::RunWithTimeout({kJournalRemote, "--output=" + path, stream_path}, options);
  std::filesystem::remove(stream_path, error);
  if (!outcome.ok()) return outcome.error().message;
  if (outcome->exit_code != 0) {
    return fmt::format("{} {}: {}", kJournalRemote, core::DescribeOutcome(*outcome, options), outcome->stderr_tail);
  }
  return "";
}

}  // namespace gputriage::kernel_log::test_support
