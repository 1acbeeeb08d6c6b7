// kb/tables/kernel-log-rules.yaml: what doctor says about GPU-related kernel-log records other
// than NVIDIA Xid lines.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/examples.h"
#include "core/model.h"
#include "core/result.h"

namespace re2 {
class RE2;
}

namespace gputriage::catalog {

struct KernelLogRule {
  std::string id;                            ///< the finding's id ("kmsg.amdgpu_ring_timeout")
  std::vector<std::string> classes;          ///< record classes it applies to ("amdgpu", "ras", ...)
  std::string pattern;                       ///< RE2, partial match on the record's message
  std::shared_ptr<const re2::RE2> compiled;  ///< `pattern`, compiled once (Latin-1, as lint checks it)
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

/// The rule doctor applies to a record of class `log_class` (kmsg::LogClassName) with `message`:
/// the first, in table order, whose classes contain the class and whose pattern matches; nullptr
/// when none does.
const KernelLogRule* FirstKernelLogRule(const std::vector<KernelLogRule>& rules, std::string_view log_class,
                                        std::string_view message);

}  // namespace gputriage::catalog
