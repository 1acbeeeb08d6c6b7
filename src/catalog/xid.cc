#include "catalog/xid.h"

#include <fmt/format.h>

#include "catalog/yaml_util.h"

namespace gputriage::catalog {

core::Result<XidTable> ParseXidTable(std::string_view text, std::string_view source) {
  GT_ASSIGN_OR_RETURN(YAML::Node doc, yaml::LoadDocument(text, source, "gputriage.xid/1"));
  GT_ASSIGN_OR_RETURN(YAML::Node entries, yaml::List(doc, "entries", source));
  XidTable table;
  size_t index = 0;
  for (const YAML::Node& node : entries) {
    std::string what = fmt::format("entry {}", index++);
    std::optional<int64_t> code = yaml::Integer(node, "code");
    if (!code) return core::MakeError("{}: {}: 'code' must be an integer", source, what);
    XidEntry entry;
    entry.code = static_cast<int>(*code);
    what = fmt::format("Xid {}", entry.code);
    entry.name = yaml::Scalar(node, "name");
    GT_ASSIGN_OR_RETURN(entry.severity, yaml::SeverityAt(node, source, what));
    std::string verdict = yaml::Scalar(node, "verdict");
    if (!verdict.empty()) {
      std::optional<core::Verdict> parsed = core::ParseVerdict(verdict);
      if (!parsed) return core::MakeError("{}: {}: verdict '{}' is not a verdict", source, what, verdict);
      entry.verdict = *parsed;
    }
    entry.meaning = yaml::Scalar(node, "meaning");
    entry.action = yaml::Scalar(node, "action");
    entry.references = yaml::StringList(node, "references");
    if (entry.name.empty() || entry.references.empty()) {
      return core::MakeError("{}: {}: needs a name and at least one reference", source, what);
    }
    if (!table.emplace(entry.code, entry).second) {
      return core::MakeError("{}: {} is listed twice", source, what);
    }
  }
  return table;
}

}  // namespace gputriage::catalog
