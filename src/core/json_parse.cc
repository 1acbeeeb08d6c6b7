#include "core/json_parse.h"

#include <algorithm>
#include <string>
#include <utility>

namespace gputriage::core {
namespace {

// 1-based line and column of the 0-based offset `byte`.
std::pair<size_t, size_t> LineColumn(std::string_view text, size_t byte) {
  size_t end = std::min(byte, text.size());
  size_t line = 1;
  size_t column = 1;
  for (size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

// nlohmann's message without its "[json.exception.parse_error.101] parse error at line 1,
// column 2: " preamble, which is replaced by our own position.
std::string ParseReason(std::string_view what) {
  size_t at = what.find("parse error");
  if (at != std::string_view::npos) {
    size_t colon = what.find(": ", at);
    if (colon != std::string_view::npos) return std::string(what.substr(colon + 2));
  }
  size_t bracket = what.find("] ");
  if (bracket != std::string_view::npos) return std::string(what.substr(bracket + 2));
  return std::string(what);
}

}  // namespace

std::optional<size_t> FindJsonDepthExcess(std::string_view text, size_t max_depth) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is, does not end the string
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > max_depth) return i;
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return std::nullopt;
}

Result<Json> ParseJson(std::string_view text, std::string_view source, size_t max_depth) {
  if (std::optional<size_t> at = FindJsonDepthExcess(text, max_depth)) {
    auto [line, column] = LineColumn(text, *at);
    return MakeErrorCode(ErrorCode::kInvalidArgument,
                         "{}: JSON nested deeper than {} levels at line {}, column {} (byte {}); not a file gputriage "
                         "writes",
                         source, max_depth, line, column, *at + 1);
  }
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    // nlohmann's byte is 1-based, as the message says it; the line and column are of that byte.
    auto [line, column] = LineColumn(text, e.byte > 0 ? e.byte - 1 : 0);
    return MakeErrorCode(ErrorCode::kInvalidArgument, "{}: invalid JSON at line {}, column {} (byte {}): {}", source,
                         line, column, e.byte, ParseReason(e.what()));
  } catch (const Json::exception& e) {
    return MakeErrorCode(ErrorCode::kInvalidArgument, "{}: invalid JSON: {}", source, ParseReason(e.what()));
  }
}

}  // namespace gputriage::core
