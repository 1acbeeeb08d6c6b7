// amdgpu GPU VM (page) fault blocks in a kernel log. The driver prints one fault as several
// lines (kb/tables/amdgpu-vm-fault.yaml): a header ("[gfxhub0] no-retry page fault (src_id:0
// ring:173 vmid:8 pasid:32772, for process clinfo pid 1382 ...)"), the address line, the L2
// protection fault status and its decoded fields. This assembles them into one event, in
// either order (`journalctl -r` prints them newest first), decoding the status word itself when
// the field lines are missing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/amd_layouts.h"
#include "core/model.h"

namespace gputriage::kb {

struct VmFault {
  std::string hub;    ///< "gfxhub0", "mmhub0", "gfxhub"; empty when the header was not seen
  std::string retry;  ///< "retry", "no-retry" or ""
  std::optional<uint32_t> src_id, ring, vmid, pasid;
  std::string process;  ///< owning process name ("" when none was found)
  std::optional<int64_t> pid;
  std::optional<uint64_t> address;  ///< faulting page (GPU virtual address)
  std::optional<uint32_t> status;   ///< raw L2 protection fault status
  std::string client;               ///< UTCL2 client name ("CPC", "SDMA0") when printed
  std::optional<uint32_t> client_id;
  std::optional<uint32_t> more_faults, walker_error, permission_faults, mapping_error, rw;
  bool fields_from_status = false;  ///< the fields were decoded from `status`, not printed
  uint64_t line_number = 0;         ///< of the header (or the first line seen)
  std::string input;
  int lines = 0;  ///< how many log lines made this event

  /// "amdgpu VM fault on gfxhub0 (no-retry): write by CPC (0x5) at page 0x0, vmid 8 pasid 32772,
  /// process clinfo pid 1382, permission faults 0x5, more faults followed".
  std::string Describe() const;
};

core::Json ToJson(const VmFault& fault);

/// Feed it every kernel-log line in order; it hands out complete events.
class VmFaultAssembler {
 public:
  enum class LineKind { kOther, kHeader, kContinuation };

  /// Decodes status words with `layout` (which must outlive the assembler).
  explicit VmFaultAssembler(const catalog::VmFaultLayout& layout) : layout_(&layout) {}

  /// Looks at one line. Returns what it was; complete events are appended to *done.
  LineKind Line(std::string_view line, uint64_t line_number, std::string_view input, std::vector<VmFault>* done);

  /// Ends the input: whatever is open is complete.
  void Finish(std::vector<VmFault>* done);

  /// True while a block is being assembled (its next lines must still be seen).
  bool open() const { return current_.has_value() || !orphans_.empty() || !pending_.empty(); }

 private:
  std::optional<VmFault> current_;
  bool current_has_continuation_ = false;                  // a field line followed the header
  bool current_reversed_ = false;                          // its field lines came before the header
  std::vector<std::pair<std::string, uint64_t>> orphans_;  // continuation lines before their header
  std::string orphans_input_;
  std::vector<std::pair<std::string, uint64_t>> pending_;  // orphans before the open header
  std::string pending_input_;
  void FlushHeaderless(const std::vector<std::pair<std::string, uint64_t>>& lines, const std::string& input,
                       std::vector<VmFault>* done) const;
  const catalog::VmFaultLayout* layout_;
  void EmitCurrent(std::vector<VmFault>* done);  // the open event, if any
  void Close(std::vector<VmFault>* done);        // that, and field lines without a header
};

/// RE2 pattern of the lines that start or belong to a fault block (for a prefilter).
std::string_view VmFaultLinePattern();

}  // namespace gputriage::kb
