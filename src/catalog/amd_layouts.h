// Register layouts of AMD GPU error reports: the amdgpu VM (page) fault status word
// (kb/tables/amdgpu-vm-fault.yaml) and the ACA error banks of MI300-class GPUs
// (kb/tables/amd-ras.yaml), as the kernel's headers define them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/bit_fields.h"
#include "core/result.h"

namespace gputriage::catalog {

struct VmFaultLayout {
  /// VM_L2_PROTECTION_FAULT_STATUS: MORE_FAULTS, WALKER_ERROR, PERMISSION_FAULTS,
  /// MAPPING_ERROR, CID, RW, ...
  std::vector<BitField> status_fields;
  std::map<uint64_t, std::string> walker_errors;    ///< WALKER_ERROR value -> name ("PDE0")
  std::map<unsigned, std::string> permission_bits;  ///< bit of PERMISSION_FAULTS -> "Write"
};

/// Parses kb/tables/amdgpu-vm-fault.yaml's layout. Fails when a field the decoder needs
/// (MORE_FAULTS, WALKER_ERROR, PERMISSION_FAULTS, MAPPING_ERROR, CID, RW) is missing.
core::Result<VmFaultLayout> ParseVmFaultLayout(std::string_view yaml, std::string_view source);

/// The IP block an ACA bank belongs to, by its IPID's HARDWAREID and MCATYPE.
struct AcaBankIp {
  std::string ip;  ///< "UMC", "SMU", "PCS_XGMI"
  uint64_t hardware_id = 0;
  uint64_t mca_type = 0;
};

struct AcaLayout {
  std::vector<BitField> status_fields;  ///< VAL, OVERFLOW, UC, ..., ERRORCODEEXT, ERRORCODE
  std::vector<BitField> ipid_fields;    ///< MCATYPE, INSTANCEIDHI, HARDWAREID, INSTANCEIDLO
  std::vector<BitField> misc0_fields;   ///< VALID, OVRFLW, ERRCNT
  std::vector<AcaBankIp> bank_ips;
  std::vector<std::string> references;

  /// The IP of a bank's IPID word, or "" when the table does not name it.
  std::string IpOf(uint64_t ipid) const;
};

/// Parses kb/tables/amd-ras.yaml's ACA layout. Fails when STATUS or IPID fields the decoder
/// needs (VAL, UC, DEFERRED, POISON, HARDWAREID, MCATYPE) are missing.
core::Result<AcaLayout> ParseAcaLayout(std::string_view yaml, std::string_view source);

}  // namespace gputriage::catalog
