#include "catalog/yaml_util.h"

#include <re2/re2.h>

#include <fmt/format.h>

#include "catalog/source.h"
#include "knowledge_data/embedded.h"

namespace gputriage::catalog {

const SourceFile* FindSource(const std::vector<SourceFile>& files, std::string_view path) {
  for (const SourceFile& f : files) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

std::vector<SourceFile> EmbeddedSources() {
  std::vector<SourceFile> files;
  for (const kb_data::EmbeddedFile& f : kb_data::EmbeddedFiles()) {
    files.push_back({std::string(f.path), std::string(f.content)});
  }
  return files;
}

namespace yaml {

core::Result<YAML::Node> LoadDocument(std::string_view text, std::string_view source, std::string_view schema) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return core::MakeError("{}: invalid YAML: {}", source, e.what());
  }
  if (!root.IsMap() || Scalar(root, "schema") != schema) {
    return core::MakeError("{}: expected a mapping with schema: {}", source, schema);
  }
  return root;
}

core::Result<YAML::Node> List(const YAML::Node& doc, const char* key, std::string_view source) {
  YAML::Node list = doc[key];
  if (!list || !list.IsSequence()) return core::MakeError("{}: missing '{}' list", source, key);
  return list;
}

std::string Scalar(const YAML::Node& node, const char* key) {
  if (!node.IsMap()) return {};
  const YAML::Node v = node[key];
  return v && v.IsScalar() ? v.as<std::string>() : std::string();
}

std::vector<std::string> StringList(const YAML::Node& node, const char* key) {
  std::vector<std::string> out;
  if (!node.IsMap()) return out;
  const YAML::Node v = node[key];
  if (!v || !v.IsSequence()) return out;
  for (const YAML::Node& item : v) {
    if (item.IsScalar()) out.push_back(item.as<std::string>());
  }
  return out;
}

std::optional<int64_t> Integer(const YAML::Node& node, const char* key) {
  if (!node.IsMap()) return std::nullopt;
  const YAML::Node v = node[key];
  if (!v || !v.IsScalar()) return std::nullopt;
  try {
    return v.as<int64_t>();
  } catch (const YAML::Exception&) {
    return std::nullopt;
  }
}

std::string Where(std::string_view source, const YAML::Node& node) {
  YAML::Mark mark = node.Mark();
  if (mark.line < 0) return std::string(source);
  return fmt::format("{}:{}", source, mark.line + 1);
}

core::Result<core::Severity> SeverityAt(const YAML::Node& node, std::string_view source, const std::string& what) {
  auto severity = core::ParseSeverity(Scalar(node, "severity"));
  if (!severity) {
    return core::MakeError("{}: {}: severity '{}' is not one of info|warning|error|critical", source, what,
                           Scalar(node, "severity"));
  }
  return *severity;
}

core::Result<void> CheckPattern(std::string_view pattern, std::string_view where) {
  RE2::Options options;
  options.set_encoding(RE2::Options::EncodingLatin1);
  options.set_log_errors(false);
  RE2 re(re2::StringPiece(pattern.data(), pattern.size()), options);
  if (!re.ok()) return core::MakeError("{}: pattern '{}' does not compile: {}", where, pattern, re.error());
  return {};
}

}  // namespace yaml
}  // namespace gputriage::catalog
