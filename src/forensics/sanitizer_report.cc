#include "forensics/sanitizer_report.h"

#include <re2/re2.h>

#include <charconv>

#include "core/text.h"

namespace gputriage::forensics {
namespace {

// A decimal number of the report; nullopt when it does not fit (the text can hold anything).
std::optional<int64_t> Number(const std::string& digits) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

std::optional<std::vector<int64_t>> Triple(const std::string& a, const std::string& b, const std::string& c) {
  auto x = Number(a), y = Number(b), z = Number(c);
  if (!x || !y || !z) return std::nullopt;
  return std::vector<int64_t>{*x, *y, *z};
}

}  // namespace

SanitizerReport ParseSanitizerReport(std::string_view text) {
  // "Invalid __global__ write of size 4 bytes" (older tools: no "bytes").
  static const re2::RE2 kHead(R"(^((?:Invalid|Misaligned) \S+ (?:read|write|atomic)) of size (\d+)(?: bytes?)?\s*$)");
  // New: "at kernel(args)+0xb0" with an optional " in file.cu:42"; old: "at 0x60 in [file:line:]kernel(args)".
  static const re2::RE2 kAtNew(R"(^at (.+)\+(0x[0-9a-fA-F]+)(?: in (.+):(\d+))?\s*$)");
  static const re2::RE2 kAtOld(R"(^at (0x[0-9a-fA-F]+) in (?:(\S+):(\d+):)?(.+?)\s*$)");
  static const re2::RE2 kThread(R"(^by thread \((\d+),(\d+),(\d+)\) in block \((\d+),(\d+),(\d+)\))");
  static const re2::RE2 kAddress(R"(^(?:Address|Access (?:at|to)) (0x[0-9a-fA-F]+) (.+?)\s*$)");
  static const re2::RE2 kNearest(R"(^and is (.+?) the nearest allocation at (0x[0-9a-fA-F]+) of size (\d+) bytes)");
  static const re2::RE2 kHostFrame(R"(^Host Frame:\s*(.+?)\s*$)");
  static const re2::RE2 kSummary(R"(^ERROR SUMMARY: (\d+) errors?)");
  SanitizerReport report;
  core::SanitizerError* current = nullptr;
  for (std::string_view raw : core::SplitLines(text)) {
    size_t at = raw.find("=========");
    if (at == std::string_view::npos) continue;
    std::string_view line = core::Trim(raw.substr(at + 9));
    if (line.empty()) {
      current = nullptr;
      continue;
    }
    std::string a, b, c, d, e, f;
    if (re2::RE2::FullMatch(line, kHead, &a, &b)) {
      report.errors.push_back({});
      current = &report.errors.back();
      current->kind = a;
      current->access_bytes = Number(b);
      continue;
    }
    if (re2::RE2::PartialMatch(line, kSummary, &a)) {
      report.errors_reported = Number(a);
      current = nullptr;
      continue;
    }
    if (current == nullptr) continue;
    if (current->kernel.empty() && re2::RE2::FullMatch(line, kAtOld, &a, &b, &c, &d)) {
      current->pc_offset = a;
      current->kernel = d;
      if (!b.empty()) current->file = b, current->line = Number(c);
    } else if (current->kernel.empty() && re2::RE2::FullMatch(line, kAtNew, &a, &b, &c, &d)) {
      current->kernel = a;
      current->pc_offset = b;
      if (!c.empty()) current->file = c, current->line = Number(d);
    } else if (re2::RE2::PartialMatch(line, kThread, &a, &b, &c, &d, &e, &f)) {
      current->thread = Triple(a, b, c);
      current->block = Triple(d, e, f);
    } else if (re2::RE2::FullMatch(line, kAddress, &a, &b)) {
      current->address = a;
      current->problem = b;
    } else if (re2::RE2::PartialMatch(line, kNearest, &a, &b, &c)) {
      current->relation = a;
      current->nearest_allocation = b;
      current->nearest_allocation_bytes = Number(c);
    } else if (re2::RE2::FullMatch(line, kHostFrame, &a)) {
      current->host_frames.push_back(a);
    }
  }
  return report;
}

std::string KernelBaseName(std::string_view kernel) {
  std::string_view k = core::Trim(kernel);
  // The parameter list: the last top-level "(...)" (operator() and lambdas aside).
  size_t open = std::string_view::npos;
  int depth = 0;
  for (size_t i = k.size(); i-- > 0;) {
    if (k[i] == ')') ++depth;
    if (k[i] == '(' && --depth == 0) {
      open = i;
      break;
    }
  }
  if (open != std::string_view::npos) k = k.substr(0, open);
  // Template arguments at the end.
  if (!k.empty() && k.back() == '>') {
    depth = 0;
    for (size_t i = k.size(); i-- > 0;) {
      if (k[i] == '>') ++depth;
      if (k[i] == '<' && --depth == 0) {
        k = k.substr(0, i);
        break;
      }
    }
  }
  // The return type and namespaces before it.
  size_t cut = k.find_last_of(" :");
  if (cut != std::string_view::npos) k = k.substr(cut + 1);
  return std::string(k);
}

}  // namespace gputriage::forensics
