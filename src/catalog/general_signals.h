// kb/tables/general-signals.yaml: what a log line says about the failure category when no known
// issue decides it (the analyzer's general classifier).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/examples.h"
#include "catalog/xid.h"
#include "core/category.h"
#include "core/result.h"

namespace gputriage::catalog {

struct GeneralSignal {
  /// nullopt for weight 0: no category, the line only reads like an error.
  std::optional<core::Category> category;
  int weight = 0;  ///< 3 the runtime's own name for the failure, 2 a strong phrase, 1 a hint
  /// The pattern as written in the table (without the Xid part), for lint messages.
  std::string written_pattern;
  /// What is matched: the written pattern, extended by the NVIDIA Xid lines of `xid` codes.
  std::string pattern;
  std::vector<int> xid_codes;  ///< the Xid codes the pattern was extended with
  std::string about;
  std::vector<ExampleLine> examples;
  int line = 0;  ///< in the YAML file
  /// Vocabulary rows (kb/tables/vocab-*.yaml) only: where such a failure usually lies (nullopt
  /// for general-signals.yaml's rows and for rows whose verdict is "unknown"), who prints the
  /// text, the symbolic name, the file the row is in and its source (key: text).
  std::optional<core::Verdict> verdict;
  std::string component;
  std::string name;
  std::string file;
  std::string source;
};

/// Parses the table. `xid` is the Xid catalog an entry's `xid: {class: hardware}` is resolved
/// against. Fails naming the file and line of an entry with an unknown category, a weight
/// outside 0..3, no pattern, or an `xid` that names no code.
core::Result<std::vector<GeneralSignal>> ParseGeneralSignals(std::string_view yaml, std::string_view source,
                                                             const XidTable& xid);

/// Parses a vocabulary table (schema gputriage.vocabulary/1, kb/tables/vocab-*.yaml): the GPU
/// stack's own status names, error strings and log messages, read from the components' sources.
/// Each row becomes a signal: `text` (a literal, matched as such) or `pattern` (RE2), with its
/// category, weight (1-3), verdict, component and source. Fails naming the file and line of a
/// row with an unknown key, both or neither of text/pattern, a category, verdict or weight out of
/// range, a source key not in `sources`, a text under 8 characters that is not a symbolic name, or
/// a pattern RE2 rejects.
core::Result<std::vector<GeneralSignal>> ParseVocabulary(std::string_view yaml, std::string_view source);

}  // namespace gputriage::catalog
