#include "catalog/amd_layouts.h"

#include "catalog/yaml_util.h"
#include "core/text.h"

namespace gputriage::catalog {
namespace {

core::Result<void> Require(const std::vector<BitField>& fields, std::initializer_list<std::string_view> names,
                           std::string_view source, std::string_view what) {
  for (std::string_view name : names) {
    if (!FindField(fields, name)) return core::MakeError("{}: {} has no field {}", source, what, name);
  }
  return {};
}

}  // namespace

core::Result<VmFaultLayout> ParseVmFaultLayout(std::string_view text, std::string_view source) {
  GT_ASSIGN_OR_RETURN(YAML::Node doc, yaml::LoadDocument(text, source, "gputriage.amdgpu-vm-fault/1"));
  VmFaultLayout layout;
  GT_ASSIGN_OR_RETURN(layout.status_fields, BitFields(doc, "status_register", source));
  if (auto ok = Require(layout.status_fields,
                        {"MORE_FAULTS", "WALKER_ERROR", "PERMISSION_FAULTS", "MAPPING_ERROR", "CID", "RW"}, source,
                        "status_register");
      !ok.ok()) {
    return ok.error();
  }
  if (const YAML::Node walker = doc["walker_error_values"]; walker && walker.IsMap()) {
    for (const auto& item : walker) {
      try {
        layout.walker_errors[item.first.as<uint64_t>()] = item.second.as<std::string>();
      } catch (const YAML::Exception&) {
        return core::MakeError("{}: walker_error_values: a value that is not a number", source);
      }
    }
  }
  if (const YAML::Node bits = doc["permission_fault_bits"]; bits && bits.IsSequence()) {
    for (const YAML::Node& bit : bits) {
      std::optional<int64_t> index = yaml::Integer(bit, "bit");
      if (!index || *index < 0 || *index > 3) {
        return core::MakeError("{}: permission_fault_bits: bit must be 0..3", yaml::Where(source, bit));
      }
      layout.permission_bits[static_cast<unsigned>(*index)] = yaml::Scalar(bit, "name");
    }
  }
  return layout;
}

std::string AcaLayout::IpOf(uint64_t ipid) const {
  const BitField* hwid = FindField(ipid_fields, "HARDWAREID");
  const BitField* type = FindField(ipid_fields, "MCATYPE");
  if (!hwid || !type) return "";
  for (const AcaBankIp& ip : bank_ips) {
    if (ip.hardware_id == hwid->Extract(ipid) && ip.mca_type == type->Extract(ipid)) return ip.ip;
  }
  return "";
}

core::Result<AcaLayout> ParseAcaLayout(std::string_view text, std::string_view source) {
  GT_ASSIGN_OR_RETURN(YAML::Node doc, yaml::LoadDocument(text, source, "gputriage.amd-ras/1"));
  AcaLayout layout;
  GT_ASSIGN_OR_RETURN(layout.status_fields, BitFields(doc, "status_fields", source));
  GT_ASSIGN_OR_RETURN(layout.ipid_fields, BitFields(doc, "ipid_fields", source));
  GT_ASSIGN_OR_RETURN(layout.misc0_fields, BitFields(doc, "misc0_fields", source));
  if (auto ok = Require(layout.status_fields, {"VAL", "UC", "DEFERRED", "POISON"}, source, "status_fields"); !ok.ok()) {
    return ok.error();
  }
  if (auto ok = Require(layout.ipid_fields, {"HARDWAREID", "MCATYPE"}, source, "ipid_fields"); !ok.ok()) {
    return ok.error();
  }
  GT_ASSIGN_OR_RETURN(YAML::Node ips, yaml::List(doc, "bank_ip_ids", source));
  for (const YAML::Node& node : ips) {
    std::optional<uint64_t> hwid = core::ParseU64(yaml::Scalar(node, "hardwareid"), 0);
    std::optional<uint64_t> type = core::ParseU64(yaml::Scalar(node, "mcatype"), 0);
    std::string ip = yaml::Scalar(node, "ip");
    if (ip.empty() || !hwid || !type) {
      return core::MakeError("{}: bank_ip_ids: an entry needs ip, hardwareid and mcatype", yaml::Where(source, node));
    }
    layout.bank_ips.push_back({ip, *hwid, *type});
  }
  layout.references = yaml::StringList(doc, "references");
  return layout;
}

}  // namespace gputriage::catalog
