#include "collect/nvidia/procfs.h"

#include <fmt/format.h>

#include <array>
#include <cctype>

#include "core/text.h"

namespace gputriage::nvidia {

namespace {

using core::Trim;

// At most this many offending lines are quoted in a problem; the rest are counted.
constexpr size_t kMaxQuotedLines = 3;
// Quoted text is cut to this many bytes so a garbage line cannot flood a note.
constexpr size_t kMaxQuoteBytes = 40;

bool IsVersionLike(std::string_view token) {
  if (token.empty() || !std::isdigit(static_cast<unsigned char>(token.front())) ||
      !std::isdigit(static_cast<unsigned char>(token.back()))) {
    return false;
  }
  bool dot = false;
  for (char c : token) {
    if (c == '.') {
      dot = true;
    } else if (!std::isdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return dot;
}

std::string Quote(std::string_view line) {
  std::string_view cut = line.substr(0, kMaxQuoteBytes);
  return fmt::format("\"{}{}\"", core::SanitizeUtf8(cut), line.size() > cut.size() ? "..." : "");
}

// Bytes that never occur in the driver's text files: control bytes other than tab/CR/LF.
size_t CountControlBytes(std::string_view text) {
  size_t count = 0;
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) ++count;
  }
  return count;
}

// Control bytes and invalid UTF-8 become one problem, so a binary file yields one message.
void NoteNonText(std::string_view text, std::vector<std::string>& problems) {
  size_t control = CountControlBytes(text);
  std::string without_control;
  without_control.reserve(text.size());
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (!((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)) without_control += ch;
  }
  bool invalid_utf8 = core::SanitizeUtf8(without_control) != without_control;
  if (control > 0) {
    problems.push_back(fmt::format("{} control or NUL byte{} in {} bytes (not a text file?)", control,
                                   control == 1 ? "" : "s", text.size()));
  }
  if (invalid_utf8) problems.push_back("invalid UTF-8 (replaced with U+FFFD)");
}

std::optional<std::string> NonEmpty(std::string_view value) {
  if (value.empty()) return std::nullopt;
  return std::string(value);
}

// The driver prints these when it could not read the value from the GPU.
bool IsPlaceholder(std::string_view value) {
  return value.empty() || value == "Unknown" || value.find('?') != std::string_view::npos;
}

std::optional<uint64_t> LeadingNumber(std::string_view value) {
  auto tokens = core::SplitWhitespace(value);
  if (tokens.empty()) return std::nullopt;
  return core::ParseU64(tokens.front(), 0);
}

void ParseNvrmLine(std::string_view rest, DriverVersionInfo& info) {
  std::vector<std::string_view> tokens = core::SplitWhitespace(rest);
  size_t module = tokens.size();
  for (size_t i = 1; i < tokens.size(); ++i) {
    if (tokens[i - 1] == "Kernel" && tokens[i] == "Module") {
      module = i;
      break;
    }
  }
  size_t scan_from = 0;
  if (module < tokens.size()) {
    std::string_view before = module >= 2 ? tokens[module - 2] : std::string_view();
    info.kernel_module = before == "Open" ? "open" : "proprietary";
    scan_from = module + 1;
    if (scan_from + 1 < tokens.size() && tokens[scan_from] == "for") {
      // Open module: "... Open Kernel Module for x86_64  580.159.04 ...".
      info.arch = std::string(tokens[scan_from + 1]);
      scan_from += 2;
    } else if (!before.empty() && before != "Open" && before != "UNIX") {
      // Proprietary module: "NVIDIA UNIX x86_64 Kernel Module  384.130 ...".
      info.arch = std::string(before);
    }
  } else {
    info.problems.push_back("no 'Kernel Module' in the NVRM version line");
  }
  for (size_t i = scan_from; i < tokens.size(); ++i) {
    if (IsVersionLike(tokens[i])) {
      info.driver_version = std::string(tokens[i]);
      return;
    }
  }
  info.problems.push_back("no driver version number in the NVRM version line");
}

}  // namespace

DriverVersionInfo ParseVersionFile(std::string_view text) {
  DriverVersionInfo info;
  NoteNonText(text, info.problems);
  static constexpr std::string_view kNvrm = "NVRM version:";
  static constexpr std::string_view kGcc = "GCC version:";
  bool found = false;
  for (std::string_view raw : core::SplitLines(text)) {
    std::string_view line = Trim(raw);
    if (!found && line.starts_with(kNvrm)) {
      found = true;
      info.version_line = core::SanitizeUtf8(line);
      ParseNvrmLine(core::SanitizeUtf8(line.substr(kNvrm.size())), info);
    } else if (!info.gcc_version && line.starts_with(kGcc)) {
      info.gcc_version = NonEmpty(core::SanitizeUtf8(Trim(line.substr(kGcc.size()))));
    }
  }
  if (!found) {
    info.problems.push_back(text.empty() ? std::string("empty file") : std::string("no 'NVRM version:' line"));
  }
  return info;
}

GpuInformation ParseInformationFile(std::string_view text) {
  GpuInformation info;
  if (text.empty()) {
    info.problems.push_back("empty file");
    return info;
  }
  NoteNonText(text, info.problems);

  std::vector<std::string> bad_lines;
  size_t bad_count = 0;
  size_t number = 0;
  for (std::string_view raw : core::SplitLines(text)) {
    ++number;
    std::string_view line = Trim(raw);
    if (line.empty()) continue;
    size_t colon = line.find(':');
    std::string_view key = colon == std::string_view::npos ? "" : Trim(line.substr(0, colon));
    if (key.empty()) {
      if (++bad_count <= kMaxQuotedLines) {
        bad_lines.push_back(fmt::format("line {} {}", number, Quote(line)));
      }
      continue;
    }
    info.fields.emplace_back(core::SanitizeUtf8(key), core::SanitizeUtf8(Trim(line.substr(colon + 1))));
  }
  if (bad_count > 0) {
    std::string list = bad_lines.front();
    for (size_t i = 1; i < bad_lines.size(); ++i) list += ", " + bad_lines[i];
    if (bad_count > bad_lines.size()) {
      list += fmt::format(" and {} more", bad_count - bad_lines.size());
    }
    info.problems.push_back(fmt::format("not 'Key: value': {}", list));
  }

  for (const auto& [key, value] : info.fields) {
    if (key == "Model") {
      if (!IsPlaceholder(value)) info.model = value;
    } else if (key == "GPU UUID") {
      if (!IsPlaceholder(value)) info.uuid = value;
    } else if (key == "Video BIOS") {
      if (!IsPlaceholder(value)) info.video_bios = value;
    } else if (key == "Bus Type") {
      info.bus_type = NonEmpty(value);
    } else if (key == "Bus Location") {
      info.bus_location = NonEmpty(value);
    } else if (key == "GPU Firmware") {
      if (!IsPlaceholder(value)) info.gpu_firmware = value;
    } else if (key == "IRQ") {
      info.irq = core::ParseU64(value, 10);
    } else if (key == "DMA Size") {
      info.dma_size_bits = LeadingNumber(value);
    } else if (key == "DMA Mask") {
      info.dma_mask = core::ParseU64(value, 0);
    } else if (key == "Device Minor") {
      info.device_minor = core::ParseU64(value, 10);
    } else if (key == "GPU Excluded" || key == "Blacklisted") {
      if (value == "Yes") info.excluded = true;
      if (value == "No") info.excluded = false;
    }
  }

  // Keys every driver generation prints; a file without them was cut short or is not one.
  static constexpr std::array<std::string_view, 4> kExpected = {"Model", "IRQ", "Bus Type", "Bus Location"};
  std::string missing;
  for (std::string_view expected : kExpected) {
    bool present = false;
    for (const auto& field : info.fields) present = present || field.first == expected;
    if (!present) missing += (missing.empty() ? "" : ", ") + std::string(expected);
  }
  if (info.fields.empty()) {
    info.problems.push_back("no 'Key: value' lines");
  } else if (!missing.empty()) {
    info.problems.push_back(fmt::format("missing {} (truncated?)", missing));
  }
  if (text.back() != '\n') info.problems.push_back("does not end with a newline (truncated?)");
  return info;
}

std::optional<std::string> NormalizePciBusId(std::string_view text) {
  std::vector<std::string_view> parts = core::Split(Trim(text), ':');
  if (parts.size() != 3) return std::nullopt;
  size_t dot = parts[2].find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  auto hex = [](std::string_view s, size_t max_digits) -> std::optional<uint64_t> {
    if (s.empty() || s.size() > max_digits) return std::nullopt;
    for (char c : s) {
      if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
    }
    return core::ParseU64(s, 16);
  };
  auto domain = hex(parts[0], 8);
  auto bus = hex(parts[1], 2);
  auto device = hex(parts[2].substr(0, dot), 2);
  auto function = hex(parts[2].substr(dot + 1), 1);
  if (!domain || !bus || !device || !function || *device > 0x1f || *function > 7) {
    return std::nullopt;
  }
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", *domain, *bus, *device, *function);
}

}  // namespace gputriage::nvidia
