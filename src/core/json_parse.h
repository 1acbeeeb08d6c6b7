// The one entry point for JSON that comes from outside this process: snapshot files and
// standard input, the history database, a crash bundle's process.json, manifest.json,
// snapshot.json and repeat.json. Nesting is limited before anything is built, so a document
// nested 100,000 levels deep is refused with a message instead of exhausting the stack of the
// recursive code that later walks, copies, prints or destroys the value.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "core/model.h"
#include "core/result.h"

namespace gputriage::core {

/// Deeper than anything gputriage writes (a snapshot nests about 8 levels, vendor dumps a few
/// more) and far from what recursion over a Json value can survive on a default stack.
inline constexpr size_t kMaxJsonDepth = 256;

/// The byte offset of the first '[' or '{' (outside strings) that opens level `max_depth` + 1,
/// or nullopt when the text never nests that deep. For valid JSON the count is exact; for
/// invalid JSON it is what a parser would have reached before failing. Linear, no allocation.
std::optional<size_t> FindJsonDepthExcess(std::string_view text, size_t max_depth);

/// Parses `text` as JSON; `source` (a file name, "standard input", "DIR/process.json") starts
/// every message. Fails with kInvalidArgument for text nested deeper than `max_depth` ("SOURCE:
/// JSON nested deeper than 256 levels at line 1, column 257 (byte 257); not a file gputriage
/// writes") and for invalid JSON ("SOURCE: invalid JSON at line 3, column 7 (byte 41): syntax
/// error while parsing value - invalid literal; last read: '"a": tru,'"). Never throws.
Result<Json> ParseJson(std::string_view text, std::string_view source, size_t max_depth = kMaxJsonDepth);

}  // namespace gputriage::core
