// kb/env-vars.yaml: GPU-stack environment variables known to change behaviour, and what doctor
// says when one is set.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/result.h"

namespace gputriage::catalog {

struct EnvVarRule {
  std::string name;
  std::string vendor;  ///< amd | nvidia | any
  std::string match;   ///< "any", or an RE2 pattern the value must match
  core::Severity severity = core::Severity::kInfo;
  std::string title;
  std::string effect;
  std::string risk;
  std::string fix;
  std::vector<std::string> references;
};

/// Parses the table's text. Errors name `source` and the entry; every `match` regex must
/// compile.
core::Result<std::vector<EnvVarRule>> ParseEnvVarRules(std::string_view yaml, std::string_view source);

}  // namespace gputriage::catalog
