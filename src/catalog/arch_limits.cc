#include "catalog/arch_limits.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <set>
#include <utility>

#include "catalog/yaml_util.h"

namespace gputriage::catalog {
namespace {

constexpr std::string_view kSchema = "gputriage.gpu-arch-limits/1";

// ---------------------------------------------------------------------------------- parsing

struct NumberField {
  const char* key;
  std::optional<uint32_t> ArchLimits::*member;
  bool zero_allowed;
};

// Every integer field of the schema. A zero is only meaningful for the reservation; elsewhere it
// would be a typo that divides by zero later.
const std::vector<NumberField>& NumberFields() {
  static const std::vector<NumberField> kFields = {
      {"warp_size", &ArchLimits::warp_size, false},
      {"max_threads_per_block", &ArchLimits::max_threads_per_block, false},
      {"max_threads_per_sm", &ArchLimits::max_threads_per_sm, false},
      {"max_warps_per_sm", &ArchLimits::max_warps_per_sm, false},
      {"max_blocks_per_sm", &ArchLimits::max_blocks_per_sm, false},
      {"registers_per_sm", &ArchLimits::registers_per_sm, false},
      {"max_registers_per_block", &ArchLimits::max_registers_per_block, false},
      {"max_registers_per_thread", &ArchLimits::max_registers_per_thread, false},
      {"register_allocation_unit", &ArchLimits::register_allocation_unit, false},
      {"register_file_partitions", &ArchLimits::register_file_partitions, false},
      {"shared_memory_per_sm_bytes", &ArchLimits::shared_memory_per_sm_bytes, false},
      {"shared_memory_per_block_default_bytes", &ArchLimits::shared_memory_per_block_default_bytes, false},
      {"shared_memory_per_block_optin_bytes", &ArchLimits::shared_memory_per_block_optin_bytes, false},
      {"shared_memory_reserved_per_block_bytes", &ArchLimits::shared_memory_reserved_per_block_bytes, true},
      {"shared_memory_allocation_unit_bytes", &ArchLimits::shared_memory_allocation_unit_bytes, false},
      {"max_workgroup_size", &ArchLimits::max_workgroup_size, false},
      {"lds_per_workgroup_bytes", &ArchLimits::lds_per_workgroup_bytes, false},
      {"simds_per_unit", &ArchLimits::simds_per_unit, false},
      {"lds_per_unit_bytes", &ArchLimits::lds_per_unit_bytes, false},
      {"max_workgroups_per_unit", &ArchLimits::max_workgroups_per_unit, false},
      {"max_waves_per_simd", &ArchLimits::max_waves_per_simd, false},
      {"max_vgprs_per_wave", &ArchLimits::max_vgprs_per_wave, false},
      {"max_arch_vgprs_per_wave", &ArchLimits::max_arch_vgprs_per_wave, false},
      {"sgprs_per_simd", &ArchLimits::sgprs_per_simd, false},
      {"sgpr_alloc_granule", &ArchLimits::sgpr_alloc_granule, false},
      {"trap_handler_sgprs", &ArchLimits::trap_handler_sgprs, true},
      {"max_sgprs_per_wave", &ArchLimits::max_sgprs_per_wave, false},
  };
  return kFields;
}

struct BoolField {
  const char* key;
  std::optional<bool> ArchLimits::*member;
};

const std::vector<BoolField>& BoolFields() {
  static const std::vector<BoolField> kFields = {
      {"unified_vgpr_agpr", &ArchLimits::unified_vgpr_agpr},
      {"sgprs_limit_occupancy", &ArchLimits::sgprs_limit_occupancy},
  };
  return kFields;
}

const std::set<std::string>& OtherKeys() {
  static const std::set<std::string> kKeys = {"arch",           "vendor",         "name",
                                              "notes",          "references",     "wavefront_sizes",
                                              "occupancy_unit", "vgprs_per_simd", "vgpr_alloc_granule"};
  return kKeys;
}

core::Result<uint32_t> ToCount(const YAML::Node& node, std::string_view source, const std::string& what,
                               std::string_view key, bool zero_allowed) {
  uint64_t value = 0;
  bool ok = node.IsScalar();
  if (ok) {
    try {
      value = node.as<uint64_t>();
    } catch (const YAML::Exception&) {
      ok = false;
    }
  }
  if (!ok || value > std::numeric_limits<uint32_t>::max() || (value == 0 && !zero_allowed)) {
    return core::MakeError("{}: {}: '{}' must be a {} integer", source, what, key,
                           zero_allowed ? "non-negative" : "positive");
  }
  return static_cast<uint32_t>(value);
}

// {wavefront size: count} maps such as `vgprs_per_simd: {32: 1024, 64: 512}`.
core::Result<std::map<uint32_t, uint32_t>> ToWaveMap(const YAML::Node& node, std::string_view source,
                                                     const std::string& what, std::string_view key) {
  if (!node.IsMap()) {
    return core::MakeError("{}: {}: '{}' must map wavefront sizes to positive integers", source, what, key);
  }
  std::map<uint32_t, uint32_t> out;
  for (const auto& item : node) {
    GT_ASSIGN_OR_RETURN(uint32_t wave, ToCount(item.first, source, what, key, false));
    GT_ASSIGN_OR_RETURN(uint32_t count, ToCount(item.second, source, what, key, false));
    out[wave] = count;
  }
  return out;
}

core::Result<ArchLimits> ParseEntry(const YAML::Node& node, std::string_view source, size_t index) {
  std::string what = fmt::format("entry {}", index);
  if (!node.IsMap()) return core::MakeError("{}: {} is not a mapping", source, what);
  ArchLimits limits;
  limits.arch = yaml::Scalar(node, "arch");
  if (limits.arch.empty()) return core::MakeError("{}: {} has no arch", source, what);
  what = limits.arch;
  if (CanonicalArchName(limits.arch) != limits.arch) {
    return core::MakeError("{}: {}: arch must be written as '{}'", source, what, CanonicalArchName(limits.arch));
  }
  const std::string vendor = yaml::Scalar(node, "vendor");
  if (vendor == "nvidia") {
    limits.vendor = GpuVendor::kNvidia;
  } else if (vendor == "amd") {
    limits.vendor = GpuVendor::kAmd;
  } else {
    return core::MakeError("{}: {}: vendor '{}' is not one of nvidia|amd", source, what, vendor);
  }
  limits.name = yaml::Scalar(node, "name");
  limits.notes = yaml::Scalar(node, "notes");
  limits.occupancy_unit = yaml::Scalar(node, "occupancy_unit");
  if (!limits.occupancy_unit.empty() && limits.occupancy_unit != "CU" && limits.occupancy_unit != "WGP") {
    return core::MakeError("{}: {}: occupancy_unit '{}' is not one of CU|WGP", source, what, limits.occupancy_unit);
  }

  for (const auto& item : node) {
    const std::string key = item.first.as<std::string>();
    auto number =
        std::find_if(NumberFields().begin(), NumberFields().end(), [&](const NumberField& f) { return key == f.key; });
    if (number != NumberFields().end()) {
      GT_ASSIGN_OR_RETURN(uint32_t value, ToCount(item.second, source, what, key, number->zero_allowed));
      limits.*(number->member) = value;
      continue;
    }
    auto flag =
        std::find_if(BoolFields().begin(), BoolFields().end(), [&](const BoolField& f) { return key == f.key; });
    if (flag != BoolFields().end()) {
      bool value = false;
      if (!item.second.IsScalar() || !YAML::convert<bool>::decode(item.second, value)) {
        return core::MakeError("{}: {}: '{}' must be true or false", source, what, key);
      }
      limits.*(flag->member) = value;
      continue;
    }
    if (key == "wavefront_sizes") {
      if (!item.second.IsSequence()) {
        return core::MakeError("{}: {}: 'wavefront_sizes' must be a list", source, what);
      }
      for (const YAML::Node& size : item.second) {
        GT_ASSIGN_OR_RETURN(uint32_t value, ToCount(size, source, what, key, false));
        limits.wavefront_sizes.push_back(value);
      }
      std::sort(limits.wavefront_sizes.begin(), limits.wavefront_sizes.end());
    } else if (key == "vgprs_per_simd") {
      GT_ASSIGN_OR_RETURN(limits.vgprs_per_simd, ToWaveMap(item.second, source, what, key));
    } else if (key == "vgpr_alloc_granule") {
      GT_ASSIGN_OR_RETURN(limits.vgpr_alloc_granule, ToWaveMap(item.second, source, what, key));
    } else if (key == "references") {
      if (item.second.IsSequence()) {
        for (const YAML::Node& ref : item.second) {
          if (ref.IsScalar() && !ref.as<std::string>().empty()) {
            limits.references.push_back(ref.as<std::string>());
          }
        }
      }
    } else if (OtherKeys().count(key) == 0) {
      return core::MakeError("{}: {}: unknown key '{}'", source, what, key);
    }
  }
  if (limits.references.empty()) {
    return core::MakeError("{}: {}: needs at least one reference", source, what);
  }
  return limits;
}

}  // namespace

core::Result<std::vector<ArchLimits>> ParseArchLimitsTable(std::string_view yaml_text, std::string_view source) {
  GT_ASSIGN_OR_RETURN(YAML::Node root, yaml::LoadDocument(yaml_text, source, kSchema));
  GT_ASSIGN_OR_RETURN(YAML::Node entries, yaml::List(root, "entries", source));
  std::vector<ArchLimits> out;
  std::set<std::string> seen;
  size_t index = 0;
  for (const YAML::Node& node : entries) {
    ArchLimits limits;
    try {
      GT_ASSIGN_OR_RETURN(limits, ParseEntry(node, source, index));
    } catch (const YAML::Exception& e) {
      return core::MakeError("{}: entry {}: {}", source, index, e.what());
    }
    ++index;
    if (!seen.insert(limits.arch).second) {
      return core::MakeError("{}: {} is listed twice", source, limits.arch);
    }
    out.push_back(std::move(limits));
  }
  return out;
}

std::string CanonicalArchName(std::string_view arch) {
  std::string name(arch);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // An offload-bundle or triple prefix: "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-".
  if (size_t dashes = name.rfind("--"); dashes != std::string::npos) name.erase(0, dashes + 2);
  if (size_t colon = name.find(':'); colon != std::string::npos) name.erase(colon);
  for (std::string_view prefix : {std::string_view("sm_"), std::string_view("compute_")}) {
    if (name.rfind(prefix, 0) != 0) continue;
    size_t end = prefix.size();
    while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
    if (end == prefix.size()) return name;  // not a number: leave it alone
    return "sm_" + name.substr(prefix.size(), end - prefix.size());
  }
  return name;
}

const ArchLimits* FindArchLimits(const std::vector<ArchLimits>& table, std::string_view arch) {
  const std::string canonical = CanonicalArchName(arch);
  for (const ArchLimits& limits : table) {
    if (limits.arch == canonical) return &limits;
  }
  return nullptr;
}

}  // namespace gputriage::catalog
