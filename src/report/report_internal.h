// Private to src/report: what the report's renderers share — the one way text from the job or
// the machine becomes text the report may show, and the Markdown in parts.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/model.h"

namespace gputriage::report {

/// Text from the job or the machine as the report may show it: secrets redacted in the raw bytes
/// first (sanitising first would turn a '\r' inside a token into U+FFFD and split it), then
/// control bytes and invalid UTF-8 replaced (nothing reaches a terminal or a paste as escapes).
std::string Safe(std::string_view text);

/// `text` cut to at most `max` bytes, not inside a UTF-8 sequence.
std::string Cut(std::string text, size_t max);

/// A report member as text: a string as it is, null as "-", anything else as JSON.
std::string JsonText(const core::Json& value);

/// RenderMarkdown is MarkdownHead + MarkdownBody + a footer naming the source (HTML's footer is
/// its own: the Markdown's is raw HTML). The head: the title and the category line.
std::string MarkdownHead(const core::Json& report);

/// The sections, Environment to Next steps.
std::string MarkdownBody(const core::Json& report);

// The SVG charts' shared arithmetic (timeline.cc, telemetry_chart.cc): an axis step of 1, 2 or 5
// times a power of ten, about span/6 (1 for an empty span), and a coordinate as the SVG gets it.
double NiceStep(double span);
std::string SvgNumber(double v);

}  // namespace gputriage::report
