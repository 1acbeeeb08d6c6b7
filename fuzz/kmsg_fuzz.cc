// Fuzz target for the kernel-log parsers and classifier: the bytes are read as concatenated
// /dev/kmsg records, as one record (what one read() returns) and as syslog(2) text, and every
// message is classified and searched for an Xid, as the collector does.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

#include "collect/kernel_log/classify.h"
#include "collect/kernel_log/kmsg.h"

namespace {

void Inspect(gputriage::kernel_log::Record&& record) {
  using gputriage::kernel_log::LogClass;
  LogClass log_class = gputriage::kernel_log::ClassifyMessage(record.message);
  if (log_class == LogClass::kNvidiaXid || log_class == LogClass::kNvidiaNvrm) {
    (void)gputriage::kernel_log::ParseXid(record.message);
  }
  (void)gputriage::kernel_log::LogClassName(log_class);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  gputriage::kernel_log::ParseKmsgBuffer(bytes, Inspect);
  gputriage::kernel_log::ParseSyslogBuffer(bytes, Inspect);
  if (auto record = gputriage::kernel_log::ParseKmsgRecord(bytes)) Inspect(std::move(*record));
  (void)gputriage::kernel_log::UnescapeKmsg(bytes);
  (void)gputriage::kernel_log::ParseXid(bytes);
  return 0;
}
