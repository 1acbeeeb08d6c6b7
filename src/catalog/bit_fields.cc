#include "catalog/bit_fields.h"

#include <charconv>

#include "catalog/yaml_util.h"

namespace gputriage::catalog {
namespace {

std::optional<unsigned> Bit(std::string_view text) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value > 63) return std::nullopt;
  return value;
}

}  // namespace

std::optional<BitField> ParseBitRange(std::string_view bits) {
  size_t colon = bits.find(':');
  std::optional<unsigned> high = Bit(bits.substr(0, colon));
  std::optional<unsigned> low = colon == std::string_view::npos ? high : Bit(bits.substr(colon + 1));
  if (!high || !low || *low > *high) return std::nullopt;
  BitField field;
  field.low = *low;
  field.width = *high - *low + 1;
  return field;
}

core::Result<std::vector<BitField>> BitFields(const YAML::Node& node, const char* key, std::string_view source) {
  GT_ASSIGN_OR_RETURN(YAML::Node list, yaml::List(node, key, source));
  std::vector<BitField> fields;
  for (const YAML::Node& entry : list) {
    std::string name = yaml::Scalar(entry, "field");
    std::optional<BitField> field = ParseBitRange(yaml::Scalar(entry, "bits"));
    if (name.empty() || !field) {
      return core::MakeError("{}: {}: a field needs a name and bits such as \"3:1\"", yaml::Where(source, entry), key);
    }
    field->name = name;
    field->meaning = yaml::Scalar(entry, "meaning");
    fields.push_back(std::move(*field));
  }
  return fields;
}

const BitField* FindField(const std::vector<BitField>& fields, std::string_view name) {
  for (const BitField& f : fields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

}  // namespace gputriage::catalog
