// The reviewed tables `doctor` needs, loaded from the embedded knowledge base (kb/): NVIDIA Xid
// meanings and GPU-stack environment variables that change behaviour.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/result.h"

namespace gputriage::checks {

struct XidEntry {
  int code = 0;
  std::string name;
  core::Severity severity = core::Severity::kError;
  std::string verdict;  // hardware | driver-firmware | application | unknown
  std::string meaning;
  std::string action;
  std::vector<std::string> references;
};

struct EnvVarRule {
  std::string name;
  std::string vendor;  // amd | nvidia | any
  std::string match;   // "any", or an RE2 pattern the value must match
  core::Severity severity = core::Severity::kInfo;
  std::string title;
  std::string effect;
  std::string risk;
  std::string fix;
  std::vector<std::string> references;
};

struct Knowledge {
  std::map<int, XidEntry> xid;
  std::vector<EnvVarRule> env_vars;
};

/// Parses kb/tables/nvidia-xid.yaml text. Errors name `source` and the entry.
core::Result<std::map<int, XidEntry>> ParseXidTable(std::string_view yaml, std::string_view source);

/// Parses kb/env-vars.yaml text. Errors name `source` and the entry; every `match` regex must
/// compile.
core::Result<std::vector<EnvVarRule>> ParseEnvVarRules(std::string_view yaml,
                                                      std::string_view source);

/// Both tables from the knowledge base embedded at build time.
core::Result<Knowledge> LoadBuiltinKnowledge();

}  // namespace gputriage::checks
