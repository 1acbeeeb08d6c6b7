#include "kmsg/kmsg.h"

#include <charconv>
#include <utility>

namespace gputriage::kmsg {
namespace {

// The kernel stores the facility in a u8 (struct printk_info), so PRIO fits in 11 bits.
constexpr uint64_t kMaxPrio = (255u << 3) | 7u;

/// A whole string of decimal digits as a number; nullopt on anything else or on overflow.
std::optional<uint64_t> ParseDecimal(std::string_view s) {
  if (s.empty()) return std::nullopt;
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value, 10);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

std::optional<uint8_t> HexDigit(char c) {
  if (c >= '0' && c <= '9') return static_cast<uint8_t>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<uint8_t>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<uint8_t>(c - 'A' + 10);
  return std::nullopt;
}

/// Sets level and facility from a PRIO number; false when it is out of range.
bool SetPriority(uint64_t prio, Record& record) {
  if (prio > kMaxPrio) return false;
  record.priority = static_cast<uint8_t>(prio & 7u);
  record.facility = static_cast<uint8_t>(prio >> 3);
  return true;
}

/// Takes the text up to the next '\n' (excluded) off `rest`; the '\n' is consumed too.
std::string_view NextLine(std::string_view& rest) {
  size_t end = rest.find('\n');
  std::string_view line = rest.substr(0, end);
  rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
  return line;
}

/// Splits the part of a header before ';' into its first four fields; returns how many there
/// are (at most 4).
size_t SplitHeaderFields(std::string_view rest, std::string_view (&fields)[4]) {
  size_t count = 0;
  while (count < 4) {
    size_t comma = rest.find(',');
    fields[count++] = rest.substr(0, comma);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return count;
}

/// "PRIO,SEQ,TIMESTAMP_US,FLAGS[,more];MESSAGE" (no '\n').
std::optional<Record> ParseKmsgHeader(std::string_view line) {
  size_t semicolon = line.find(';');
  if (semicolon == std::string_view::npos) return std::nullopt;
  std::string_view fields[4];
  if (SplitHeaderFields(line.substr(0, semicolon), fields) < 4) return std::nullopt;
  std::optional<uint64_t> prio = ParseDecimal(fields[0]);
  std::optional<uint64_t> seq = ParseDecimal(fields[1]);
  std::optional<uint64_t> timestamp = ParseDecimal(fields[2]);
  Record record;
  if (!prio || !seq || !timestamp || !SetPriority(*prio, record)) return std::nullopt;
  record.seq = seq;
  record.monotonic_us = timestamp;
  record.message = UnescapeKmsg(line.substr(semicolon + 1));
  return record;
}

/// " KEY=value": keeps the keys gputriage uses; others are ignored.
void ApplyContinuation(std::string_view line, Record& record) {
  line.remove_prefix(1);  // the leading space
  size_t equals = line.find('=');
  if (equals == std::string_view::npos) return;
  std::string_view key = line.substr(0, equals);
  std::string_view value = line.substr(equals + 1);
  if (key == "SUBSYSTEM") record.subsystem = UnescapeKmsg(value);
  if (key == "DEVICE") record.device = UnescapeKmsg(value);
}

/// "[   12.345678]" at the start of `rest`: consumes it and returns microseconds, or leaves
/// `rest` alone and returns nullopt when it is not a timestamp.
std::optional<uint64_t> TakeSyslogTimestamp(std::string_view& rest) {
  if (rest.empty() || rest.front() != '[') return std::nullopt;
  size_t close = rest.find(']');
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view inside = rest.substr(1, close - 1);
  while (!inside.empty() && inside.front() == ' ') inside.remove_prefix(1);
  size_t dot = inside.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  std::optional<uint64_t> seconds = ParseDecimal(inside.substr(0, dot));
  std::string_view fraction = inside.substr(dot + 1);
  if (!seconds || fraction.empty() || fraction.size() > 9 || !ParseDecimal(fraction)) {
    return std::nullopt;
  }
  uint64_t micros = 0;
  for (size_t i = 0; i < 6; ++i) {
    micros = micros * 10 + (i < fraction.size() ? static_cast<uint64_t>(fraction[i] - '0') : 0);
  }
  constexpr uint64_t kMaxSeconds = UINT64_MAX / 1000000 - 1;
  if (*seconds > kMaxSeconds) return std::nullopt;
  rest.remove_prefix(close + 1);
  return *seconds * 1000000 + micros;
}

/// "[T123]" / "[    C1]" (CONFIG_PRINTK_CALLER) at the start of `rest`: consumes it.
void SkipCallerId(std::string_view& rest) {
  if (rest.size() < 3 || rest.front() != '[') return;
  size_t close = rest.find(']');
  if (close == std::string_view::npos) return;
  std::string_view inside = rest.substr(1, close - 1);
  while (!inside.empty() && inside.front() == ' ') inside.remove_prefix(1);
  if (inside.size() < 2 || (inside.front() != 'T' && inside.front() != 'C')) return;
  if (!ParseDecimal(inside.substr(1))) return;
  rest.remove_prefix(close + 1);
}

/// "<PRIO>[   12.345678] message" (no '\n').
std::optional<Record> ParseSyslogLine(std::string_view line) {
  if (line.empty() || line.front() != '<') return std::nullopt;
  size_t close = line.find('>');
  if (close == std::string_view::npos) return std::nullopt;
  std::optional<uint64_t> prio = ParseDecimal(line.substr(1, close - 1));
  Record record;
  if (!prio || !SetPriority(*prio, record)) return std::nullopt;
  std::string_view rest = line.substr(close + 1);
  record.monotonic_us = TakeSyslogTimestamp(rest);
  SkipCallerId(rest);
  if (record.monotonic_us && !rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  record.message = std::string(rest);
  return record;
}

}  // namespace

std::string UnescapeKmsg(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    size_t slash = text.find('\\', i);
    if (slash == std::string_view::npos) {
      out.append(text.substr(i));
      break;
    }
    out.append(text.substr(i, slash - i));
    bool has_room = slash + 3 < text.size();
    std::optional<uint8_t> high = has_room && text[slash + 1] == 'x' ? HexDigit(text[slash + 2]) : std::nullopt;
    std::optional<uint8_t> low = high ? HexDigit(text[slash + 3]) : std::nullopt;
    if (!low) {
      out += '\\';
      i = slash + 1;
      continue;
    }
    out += static_cast<char>((*high << 4) | *low);
    i = slash + 4;
  }
  return out;
}

std::optional<Record> ParseKmsgRecord(std::string_view bytes) {
  std::string_view rest = bytes;
  std::optional<Record> record = ParseKmsgHeader(NextLine(rest));
  if (!record) return std::nullopt;
  while (!rest.empty()) {
    std::string_view line = NextLine(rest);
    if (!line.empty() && line.front() == ' ') ApplyContinuation(line, *record);
  }
  return record;
}

ParseStats ParseKmsgBuffer(std::string_view bytes, const RecordSink& sink) {
  ParseStats stats;
  // A plain Record and a flag rather than std::optional<Record>: g++ 12 warns falsely
  // (-Wmaybe-uninitialized) about the optional's strings here.
  Record pending;
  bool has_pending = false;
  bool skipping = false;  // continuation lines of a malformed record are not counted again
  auto flush = [&]() {
    if (!has_pending) return;
    ++stats.records;
    sink(std::move(pending));
    has_pending = false;
  };
  std::string_view rest = bytes;
  while (!rest.empty()) {
    std::string_view line = NextLine(rest);
    if (line.empty()) continue;
    if (line.front() == ' ') {
      if (has_pending) {
        ApplyContinuation(line, pending);
      } else if (!skipping) {
        ++stats.malformed;
        skipping = true;
      }
      continue;
    }
    flush();
    std::optional<Record> record = ParseKmsgHeader(line);
    has_pending = record.has_value();
    skipping = !has_pending;
    if (has_pending) {
      pending = std::move(*record);
    } else {
      ++stats.malformed;
    }
  }
  flush();
  return stats;
}

ParseStats ParseSyslogBuffer(std::string_view bytes, const RecordSink& sink) {
  ParseStats stats;
  std::string_view rest = bytes;
  while (!rest.empty()) {
    std::string_view line = NextLine(rest);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    std::optional<Record> record = ParseSyslogLine(line);
    if (!record) {
      ++stats.malformed;
      continue;
    }
    ++stats.records;
    sink(std::move(*record));
  }
  return stats;
}

ParseStats ParseAnyBuffer(std::string_view bytes, const RecordSink& sink) {
  size_t first = bytes.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && bytes[first] == '<') {
    return ParseSyslogBuffer(bytes, sink);
  }
  return ParseKmsgBuffer(bytes, sink);
}

}  // namespace gputriage::kmsg
