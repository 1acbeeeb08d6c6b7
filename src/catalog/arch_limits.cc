#include "catalog/arch_limits.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
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

// ------------------------------------------------------------------------- product peaks

const std::set<std::string>& ProductKeys() {
  static const std::set<std::string> kKeys = {
      "name", "vendor", "arch", "match", "exclude", "memory_bandwidth_gbs", "dense_tflops", "notes", "references"};
  return kKeys;
}

const std::set<std::string>& DenseTypes() {
  static const std::set<std::string> kTypes = {"fp64", "fp32", "tf32", "fp16", "bf16", "fp8"};
  return kTypes;
}

std::string Lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

core::Result<double> ToPositiveNumber(const YAML::Node& node, std::string_view source, const std::string& what,
                                      std::string_view key) {
  double value = 0;
  bool ok = node.IsScalar();
  if (ok) {
    try {
      value = node.as<double>();
    } catch (const YAML::Exception&) {
      ok = false;
    }
  }
  if (!ok || !std::isfinite(value) || value <= 0) {
    return core::MakeError("{}: {}: '{}' must be a positive number", source, what, key);
  }
  return value;
}

// A list of non-empty strings; `required` makes an absent or empty list an error. An empty
// substring would match every device name.
core::Result<std::vector<std::string>> ToSubstrings(const YAML::Node& node, std::string_view source,
                                                    const std::string& what, const char* key, bool required) {
  const YAML::Node list = node[key];
  std::vector<std::string> out;
  if (list && !list.IsSequence()) return core::MakeError("{}: {}: '{}' must be a list", source, what, key);
  if (list) {
    for (const YAML::Node& item : list) {
      if (!item.IsScalar() || item.as<std::string>().empty()) {
        return core::MakeError("{}: {}: '{}' must hold non-empty strings", source, what, key);
      }
      out.push_back(item.as<std::string>());
    }
  }
  if (required && out.empty()) return core::MakeError("{}: {}: needs at least one '{}' substring", source, what, key);
  return out;
}

core::Result<std::map<std::string, double>> ToDenseTflops(const YAML::Node& node, std::string_view source,
                                                          const std::string& what) {
  if (!node.IsMap()) return core::MakeError("{}: {}: 'dense_tflops' must map data types to numbers", source, what);
  std::map<std::string, double> out;
  for (const auto& item : node) {
    const std::string type = item.first.as<std::string>();
    if (DenseTypes().count(type) == 0) {
      return core::MakeError("{}: {}: dense_tflops key '{}' is not one of fp64|fp32|tf32|fp16|bf16|fp8", source, what,
                             type);
    }
    GT_ASSIGN_OR_RETURN(out[type], ToPositiveNumber(item.second, source, what, "dense_tflops." + type));
  }
  return out;
}

core::Result<ProductPeaks> ParseProduct(const YAML::Node& node, std::string_view source, size_t index) {
  std::string what = fmt::format("product {}", index);
  if (!node.IsMap()) return core::MakeError("{}: {} is not a mapping", source, what);
  ProductPeaks product;
  product.name = yaml::Scalar(node, "name");
  if (product.name.empty()) return core::MakeError("{}: {} has no name", source, what);
  what = product.name;
  for (const auto& item : node) {
    const std::string key = item.first.as<std::string>();
    if (ProductKeys().count(key) == 0) return core::MakeError("{}: {}: unknown key '{}'", source, what, key);
  }
  const std::string vendor = yaml::Scalar(node, "vendor");
  if (vendor == "nvidia") {
    product.vendor = GpuVendor::kNvidia;
  } else if (vendor == "amd") {
    product.vendor = GpuVendor::kAmd;
  } else {
    return core::MakeError("{}: {}: vendor '{}' is not one of nvidia|amd", source, what, vendor);
  }
  product.arch = yaml::Scalar(node, "arch");
  if (product.arch.empty()) return core::MakeError("{}: {} has no arch", source, what);
  if (CanonicalArchName(product.arch) != product.arch) {
    return core::MakeError("{}: {}: arch must be written as '{}'", source, what, CanonicalArchName(product.arch));
  }
  GT_ASSIGN_OR_RETURN(product.match, ToSubstrings(node, source, what, "match", true));
  GT_ASSIGN_OR_RETURN(product.exclude, ToSubstrings(node, source, what, "exclude", false));
  if (const YAML::Node bandwidth = node["memory_bandwidth_gbs"]) {
    GT_ASSIGN_OR_RETURN(product.memory_bandwidth_gbs,
                        ToPositiveNumber(bandwidth, source, what, "memory_bandwidth_gbs"));
  }
  if (const YAML::Node dense = node["dense_tflops"]) {
    GT_ASSIGN_OR_RETURN(product.dense_tflops, ToDenseTflops(dense, source, what));
  }
  product.notes = yaml::Scalar(node, "notes");
  product.references = yaml::StringList(node, "references");
  std::erase_if(product.references, [](const std::string& ref) { return ref.empty(); });
  if (product.references.empty()) return core::MakeError("{}: {}: needs at least one reference", source, what);
  return product;
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

core::Result<std::vector<ProductPeaks>> ParseProductPeaks(std::string_view yaml_text, std::string_view source) {
  GT_ASSIGN_OR_RETURN(YAML::Node root, yaml::LoadDocument(yaml_text, source, kSchema));
  std::vector<ProductPeaks> out;
  const YAML::Node products = root["products"];
  if (!products) return out;
  if (!products.IsSequence()) return core::MakeError("{}: 'products' must be a list", source);
  std::set<std::string> seen;
  size_t index = 0;
  for (const YAML::Node& node : products) {
    ProductPeaks product;
    try {
      GT_ASSIGN_OR_RETURN(product, ParseProduct(node, source, index));
    } catch (const YAML::Exception& e) {
      return core::MakeError("{}: product {}: {}", source, index, e.what());
    }
    ++index;
    if (!seen.insert(product.name).second) return core::MakeError("{}: {} is listed twice", source, product.name);
    out.push_back(std::move(product));
  }
  return out;
}

const ProductPeaks* FindProductPeaks(const std::vector<ProductPeaks>& table, std::string_view device_name) {
  const std::string name = Lower(device_name);
  const ProductPeaks* best = nullptr;
  size_t best_length = 0;
  for (const ProductPeaks& product : table) {
    auto occurs = [&](const std::string& part) { return name.find(Lower(part)) != std::string::npos; };
    if (std::any_of(product.exclude.begin(), product.exclude.end(), occurs)) continue;
    for (const std::string& part : product.match) {
      if (part.size() > best_length && occurs(part)) {
        best = &product;
        best_length = part.size();
      }
    }
  }
  return best;
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
