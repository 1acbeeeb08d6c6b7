// kb/tables/kernel-log-rules.yaml: what doctor says about GPU-related kernel-log records other
// than NVIDIA Xid lines.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "catalog/examples.h"
#include "core/model.h"
#include "core/result.h"

namespace gputriage::catalog {

struct KernelLogRule {
  std::string id;                    ///< the finding's id ("kmsg.amdgpu_ring_timeout")
  std::vector<std::string> classes;  ///< record classes it applies to ("amdgpu", "ras", ...)
  std::string pattern;               ///< RE2, partial match on the record's message
  core::Severity severity = core::Severity::kWarning;
  std::string title;
  std::string detail;
  std::string fix;
  std::vector<ExampleLine> examples;
  std::vector<ExampleLine> counter_examples;
  int line = 0;
};

/// Parses the table, rules in their order. Fails naming the file and line of a rule without
/// id, classes, pattern or title, or whose pattern does not compile.
core::Result<std::vector<KernelLogRule>> ParseKernelLogRules(std::string_view yaml, std::string_view source);

}  // namespace gputriage::catalog
