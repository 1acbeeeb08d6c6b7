// Reading the catalog's YAML tables: a root mapping with `schema: gputriage.<name>/1` and a list
// of `entries`; errors name the file and, where yaml-cpp knows it, the line.
// Private to src/catalog: the other modules read the catalog's typed tables.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/result.h"

namespace gputriage::catalog::yaml {

/// The parsed document; fails naming `source` when it is not YAML or not a mapping with
/// `schema: <schema>`.
core::Result<YAML::Node> LoadDocument(std::string_view text, std::string_view source, std::string_view schema);

/// doc[`key`] as a list; fails naming `source` and `key` when it is missing or not a list.
core::Result<YAML::Node> List(const YAML::Node& doc, const char* key, std::string_view source);

/// node[key] as a string when it is a scalar, else "".
std::string Scalar(const YAML::Node& node, const char* key);

/// node[key] as a list of strings (non-scalars skipped); empty when absent.
std::vector<std::string> StringList(const YAML::Node& node, const char* key);

/// node[key] as an integer, nullopt when absent or not an integer.
std::optional<int64_t> Integer(const YAML::Node& node, const char* key);

/// "kb/x.yaml:12" for a node (1-based line), "kb/x.yaml" when yaml-cpp has no mark.
std::string Where(std::string_view source, const YAML::Node& node);

/// node[key] as a severity (info|warning|error|critical); the error names the file and line.
core::Result<core::Severity> SeverityAt(const YAML::Node& node, std::string_view source, const std::string& what);

/// Checks that `pattern` compiles as the matchers compile it (RE2, Latin-1).
core::Result<void> CheckPattern(std::string_view pattern, std::string_view where);

}  // namespace gputriage::catalog::yaml
