// Parsers for the two text forms of the kernel's printk ring buffer. They take bytes, never
// paths, so tests and the fuzzer feed memory:
//   /dev/kmsg:  "PRIO,SEQ,TIMESTAMP_US,FLAGS[,...];MESSAGE\n" then " KEY=value\n" lines
//               (Documentation/ABI/testing/dev-kmsg); non-printable bytes escaped as \xNN.
//   syslog(2):  "<PRIO>[   12.345678] MESSAGE\n", what klogctl(SYSLOG_ACTION_READ_ALL) returns
//               (and `dmesg -r` prints); the timestamp is absent when printk.time=0.
// Input is untrusted: nothing here throws or reads out of bounds, numbers are range-checked,
// and a record that cannot be parsed is counted and skipped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace gputriage::kmsg {

/// One kernel-log record. `message` holds the bytes printk stored (the \xNN escapes of
/// /dev/kmsg undone): it may contain '\n' (multi-line messages) and bytes that are not UTF-8.
struct Record {
  std::optional<uint64_t> seq;           ///< /dev/kmsg sequence number; absent in syslog(2) text
  std::optional<uint64_t> monotonic_us;  ///< since boot; absent when the line carries no time
  uint8_t priority = 0;                  ///< the level: 0 (emerg) .. 7 (debug)
  uint8_t facility = 0;                  ///< 0 kernel; 1 user (a process wrote /dev/kmsg); ...
  std::string message;
  std::string subsystem;  ///< from a " SUBSYSTEM=pci" continuation line; empty when none
  std::string device;     ///< from a " DEVICE=+pci:0000:00:06.0" continuation line, as written
};

/// What parsing a buffer saw.
struct ParseStats {
  size_t records = 0;    ///< well-formed records handed to the sink
  size_t malformed = 0;  ///< records skipped: bad or missing fields, numbers out of range, ...
};

/// Receives each parsed record, oldest first; it may move from the record.
using RecordSink = std::function<void(Record&&)>;

/// Parses one /dev/kmsg record, exactly what one read() of the device returns: a header line,
/// then optional continuation lines that start with a space. The final '\n' may be missing (a
/// truncated record keeps the message it has). nullopt when the header is malformed: fewer
/// than four fields before ';', no ';', a PRIO/SEQ/TIMESTAMP that is not a decimal number or
/// is out of range (PRIO > 2047, 64-bit overflow).
std::optional<Record> ParseKmsgRecord(std::string_view bytes);

/// Parses concatenated /dev/kmsg records (a dev/kmsg file of a captured tree). A line that
/// starts with a space continues the record before it; empty lines are ignored. Malformed
/// records, and continuation lines with no record before them, are counted and skipped.
ParseStats ParseKmsgBuffer(std::string_view bytes, const RecordSink& sink);

/// Parses syslog(2)-format text, one record per line: "<PRIO>", an optional
/// "[seconds.micros]" timestamp, an optional caller id ("[T123]"), then the message. Lines
/// without a valid "<PRIO>" are counted as malformed; empty lines are ignored.
ParseStats ParseSyslogBuffer(std::string_view bytes, const RecordSink& sink);

/// Parses either format: syslog(2) text when the first non-blank byte is '<', else /dev/kmsg.
ParseStats ParseAnyBuffer(std::string_view bytes, const RecordSink& sink);

/// Undoes the \xNN escapes of /dev/kmsg ("\x09" -> tab, "\x5c" -> '\\'); a backslash that
/// does not start a valid escape is kept as it is.
std::string UnescapeKmsg(std::string_view text);

}  // namespace gputriage::kmsg
