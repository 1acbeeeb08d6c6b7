// Private to src/report: the report's Markdown as HTML, through md4c, made safe to open.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gputriage::report {

/// `markdown` as HTML body content. md4c parses it as CommonMark with raw HTML off
/// (MD_FLAG_NOHTML: "<script>" in the text is shown as text), task lists ("- [x]") and bare
/// http(s) URLs as links. Then, on md4c's output:
///   - a link keeps its target only when it is http:, https: or mailto: (any case, entities
///     decoded as a browser would); otherwise the link becomes its text ("javascript:" and
///     "data:" links are inert);
///   - an image becomes "[image: ALT]": nothing is loaded;
///   - a fenced block's info string (code's class) is dropped;
///   - every tag and attribute must be one md4c writes for CommonMark (p, h1-h6, ul, ol, li,
///     pre, code, em, strong, a, ...; href, title, class of li and input, start, align, type,
///     disabled, checked) with a plain value: nothing else, no event handler, no style;
///   - elements nest: a closing tag md4c writes for an element it did not open is dropped, and
///     what it leaves open is closed (md4c 0.4.8 does both around bare URLs in emphasis).
/// nullopt when md4c fails or its output holds anything else; the caller then shows the
/// Markdown as escaped text.
std::optional<std::string> MarkdownToSafeHtml(std::string_view markdown);

}  // namespace gputriage::report
