// AMD ACA (Accelerator Check Architecture) error banks in a kernel log: MI300-class GPUs report
// hardware errors as banks of MCA-style registers, one per line ("amdgpu 0000:42:00.0:
// {1}[Hardware Error]: aca entry[00].STATUS=0x98000800003e0000", or "ACA[01/04].STATUS=..." from
// newer kernels). This assembles each bank and decodes STATUS and IPID with the register layout of
// kb/tables/amd-ras.yaml (from the kernel's amdgpu_aca.h): valid, uncorrected, deferred, poisoned,
// and the IP block that reported it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/amd_layouts.h"
#include "core/model.h"

namespace gputriage::kb {

struct AcaBank {
  std::string device;                         ///< "0000:42:00.0", "" when the line names none
  int index = 0;                              ///< the bank's number in its dump
  std::map<std::string, uint64_t> registers;  ///< "STATUS", "IPID", "ADDR", "MISC0", ...
  std::string ip;                             ///< "SMU", "UMC", "PCS_XGMI" from the IPID; "" when the table has no name
  bool valid = false, uncorrected = false, deferred = false, poisoned = false;
  std::optional<uint64_t> error_code_ext;
  uint64_t line_number = 0;  ///< of its first register line
  std::string input;

  /// "ACA bank 00 of 0000:42:00.0 from SMU: valid, poisoned (POISON), ERRORCODEEXT 0x3e".
  std::string Describe() const;
  /// A valid bank whose error was not corrected: uncorrectable (UC), poisoned data, or deferred.
  /// A valid bank without these holds a corrected error, which does not fail a job by itself.
  bool NotCorrected() const { return valid && (uncorrected || poisoned || deferred); }
};

core::Json ToJson(const AcaBank& bank);

/// Feed it every kernel-log line in order; Finish hands out the banks (the first `max`).
class AcaAssembler {
 public:
  /// Decodes with `layout` (which must outlive the assembler).
  explicit AcaAssembler(const catalog::AcaLayout& layout) : layout_(&layout) {}

  /// True when the line was a bank register line.
  bool Line(std::string_view line, uint64_t line_number, std::string_view input);

  /// The banks seen, decoded, in order.
  std::vector<AcaBank> Finish();

  /// RE2 pattern of the register lines (for a prefilter).
  static std::string_view LinePattern();

  /// True once the bank cap was reached and a later bank turned away: no line changes the
  /// result any more (a prefilter can stop looking for register lines).
  bool sealed() const { return sealed_; }

 private:
  const catalog::AcaLayout* layout_;
  std::vector<AcaBank> banks_;
  bool sealed_ = false;
};

}  // namespace gputriage::kb
