// kb/tables/nvidia-xid.yaml: what each NVIDIA Xid code means and how to triage it, from NVIDIA's
// Xid catalog.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/category.h"
#include "core/model.h"
#include "core/result.h"

namespace gputriage::catalog {

struct XidEntry {
  int code = 0;
  std::string name;
  core::Severity severity = core::Severity::kError;
  /// The catalog's class of the usual cause: hardware, driver-firmware, application, or
  /// unknown where the source names none.
  core::Verdict verdict = core::Verdict::kUnknown;
  std::string meaning;
  std::string action;
  std::vector<std::string> references;
};

using XidTable = std::map<int, XidEntry>;

/// Parses the table's text; errors name `source` and the entry ("x.yaml: Xid 79: needs a name
/// and at least one reference").
core::Result<XidTable> ParseXidTable(std::string_view yaml, std::string_view source);

}  // namespace gputriage::catalog
