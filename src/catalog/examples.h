// A real log line kept in a table as the proof that an entry matches what it is about, with
// where it comes from (a file of the repository or a public thread).
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace gputriage::catalog {

struct ExampleLine {
  std::string from;  ///< "kb/issues/x.match.log", "tests/fixtures/...", or a URL
  std::string line;
};

/// node[key] as a list of {from, line}; entries without a line are skipped.
std::vector<ExampleLine> ExampleLines(const YAML::Node& node, const char* key);

}  // namespace gputriage::catalog
