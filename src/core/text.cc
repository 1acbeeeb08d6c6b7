#include "core/text.h"

#include <cerrno>
#include <charconv>
#include <cstdlib>

namespace gputriage::core {

namespace {
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == '\0'; }
}  // namespace

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

std::vector<std::string_view> SplitLines(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t pos = s.find('\n', start);
    std::string_view line = pos == std::string_view::npos ? s.substr(start) : s.substr(start, pos - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::vector<std::string_view> SplitWhitespace(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && IsSpace(s[i])) ++i;
    size_t start = i;
    while (i < s.size() && !IsSpace(s[i])) ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

bool StartsWith(std::string_view s, std::string_view prefix) { return s.starts_with(prefix); }
bool EndsWith(std::string_view s, std::string_view suffix) { return s.ends_with(suffix); }

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::optional<uint64_t> ParseU64(std::string_view s, int base) {
  s = Trim(s);
  if (s.empty()) return std::nullopt;
  if (base == 0) {
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
      s.remove_prefix(2);
      base = 16;
    } else {
      base = 10;
    }
  } else if (base == 16 && s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
  }
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value, base);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

std::optional<int64_t> ParseI64(std::string_view s) {
  s = Trim(s);
  if (s.empty()) return std::nullopt;
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value, 10);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

std::optional<double> ParseDouble(std::string_view s) {
  s = Trim(s);
  if (s.empty()) return std::nullopt;
  double value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

std::string SanitizeUtf8(std::string_view s) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c < 0x20 && c != '\t' && c != '\n') {
        out += kReplacement;
      } else if (c == 0x7f) {
        out += kReplacement;
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    size_t len = (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
    bool valid = len != 0 && i + len <= s.size();
    for (size_t k = 1; valid && k < len; ++k) {
      valid = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    }
    if (valid && len == 3) {
      auto c1 = static_cast<unsigned char>(s[i + 1]);
      if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0)) valid = false;
    }
    if (valid && len == 4) {
      auto c1 = static_cast<unsigned char>(s[i + 1]);
      if ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 >= 0x90)) valid = false;
    }
    if (!valid) {
      out += kReplacement;
      ++i;
      continue;
    }
    out.append(s.substr(i, len));
    i += len;
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> ParseKeyValueLines(std::string_view text, char sep) {
  std::vector<std::pair<std::string, std::string>> out;
  for (std::string_view line : SplitLines(text)) {
    size_t pos = line.find(sep);
    if (pos == std::string_view::npos) continue;
    std::string_view key = Trim(line.substr(0, pos));
    if (key.empty()) continue;
    out.emplace_back(std::string(key), std::string(Trim(line.substr(pos + 1))));
  }
  return out;
}

std::optional<double> ParseDurationSeconds(std::string_view s) {
  s = Trim(s);
  size_t unit_at = s.find_first_not_of("0123456789.");
  std::string_view number = s.substr(0, unit_at);
  std::string_view unit = unit_at == std::string_view::npos ? std::string_view{} : s.substr(unit_at);
  auto value = ParseDouble(number);
  if (!value || *value < 0) return std::nullopt;
  double scale = 0;
  if (unit.empty() || unit == "s") {
    scale = 1;
  } else if (unit == "ms") {
    scale = 0.001;
  } else if (unit == "m" || unit == "min") {
    scale = 60;
  } else if (unit == "h") {
    scale = 3600;
  } else {
    return std::nullopt;
  }
  double seconds = *value * scale;
  if (seconds > 366.0 * 24 * 3600) return std::nullopt;
  return seconds;
}

std::optional<uint64_t> ParseByteSize(std::string_view s) {
  s = Trim(s);
  size_t unit_at = s.find_first_not_of("0123456789");
  std::string_view number = s.substr(0, unit_at);
  std::string unit = ToLower(unit_at == std::string_view::npos ? std::string_view{} : s.substr(unit_at));
  auto value = ParseU64(number, 10);
  if (!value) return std::nullopt;
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();  // "MB", "MiB" -> "m", "mi"
  if (!unit.empty() && unit.back() == 'i') unit.pop_back();
  int shift = 0;
  if (unit.empty()) {
    shift = 0;
  } else if (unit == "k") {
    shift = 10;
  } else if (unit == "m") {
    shift = 20;
  } else if (unit == "g") {
    shift = 30;
  } else if (unit == "t") {
    shift = 40;
  } else {
    return std::nullopt;
  }
  if (shift && (*value >> (64 - shift)) != 0) return std::nullopt;
  return *value << shift;
}

std::string StripAnsi(std::string_view line) {
  if (line.find('\x1b') == std::string_view::npos) return std::string(line);
  std::string out;
  out.reserve(line.size());
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] != '\x1b') {
      out.push_back(line[i]);
      continue;
    }
    if (i + 1 < line.size() && line[i + 1] == '[') {
      // CSI: ESC [ parameters intermediates final (0x40-0x7e)
      size_t j = i + 2;
      while (j < line.size() && !(line[j] >= 0x40 && line[j] <= 0x7e)) ++j;
      i = j;
    } else if (i + 1 < line.size() && line[i + 1] == ']') {
      // OSC: up to BEL or ESC backslash
      size_t j = i + 2;
      while (j < line.size() && line[j] != '\a' && !(line[j] == '\x1b' && j + 1 < line.size() && line[j + 1] == '\\'))
        ++j;
      i = j < line.size() && line[j] == '\x1b' ? j + 1 : j;
    } else {
      ++i;  // a two-byte escape
    }
  }
  return out;
}

namespace {

// The next dotted-number component of `v` (advancing it), 0 when none is left.
uint64_t NextComponent(std::string_view& v) {
  uint64_t value = 0;
  size_t i = 0;
  while (i < v.size() && v[i] >= '0' && v[i] <= '9') {
    if (value < (uint64_t{1} << 60)) value = value * 10 + static_cast<uint64_t>(v[i] - '0');
    ++i;
  }
  v.remove_prefix(i);
  size_t dot = v.find('.');
  v.remove_prefix(dot == std::string_view::npos ? v.size() : dot + 1);
  return value;
}

}  // namespace

int CompareDottedVersions(std::string_view a, std::string_view b) {
  while (!a.empty() || !b.empty()) {
    uint64_t x = NextComponent(a);
    uint64_t y = NextComponent(b);
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

}  // namespace gputriage::core
