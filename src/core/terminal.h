// Text from a job or a machine made safe to print on a terminal.
#pragma once

#include <string>
#include <string_view>

namespace gputriage::core {

/// `text` as it may be written to a terminal: SanitizeUtf8 (invalid UTF-8, ESC, BEL, CR, DEL and
/// the other C0 controls but tab and newline become U+FFFD), and U+FFFD also for
///   - the C1 controls U+0080..U+009F (U+009B is CSI and U+009D is OSC on terminals that honour
///     8-bit controls: ECMA-48 section 5.3),
///   - the bidirectional embeddings, overrides and isolates U+202A..U+202E and U+2066..U+2069,
///     which reorder what follows on screen (CVE-2021-42574, "Trojan Source"),
///   - '\n' unless `keep_newlines` (one field of one line must not start a line of its own).
/// Printable text, tabs included, is kept byte for byte; applying it twice changes nothing more.
std::string SanitizeForTerminal(std::string_view text, bool keep_newlines = false);

}  // namespace gputriage::core
