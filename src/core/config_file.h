// The syntax of gputriage's config file (TOML, the subset CLI11 reads: `[section]` headers,
// `key = value` lines, comments, arrays that may span lines), checked line by line before CLI11
// reads it, so that a mistake is reported with the file and line it is on.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace gputriage::core {

/// Checks `text` (the contents of the config file `name`): every line is blank, a comment, a
/// `[section]` or `[section.sub]` header, or `key = value`, where a value that opens an array
/// (`[`) or a triple-quoted string may continue on later lines. The error names the file, the
/// line number and what is wrong ("config file F, line 3: `[run` is not a section header: no
/// closing ]"). NUL bytes and invalid UTF-8 are errors too.
Result<void> CheckConfigSyntax(std::string_view text, std::string_view name);

}  // namespace gputriage::core
