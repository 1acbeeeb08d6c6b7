#include "catalog/error_codes.h"

#include <fmt/format.h>

#include "catalog/yaml_util.h"
#include "core/text.h"

namespace gputriage::catalog {
namespace {

// Appends one vendor's table to the codes and their indexes.
core::Result<void> AddTable(std::vector<ErrorCode>& codes, std::map<std::string, size_t, std::less<>>& by_name,
                            std::map<std::string, size_t, std::less<>>& by_message, const SourceFile& file,
                            const std::string& vendor) {
  GT_ASSIGN_OR_RETURN(YAML::Node doc,
                      yaml::LoadDocument(file.text, file.path, fmt::format("gputriage.{}-errors/1", vendor)));
  GT_ASSIGN_OR_RETURN(YAML::Node entries, yaml::List(doc, "entries", file.path));
  for (const YAML::Node& e : entries) {
    ErrorCode code;
    code.vendor = vendor;
    code.name = yaml::Scalar(e, "name");
    code.driver_name = yaml::Scalar(e, "driver_name");
    code.message = yaml::Scalar(e, "message");
    code.sticky = yaml::Scalar(e, "sticky") == "true";
    std::optional<int64_t> value = yaml::Integer(e, "value");
    if (!value) return core::MakeError("{}: {}: value is not a number", yaml::Where(file.path, e), code.name);
    code.value = static_cast<int>(*value);
    std::string category = yaml::Scalar(e, "category");
    if (code.name.empty() || category.empty()) {
      return core::MakeError("{}: an entry without name or category (value {})", yaml::Where(file.path, e), code.value);
    }
    std::optional<core::Category> parsed = core::ParseCategory(category);
    if (!parsed) return core::MakeError("{}: {}: category '{}' is not a category", file.path, code.name, category);
    code.category = *parsed;
    if (std::string twin = yaml::Scalar(e, "cuda_name"); !twin.empty()) {
      if (auto it = by_name.find(twin); it != by_name.end()) code.sticky = codes[it->second].sticky;
    }
    size_t index = codes.size();
    codes.push_back(code);
    by_name.emplace(code.name, index);
    if (!code.driver_name.empty()) by_name.emplace(code.driver_name, index);
    for (const std::string& alias : yaml::StringList(e, "aliases")) by_name.emplace(alias, index);
    // The first code with a message wins (deprecated duplicates come later in the tables).
    if (!code.message.empty()) by_message.emplace(vendor + ":" + core::ToLower(code.message), index);
  }
  return {};
}

}  // namespace

const ErrorCode* ErrorCodes::FindByName(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &codes_[it->second];
}

const ErrorCode* ErrorCodes::FindByMessage(std::string_view vendor, std::string_view message) const {
  auto it = by_message_.find(core::ToLower(vendor) + ":" + core::ToLower(core::Trim(message)));
  return it == by_message_.end() ? nullptr : &codes_[it->second];
}

const ErrorCode* ErrorCodes::FindByValue(std::string_view vendor, int value) const {
  for (const ErrorCode& code : codes_) {
    if (code.value == value && code.vendor == vendor) return &code;
  }
  return nullptr;
}

core::Result<ErrorCodes> ParseErrorTables(const SourceFile& cuda, const SourceFile& hip) {
  ErrorCodes t;
  if (auto added = AddTable(t.codes_, t.by_name_, t.by_message_, cuda, "cuda"); !added.ok()) return added.error();
  if (auto added = AddTable(t.codes_, t.by_name_, t.by_message_, hip, "hip"); !added.ok()) return added.error();
  return t;
}

}  // namespace gputriage::catalog
