// Fuzz target for the kernel-log parsers and classifier: the bytes are read as concatenated
// /dev/kmsg records, as one record (what one read() returns) and as syslog(2) text, and every
// message is classified and searched for an Xid, as the collector does.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

#include "kmsg/classify.h"
#include "kmsg/kmsg.h"

namespace {

void Inspect(gputriage::kmsg::Record&& record) {
  using gputriage::kmsg::LogClass;
  LogClass log_class = gputriage::kmsg::ClassifyMessage(record.message);
  if (log_class == LogClass::kNvidiaXid || log_class == LogClass::kNvidiaNvrm) {
    (void)gputriage::kmsg::ParseXid(record.message);
  }
  (void)gputriage::kmsg::LogClassName(log_class);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  gputriage::kmsg::ParseKmsgBuffer(bytes, Inspect);
  gputriage::kmsg::ParseSyslogBuffer(bytes, Inspect);
  if (auto record = gputriage::kmsg::ParseKmsgRecord(bytes)) Inspect(std::move(*record));
  (void)gputriage::kmsg::UnescapeKmsg(bytes);
  (void)gputriage::kmsg::ParseXid(bytes);
  return 0;
}
