#include "catalog/env_vars.h"

#include <re2/re2.h>

#include "catalog/yaml_util.h"

namespace gputriage::catalog {

core::Result<std::vector<EnvVarRule>> ParseEnvVarRules(std::string_view text, std::string_view source) {
  GT_ASSIGN_OR_RETURN(YAML::Node doc, yaml::LoadDocument(text, source, "gputriage.envvars/1"));
  GT_ASSIGN_OR_RETURN(YAML::Node entries, yaml::List(doc, "entries", source));
  std::vector<EnvVarRule> rules;
  for (const YAML::Node& node : entries) {
    EnvVarRule rule;
    rule.name = yaml::Scalar(node, "name");
    if (rule.name.empty()) return core::MakeError("{}: an entry has no name", source);
    rule.vendor = yaml::Scalar(node, "vendor");
    rule.match = yaml::Scalar(node, "match");
    if (rule.match.empty()) rule.match = "any";
    GT_ASSIGN_OR_RETURN(rule.severity, yaml::SeverityAt(node, source, rule.name));
    rule.title = yaml::Scalar(node, "title");
    rule.effect = yaml::Scalar(node, "effect");
    rule.risk = yaml::Scalar(node, "risk");
    rule.fix = yaml::Scalar(node, "fix");
    rule.references = yaml::StringList(node, "references");
    if (rule.title.empty() || rule.references.empty()) {
      return core::MakeError("{}: {}: needs a title and at least one reference", source, rule.name);
    }
    if (rule.match != "any") {
      RE2 re(rule.match, RE2::Quiet);
      if (!re.ok()) {
        return core::MakeError("{}: {}: match pattern '{}' does not compile: {}", source, rule.name, rule.match,
                               re.error());
      }
    }
    rules.push_back(std::move(rule));
  }
  return rules;
}

}  // namespace gputriage::catalog
