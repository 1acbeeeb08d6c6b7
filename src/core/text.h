// Small string helpers shared by every parser. All take views and never throw.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gputriage::core {

/// `s` without leading/trailing ASCII whitespace (space, tab, CR, LF, VT, FF) and NULs.
std::string_view Trim(std::string_view s);

/// Splits on `sep`; keeps empty fields.
std::vector<std::string_view> Split(std::string_view s, char sep);

/// Splits into lines on '\n' (a trailing '\r' is dropped); no empty last line for a final '\n'.
std::vector<std::string_view> SplitLines(std::string_view s);

/// Splits on runs of ASCII whitespace; no empty fields.
std::vector<std::string_view> SplitWhitespace(std::string_view s);

bool StartsWith(std::string_view s, std::string_view prefix);
bool EndsWith(std::string_view s, std::string_view suffix);
std::string ToLower(std::string_view s);

/// Parses a whole (trimmed) string as a number in `base` (0 = auto: 0x prefix hex, else
/// decimal). nullopt on empty input, trailing garbage, or overflow.
std::optional<uint64_t> ParseU64(std::string_view s, int base = 0);
std::optional<int64_t> ParseI64(std::string_view s);
std::optional<double> ParseDouble(std::string_view s);

/// A duration as people write it: "90" (seconds), "1.5s", "500ms", "10m", "2h". nullopt for
/// anything else, negatives, or more than a year.
std::optional<double> ParseDurationSeconds(std::string_view s);

/// A size as people write it: "4096", "512K", "64M", "4G", "1T" (binary multiples; "KiB",
/// "MB" etc. accepted with the same meaning). nullopt for anything else or on overflow.
std::optional<uint64_t> ParseByteSize(std::string_view s);

/// Replaces bytes that are not printable UTF-8/ASCII text (control bytes other than tab,
/// invalid UTF-8 sequences) with U+FFFD so the result is always valid JSON text.
std::string SanitizeUtf8(std::string_view s);

/// `key = value` or `key: value` lines into pairs (first separator wins); lines without the
/// separator are skipped.
std::vector<std::pair<std::string, std::string>> ParseKeyValueLines(std::string_view text, char sep);

/// `line` without ANSI escape sequences (colours, cursor moves, terminal titles).
std::string StripAnsi(std::string_view line);

/// -1, 0 or 1 as dotted version `a` is below, equal to or above `b` ("3.4.9" < "3.4.30",
/// "12.9" < "12.10"); a missing component counts as 0 ("13" == "13.0.0"); non-digit text after a
/// component is ignored ("2.11.0+cu130" is 2.11.0).
int CompareDottedVersions(std::string_view a, std::string_view b);

}  // namespace gputriage::core
