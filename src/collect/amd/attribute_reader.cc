#include "collect/amd/attribute_reader.h"

#include <fmt/format.h>

#include "collect/amd/problem_list.h"
#include "core/text.h"

namespace gputriage::amd {

std::string QuoteForNote(std::string_view text) { return QuoteProblemText(text); }

void AttributeReader::Note(std::string_view item, std::string_view path, std::string reason) {
  if (!noted_paths_.emplace(path).second) return;
  section_.NoteMissing(std::string(item), std::move(reason));
}

void AttributeReader::NoteOnce(std::string item, std::string reason) {
  if (!noted_pairs_.emplace(item, reason).second) return;
  section_.NoteMissing(std::move(item), std::move(reason));
}

std::string AttributeReader::Reason(std::string_view path, const core::Error& error) const {
  std::string_view message = error.message;
  std::string prefix = os_.Resolve(path) + ": ";
  if (message.starts_with(prefix)) message.remove_prefix(prefix.size());
  return std::string(message);
}

bool AttributeReader::Skip(std::string_view path, Presence presence) const {
  return presence == Presence::kOptional && !os_.Exists(path);
}

std::optional<std::string> AttributeReader::ReadText(std::string_view path, std::string_view item, Presence presence,
                                                     size_t max_bytes) {
  core::Result<std::string> content = os_.TryReadFile(path, max_bytes);
  if (content.ok()) return std::move(content).value();
  if (!Skip(path, presence)) {
    Note(item, path, fmt::format("cannot read {}: {}", path, Reason(path, content.error())));
  }
  return std::nullopt;
}

std::optional<std::string> AttributeReader::ReadString(std::string_view path, std::string_view item,
                                                       Presence presence) {
  std::optional<std::string> text = ReadText(path, item, presence, 4096);
  if (!text) return std::nullopt;
  std::string_view trimmed = core::Trim(*text);
  if (trimmed.empty()) return std::nullopt;
  return core::SanitizeUtf8(trimmed);
}

std::optional<uint64_t> AttributeReader::ReadU64(std::string_view path, std::string_view item, Presence presence,
                                                 uint64_t max) {
  std::optional<std::string> text = ReadText(path, item, presence, 4096);
  if (!text) return std::nullopt;
  std::optional<uint64_t> value = core::ParseU64(*text, 10);
  if (!value) {
    Note(item, path, fmt::format("{}: not an unsigned decimal: {}", path, QuoteForNote(core::Trim(*text))));
    return std::nullopt;
  }
  if (*value > max) {
    Note(item, path, fmt::format("{}: implausible value {} (expected <= {})", path, *value, max));
    return std::nullopt;
  }
  return value;
}

std::optional<int64_t> AttributeReader::ReadI64(std::string_view path, std::string_view item, Presence presence,
                                                int64_t min, int64_t max) {
  std::optional<std::string> text = ReadText(path, item, presence, 4096);
  if (!text) return std::nullopt;
  std::optional<int64_t> value = core::ParseI64(*text);
  if (!value) {
    Note(item, path, fmt::format("{}: not a decimal integer: {}", path, QuoteForNote(core::Trim(*text))));
    return std::nullopt;
  }
  if (*value < min || *value > max) {
    Note(item, path, fmt::format("{}: implausible value {} (expected {}..{})", path, *value, min, max));
    return std::nullopt;
  }
  return value;
}

std::optional<std::vector<std::string>> AttributeReader::ListDir(std::string_view path, std::string_view item,
                                                                 Presence presence) {
  core::Result<std::vector<std::string>> names = os_.TryListDir(path);
  if (names.ok()) return std::move(names).value();
  if (!Skip(path, presence)) {
    Note(item, path, fmt::format("cannot list {}: {}", path, Reason(path, names.error())));
  }
  return std::nullopt;
}

}  // namespace gputriage::amd
