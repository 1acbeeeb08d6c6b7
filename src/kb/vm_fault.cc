#include "kb/vm_fault.h"

#include <charconv>

#include <fmt/format.h>
#include <re2/re2.h>

#include "core/text.h"

namespace gputriage::kb {
namespace {

std::optional<uint64_t> Number(std::string_view text) {
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
    base = 16;
  }
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<uint32_t> Small(std::string_view text) {
  auto v = Number(text);
  if (!v || *v > 0xffffffffu) return std::nullopt;
  return static_cast<uint32_t>(*v);
}

const RE2& HeaderRe() {
  // kb/tables/amdgpu-vm-fault.yaml log_lines.header formats.
  static const RE2 re(
      R"(\[((?:gfx|mm)hub\d*)\] (?:(no-retry|retry) )?(?:VMC )?page fault \(src_id:(\d+) ring:(\d+) vm_?id:(\d+) pas_?id:(\d+))");
  return re;
}

// Continuation lines: which field a line carries.
enum class Field { kNone, kProcess, kAddress, kStatus, kClient, kBit };

Field Classify(std::string_view line) {
  if (line.find("PROTECTION_FAULT_STATUS:") != std::string_view::npos) return Field::kStatus;
  if (line.find("in page starting at address") != std::string_view::npos ||
      line.find(" at page 0x") != std::string_view::npos) {
    return Field::kAddress;
  }
  if (line.find("Faulty UTCL2 client ID:") != std::string_view::npos) return Field::kClient;
  static const RE2 kBit(R"(\b(?:MORE_FAULTS|WALKER_ERROR|PERMISSION_FAULTS|MAPPING_ERROR|RW): 0x[0-9a-fA-F]+\s*$)");
  if (RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), kBit)) return Field::kBit;
  static const RE2 kProcess(R"(^(?:.*:)?\s+in process \S* pid \d+ thread \S* pid \d+)");
  if (RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), kProcess)) return Field::kProcess;
  return Field::kNone;
}

void Apply(VmFault& f, std::string_view line, Field field) {
  re2::StringPiece text(line.data(), line.size());
  ++f.lines;
  switch (field) {
    case Field::kProcess: {
      static const RE2 re(R"(in process (\S*) pid (\d+))");
      std::string name, pid;
      if (RE2::PartialMatch(text, re, &name, &pid)) {
        f.process = core::SanitizeUtf8(name);
        if (auto p = Number(pid)) f.pid = static_cast<int64_t>(*p);
      }
      break;
    }
    case Field::kAddress: {
      static const RE2 re(R"((?:in page starting at address|at page) (0x[0-9a-fA-F]+))");
      std::string address;
      if (RE2::PartialMatch(text, re, &address)) f.address = Number(address);
      break;
    }
    case Field::kStatus: {
      static const RE2 re(R"(PROTECTION_FAULT_STATUS:(0x[0-9a-fA-F]+))");
      std::string status;
      if (RE2::PartialMatch(text, re, &status)) f.status = Small(status);
      break;
    }
    case Field::kClient: {
      static const RE2 named(R"(Faulty UTCL2 client ID: (\S+) \((0x[0-9a-fA-F]+)\))");
      static const RE2 bare(R"(Faulty UTCL2 client ID: (0x[0-9a-fA-F]+))");
      std::string name, id;
      if (RE2::PartialMatch(text, named, &name, &id)) {
        f.client = core::SanitizeUtf8(name);
        f.client_id = Small(id);
      } else if (RE2::PartialMatch(text, bare, &id)) {
        f.client_id = Small(id);
      }
      break;
    }
    case Field::kBit: {
      static const RE2 re(R"(\b(MORE_FAULTS|WALKER_ERROR|PERMISSION_FAULTS|MAPPING_ERROR|RW): (0x[0-9a-fA-F]+))");
      std::string name, value;
      if (!RE2::PartialMatch(text, re, &name, &value)) break;
      std::optional<uint32_t> v = Small(value);
      if (name == "MORE_FAULTS") f.more_faults = v;
      if (name == "WALKER_ERROR") f.walker_error = v;
      if (name == "PERMISSION_FAULTS") f.permission_faults = v;
      if (name == "MAPPING_ERROR") f.mapping_error = v;
      if (name == "RW") f.rw = v;
      break;
    }
    case Field::kNone:
      break;
  }
}

