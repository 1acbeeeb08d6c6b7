#include "core/config_file.h"

#include <fmt/format.h>

#include <optional>

#include "core/terminal.h"
#include "core/text.h"

namespace gputriage::core {
namespace {

// A line as shown in a message: at most 60 bytes, control bytes escaped.
std::string Shown(std::string_view line) {
  std::string shown = SanitizeForTerminal(line.substr(0, 60), /*keep_newlines=*/false);
  if (line.size() > 60) shown += "...";
  return shown;
}

bool IsKeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

// A bare or quoted key, or dotted keys of them.
bool IsKey(std::string_view key) {
  if (key.empty()) return false;
  if ((key.front() == '"' || key.front() == '\'') && key.size() >= 2 && key.back() == key.front()) return true;
  for (char c : key) {
    if (!IsKeyChar(c)) return false;
  }
  return true;
}

// The net count of '[' over ']' in a value, outside quoted strings (negative when it closes more
// than it opens); nullopt when a quote is not closed.
std::optional<int> OpenBrackets(std::string_view value) {
  int depth = 0;
  char quote = 0;
  for (size_t i = 0; i < value.size(); ++i) {
    char c = value[i];
    if (quote != 0) {
      if (c == '\\' && quote == '"') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
      continue;
    }
    if (c == '#') break;
    if (c == '"' || c == '\'') quote = c;
    if (c == '[') ++depth;
    if (c == ']') --depth;
  }
  if (quote != 0) return std::nullopt;
  return depth;
}

}  // namespace

Result<void> CheckConfigSyntax(std::string_view text, std::string_view name) {
  if (text.find('\0') != std::string_view::npos) {
    return MakeErrorCode(ErrorCode::kInvalidArgument, "config file {}: holds NUL bytes (not a TOML text file)", name);
  }
  // TOML is UTF-8 text: no control bytes but tab and line ends (CRLF allowed).
  std::string unix_text(text);
  for (size_t at = unix_text.find("\r\n"); at != std::string::npos; at = unix_text.find("\r\n", at)) {
    unix_text.erase(at, 1);
  }
  if (SanitizeUtf8(unix_text) != unix_text) {
    return MakeErrorCode(ErrorCode::kInvalidArgument,
                         "config file {}: not UTF-8 text (invalid UTF-8 or control bytes, which TOML does not allow)",
                         name);
  }
  int open_array = 0;       // brackets an array value left open, carried to later lines
  std::string_view triple;  // the triple quote a multi-line string waits for
  size_t value_line = 0;    // where the open value began
  size_t number = 0;
  for (std::string_view raw : Split(text, '\n')) {
    ++number;
    std::string_view line = Trim(raw);
    if (!triple.empty()) {
      if (line.find(triple) != std::string_view::npos) triple = {};
      continue;
    }
    if (open_array > 0) {
      std::optional<int> depth = OpenBrackets(line);
      if (!depth) {
        return MakeErrorCode(ErrorCode::kInvalidArgument, "config file {}, line {}: a string is not closed: {}", name,
                             number, Shown(line));
      }
      open_array += *depth;
      continue;
    }
    if (line.empty() || line.front() == '#') continue;
    if (line.front() == '[') {
      size_t close = line.find(']');
      std::string_view rest = close == std::string_view::npos ? std::string_view() : Trim(line.substr(close + 1));
      while (!rest.empty() && rest.front() == ']') rest = Trim(rest.substr(1));  // [[array.of.tables]]
      std::string_view section = close == std::string_view::npos ? std::string_view() : Trim(line.substr(1, close - 1));
      if (!section.empty() && section.front() == '[') section = Trim(section.substr(1));
      if (close == std::string_view::npos || !IsKey(section) || (!rest.empty() && rest.front() != '#')) {
        return MakeErrorCode(ErrorCode::kInvalidArgument,
                             "config file {}, line {}: `{}` is not a section header (expected [command])", name, number,
                             Shown(line));
      }
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      return MakeErrorCode(ErrorCode::kInvalidArgument,
                           "config file {}, line {}: `{}` is neither `key = value`, a [section] nor a # comment", name,
                           number, Shown(line));
    }
    std::string_view key = Trim(line.substr(0, eq));
    std::string_view value = Trim(line.substr(eq + 1));
    if (!IsKey(key)) {
      return MakeErrorCode(ErrorCode::kInvalidArgument, "config file {}, line {}: `{}` is not a key", name, number,
                           Shown(key));
    }
    if (value.empty()) {
      return MakeErrorCode(ErrorCode::kInvalidArgument, "config file {}, line {}: `{}` has no value", name, number,
                           Shown(key));
    }
    for (std::string_view quote : {std::string_view("\"\"\""), std::string_view("'''")}) {
      if (value.starts_with(quote) && value.find(quote, 3) == std::string_view::npos) {
        triple = quote;
        value_line = number;
      }
    }
    if (!triple.empty()) continue;
    std::optional<int> depth = OpenBrackets(value);
    if (!depth) {
      return MakeErrorCode(ErrorCode::kInvalidArgument, "config file {}, line {}: a string is not closed: {}", name,
                           number, Shown(line));
    }
    if (*depth > 0) {
      open_array = *depth;
      value_line = number;
    }
  }
  if (!triple.empty() || open_array > 0) {
    return MakeErrorCode(ErrorCode::kInvalidArgument, "config file {}, line {}: the value begun here is never closed",
                         name, value_line);
  }
  return {};
}

}  // namespace gputriage::core
