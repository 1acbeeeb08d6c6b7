// Register layouts of the catalog: named bit fields of a register word ("WALKER_ERROR", bits
// 3:1), as the tables quote them from the drivers' headers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/result.h"

namespace gputriage::catalog {

struct BitField {
  std::string name;
  unsigned low = 0;    ///< lowest bit
  unsigned width = 1;  ///< number of bits
  std::string meaning;

  /// The field's value in `word`.
  uint64_t Extract(uint64_t word) const {
    uint64_t mask = width >= 64 ? ~uint64_t{0} : ((uint64_t{1} << width) - 1);
    return (word >> low) & mask;
  }
};

/// "63" or "37:32" (high:low) as {low, width}; nullopt when it does not parse or exceeds 64 bits.
std::optional<BitField> ParseBitRange(std::string_view bits);

/// node[key] as a list of {field, bits, meaning}; fails naming `source` and the entry.
core::Result<std::vector<BitField>> BitFields(const YAML::Node& node, const char* key, std::string_view source);

/// The field called `name`, or null.
const BitField* FindField(const std::vector<BitField>& fields, std::string_view name);

}  // namespace gputriage::catalog