// kb/tables/amdgpu-vm-fault.yaml status_register: the same fields the driver prints, from the
// raw word, for blocks whose field lines are missing (rate-limited, or a kernel that prints
// only the status).
void DecodeStatus(VmFault& f, const catalog::VmFaultLayout& layout) {
  if (!f.status || *f.status == 0) return;
  uint32_t s = *f.status;
  bool decoded = false;
  auto fill = [&](std::optional<uint32_t>& field, std::string_view name) {
    const catalog::BitField* bits = catalog::FindField(layout.status_fields, name);
    if (field || bits == nullptr) return;
    field = static_cast<uint32_t>(bits->Extract(s));
    decoded = true;
  };
  fill(f.more_faults, "MORE_FAULTS");
  fill(f.walker_error, "WALKER_ERROR");
  fill(f.permission_faults, "PERMISSION_FAULTS");
  fill(f.mapping_error, "MAPPING_ERROR");
  fill(f.client_id, "CID");
  fill(f.rw, "RW");
  f.fields_from_status = decoded;
}

}  // namespace

std::string_view VmFaultLinePattern() {
  return R"(\[(?:gfx|mm)hub\d*\] (?:no-retry |retry )?(?:VMC )?page fault|PROTECTION_FAULT_STATUS:)";
}

VmFaultAssembler::LineKind VmFaultAssembler::Line(std::string_view line, uint64_t line_number, std::string_view input,
                                                  std::vector<VmFault>* done) {
  re2::StringPiece text(line.data(), line.size());
  std::string hub, retry, src_id, ring, vmid, pasid, process, pid;
  if (line.find("page fault") != std::string_view::npos &&
      RE2::PartialMatch(text, HeaderRe(), &hub, &retry, &src_id, &ring, &vmid, &pasid)) {
    static const RE2 kProcess(R"(, for process (\S*) pid (\d+))");
    RE2::PartialMatch(text, kProcess, &process, &pid);
    EmitCurrent(done);  // a new header ends the block before
    VmFault f;
    f.hub = hub;
    f.retry = retry;
    f.src_id = Small(src_id);
    f.ring = Small(ring);
    f.vmid = Small(vmid);
    f.pasid = Small(pasid);
    f.process = core::SanitizeUtf8(process);
    if (auto p = Number(pid)) f.pid = static_cast<int64_t>(*p);
    f.line_number = line_number;
    f.input = std::string(input);
    f.lines = 1;
    // Field lines seen before this header are either its own (a newest-first log) or the tail
    // of an earlier block whose header was cut off; the next line tells which.
    pending_ = std::move(orphans_);
    pending_input_ = std::move(orphans_input_);
    orphans_.clear();
    current_ = std::move(f);
    return LineKind::kHeader;
  }
  Field field = Classify(line);
  if (current_ && !pending_.empty()) {
    if (field == Field::kAddress || field == Field::kProcess) {
      // Printed in order after all: the earlier field lines were another block's tail.
      FlushHeaderless(pending_, pending_input_, done);
    } else {
      for (const auto& [pending, n] : pending_) Apply(*current_, pending, Classify(pending));
      current_reversed_ = true;
    }
    pending_.clear();
  }
  if (field == Field::kNone) {
    Close(done);
    return LineKind::kOther;
  }
  if (current_ && !current_reversed_ &&
      (current_has_continuation_ || field == Field::kAddress || field == Field::kProcess)) {
    // Printed in order: the address (or process) line follows its header directly.
    Apply(*current_, line, field);
    current_has_continuation_ = true;
    return LineKind::kContinuation;
  }
  // A field line right after a header, but not its address, or after a block assembled
  // newest first: this line belongs to the next header.
  EmitCurrent(done);
  if (orphans_.empty()) orphans_input_ = std::string(input);
  if (orphans_.size() < 16) orphans_.emplace_back(std::string(line.substr(0, 400)), line_number);
  return LineKind::kContinuation;
}

void VmFaultAssembler::EmitCurrent(std::vector<VmFault>* done) {
  if (current_ && !pending_.empty()) {
    // Nothing followed the header: the field lines before it were its own.
    for (const auto& [pending, n] : pending_) Apply(*current_, pending, Classify(pending));
  }
  pending_.clear();
  if (current_) {
    DecodeStatus(*current_, *layout_);
    done->push_back(std::move(*current_));
    current_.reset();
  }
  current_has_continuation_ = false;
  current_reversed_ = false;
}

