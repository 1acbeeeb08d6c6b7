// Problem lists of the AMD text parsers: the first few malformed lines quoted (bounded, valid
// UTF-8), the rest counted, so a damaged file yields a short, de-duplicated note.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <vector>

#include "core/text.h"

namespace gputriage::amd {

inline constexpr size_t kMaxQuotedProblems = 3;
inline constexpr size_t kMaxQuoteBytes = 40;

/// `text` cut to kMaxQuoteBytes, made valid UTF-8 and quoted ("..." marks a cut).
inline std::string QuoteProblemText(std::string_view text) {
  std::string_view cut = text.substr(0, kMaxQuoteBytes);
  return fmt::format("\"{}{}\"", core::SanitizeUtf8(cut), text.size() > cut.size() ? "..." : "");
}

/// Collects "line N: why: "text"" entries into `out`; after kMaxQuotedProblems only counts.
class ProblemList {
 public:
  explicit ProblemList(std::vector<std::string>& out) : out_(out) {}
  void Add(size_t line_number, std::string_view why, std::string_view text) {
    if (quoted_ < kMaxQuotedProblems) {
      out_.push_back(fmt::format("line {}: {}: {}", line_number, why, QuoteProblemText(text)));
      ++quoted_;
    } else {
      ++unquoted_;
    }
  }
  /// Appends "N more malformed line(s)" when lines were only counted.
  void Finish() {
    if (unquoted_ > 0) {
      out_.push_back(fmt::format("{} more malformed line{}", unquoted_, unquoted_ == 1 ? "" : "s"));
    }
  }

 private:
  std::vector<std::string>& out_;
  size_t quoted_ = 0;
  size_t unquoted_ = 0;
};

/// Problems joined with "; ", for one note that lists several.
inline std::string JoinProblems(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& part : parts) {
    if (!out.empty()) out += "; ";
    out += part;
  }
  return out;
}

}  // namespace gputriage::amd
