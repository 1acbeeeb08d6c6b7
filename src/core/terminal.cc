#include "core/terminal.h"

#include "core/text.h"

namespace gputriage::core {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// The length of the control character starting at s[i] that a terminal could act on (C1, bidi
// controls), 0 for anything else. `s` is valid UTF-8.
size_t ControlLength(std::string_view s, size_t i) {
  auto at = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  if (at(0) == 0xC2 && at(1) >= 0x80 && at(1) <= 0x9F) return 2;                   // U+0080..U+009F
  if (at(0) == 0xE2 && at(1) == 0x80 && at(2) >= 0xAA && at(2) <= 0xAE) return 3;  // U+202A..U+202E
  if (at(0) == 0xE2 && at(1) == 0x81 && at(2) >= 0xA6 && at(2) <= 0xA9) return 3;  // U+2066..U+2069
  return 0;
}

}  // namespace

std::string SanitizeForTerminal(std::string_view text, bool keep_newlines) {
  const std::string valid = SanitizeUtf8(text);
  std::string out;
  out.reserve(valid.size());
  for (size_t i = 0; i < valid.size();) {
    if (valid[i] == '\n' && !keep_newlines) {
      out += kReplacement;
      ++i;
    } else if (size_t n = ControlLength(valid, i); n > 0) {
      out += kReplacement;
      i += n;
    } else {
      out += valid[i++];
    }
  }
  return out;
}

}  // namespace gputriage::core