void VmFaultAssembler::Close(std::vector<VmFault>* done) {
  EmitCurrent(done);
  FlushHeaderless(orphans_, orphans_input_, done);
  orphans_.clear();
}

void VmFaultAssembler::FlushHeaderless(const std::vector<std::pair<std::string, uint64_t>>& lines,
                                       const std::string& input, std::vector<VmFault>* done) const {
  // Field lines whose header never came (rate-limited or cut off): an event only when they
  // carry the status.
  if (lines.empty()) return;
  VmFault f;
  f.line_number = lines.front().second;
  f.input = input;
  for (const auto& [line, n] : lines) Apply(f, line, Classify(line));
  if (!f.status) return;
  DecodeStatus(f, *layout_);
  done->push_back(std::move(f));
}

void VmFaultAssembler::Finish(std::vector<VmFault>* done) { Close(done); }

std::string VmFault::Describe() const {
  std::string out = "amdgpu VM fault";
  if (!hub.empty()) out += " on " + hub;
  if (!retry.empty()) out += " (" + retry + ")";
  std::vector<std::string> parts;
  std::string access;
  if (rw) access = *rw ? "write" : "read";
  if (!client.empty() || client_id) {
    std::string who = !client.empty() ? client : "client";
    if (client_id) who += fmt::format(" ({:#x})", *client_id);
    access += (access.empty() ? "access by " : " by ") + who;
  }
  if (address) access += fmt::format("{}at page {:#x}", access.empty() ? "" : " ", *address);
  if (!access.empty()) parts.push_back(access);
  if (vmid || pasid) {
    parts.push_back(
        fmt::format("vmid {} pasid {}", vmid ? std::to_string(*vmid) : "?", pasid ? std::to_string(*pasid) : "?"));
  }
  if (!process.empty() || (pid && *pid != 0)) {
    parts.push_back(
        fmt::format("process {} pid {}", process.empty() ? "?" : process, pid ? std::to_string(*pid) : "?"));
  } else if (pid && *pid == 0) {
    parts.push_back("no process");
  }
  if (permission_faults && *permission_faults)
    parts.push_back(fmt::format("permission faults {:#x}", *permission_faults));
  if (walker_error && *walker_error) parts.push_back(fmt::format("walker error {:#x}", *walker_error));
  if (mapping_error && *mapping_error) parts.push_back("mapping error");
  if (more_faults && *more_faults) parts.push_back("more faults followed");
  if (fields_from_status) parts.push_back("fields decoded from the status word");
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : ": ") + parts[i];
  return out;
}

core::Json ToJson(const VmFault& f) {
  auto opt = [](const auto& v) { return v ? core::Json(*v) : core::Json(nullptr); };
  core::Json j = {{"hub", f.hub.empty() ? core::Json(nullptr) : core::Json(f.hub)},
                  {"retry", f.retry.empty() ? core::Json(nullptr) : core::Json(f.retry)},
                  {"src_id", opt(f.src_id)},
                  {"ring", opt(f.ring)},
                  {"vmid", opt(f.vmid)},
                  {"pasid", opt(f.pasid)},
                  {"process", f.process.empty() ? core::Json(nullptr) : core::Json(f.process)},
                  {"pid", opt(f.pid)},
                  {"address", f.address ? core::Json(fmt::format("{:#018x}", *f.address)) : core::Json(nullptr)},
                  {"status", f.status ? core::Json(fmt::format("{:#010x}", *f.status)) : core::Json(nullptr)},
                  {"client", f.client.empty() ? core::Json(nullptr) : core::Json(f.client)},
                  {"client_id", opt(f.client_id)},
                  {"access", f.rw ? core::Json(*f.rw ? "write" : "read") : core::Json(nullptr)},
                  {"more_faults", opt(f.more_faults)},
                  {"walker_error", opt(f.walker_error)},
                  {"permission_faults", opt(f.permission_faults)},
                  {"mapping_error", opt(f.mapping_error)},
                  {"fields_from_status", f.fields_from_status},
                  {"line", fmt::format("{}:{}", f.input, f.line_number)},
                  {"lines", f.lines},
                  {"summary", f.Describe()}};
  return j;
}

}  // namespace gputriage::kb
