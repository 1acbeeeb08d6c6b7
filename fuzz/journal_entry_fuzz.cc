// Fuzz target for a journal entry's fields turned into a kernel-log record (the previous boot's
// kernel log, src/collect/kernel_log/journal.h): the bytes are lines of "FIELD=value" as
// sd_journal_get_data returns them; the first MESSAGE=, PRIORITY=, SYSLOG_FACILITY= and
// _SOURCE_MONOTONIC_TIMESTAMP= lines make the entry, and its record is classified and searched
// for an Xid, as the collector does.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "collect/kernel_log/journal.h"
#include "kmsg/classify.h"

namespace {

void TakeFirst(std::string_view line, std::string_view prefix, std::string_view& field) {
  if (field.empty() && line.substr(0, prefix.size()) == prefix) field = line;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  gputriage::kernel_log::JournalEntryFields fields;
  while (!bytes.empty()) {
    size_t end = bytes.find('\n');
    std::string_view line = bytes.substr(0, end);
    bytes = end == std::string_view::npos ? std::string_view() : bytes.substr(end + 1);
    TakeFirst(line, "MESSAGE=", fields.message);
    TakeFirst(line, "PRIORITY=", fields.priority);
    TakeFirst(line, "SYSLOG_FACILITY=", fields.facility);
    TakeFirst(line, "_SOURCE_MONOTONIC_TIMESTAMP=", fields.source_monotonic);
  }
  if (auto record = gputriage::kernel_log::RecordFromJournalFields(fields)) {
    using gputriage::kmsg::LogClass;
    LogClass log_class = gputriage::kmsg::ClassifyMessage(record->message);
    if (log_class == LogClass::kNvidiaXid) (void)gputriage::kmsg::ParseXid(record->message);
  }
  uint64_t realtime_us = size;
  if (size >= sizeof(realtime_us)) std::memcpy(&realtime_us, data, sizeof(realtime_us));
  (void)gputriage::kernel_log::FormatRealtimeUs(realtime_us);
  return 0;
}
