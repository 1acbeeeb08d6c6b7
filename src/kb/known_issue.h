// Known issues (kb/issues/<id>.yaml, docs/kb-schema.md): what a failure looks like (RE2 signals
// over named sources), when it applies (conditions on a snapshot), why it happens, how to fix
// it and who says so. Parsed from YAML text so tests and the fuzzer feed memory.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/category.h"
#include "core/result.h"

namespace gputriage::kb {

/// Where a signal's pattern is matched.
enum class Source { kStderr, kKmsg, kFrames, kSignal, kAny };

std::string_view SourceName(Source source);
std::optional<Source> ParseSource(std::string_view name);

struct Signal {
  Source source = Source::kAny;
  std::string pattern;  ///< RE2, matched per line (partial match)
  bool required = true;
  int line = 0;  ///< line of the pattern in the YAML file (for lint messages)
};

struct Condition {
  std::string component;              ///< "rocm", "cuda", "torch", ... (with `versions`)
  std::string versions;               ///< ">=6.0, <6.2"
  std::vector<std::string> gpu_arch;  ///< "gfx1100", "sm_90"
  std::string env;                    ///< an environment variable that must be set
  std::string env_value;              ///< RE2 its value must match (optional)
  int line = 0;
};

struct Fix {
  std::string kind;  ///< env | version | code | config | hardware | rebuild
  std::string action;
  std::string cost;
};

struct Reference {
  std::string url;
  std::string note;
};

struct KnownIssue {
  std::string id;
  std::string title;
  std::string vendor;  ///< amd | nvidia | any
  core::Category category = core::Category::kOther;
  core::Verdict verdict = core::Verdict::kUnknown;
  std::vector<Signal> signals;
  std::vector<Condition> conditions;
  std::string explanation;
  std::vector<Fix> fixes;
  std::vector<Reference> references;
  std::string file;  ///< "kb/issues/<id>.yaml"
};

/// A problem found while reading or linting an entry: the file, the line (0 when the file as
/// a whole), and what is wrong.
struct Problem {
  std::string file;
  int line = 0;
  std::string message;
  std::string Text() const;  ///< "kb/issues/x.yaml:12: pattern does not compile: ..."
};

/// Parses one entry. Structural problems (not YAML, missing or mistyped fields, unknown
/// category/verdict/source, an id that is not the file's name) fail with the file and line.
/// Patterns are not compiled here (Lint does that).
core::Result<KnownIssue> ParseKnownIssue(std::string_view yaml, std::string_view file);

}  // namespace gputriage::kb
