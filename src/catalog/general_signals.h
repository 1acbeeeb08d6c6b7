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
};

/// Parses the table. `xid` is the Xid catalog an entry's `xid: {class: hardware}` is resolved
/// against. Fails naming the file and line of an entry with an unknown category, a weight
/// outside 0..3, no pattern, or an `xid` that names no code.
core::Result<std::vector<GeneralSignal>> ParseGeneralSignals(std::string_view yaml, std::string_view source,
                                                             const XidTable& xid);

}  // namespace gputriage::catalog
