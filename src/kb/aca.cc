#include "kb/aca.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include "core/text.h"

namespace gputriage::kb {
namespace {

constexpr size_t kMaxBanks = 64;

bool Bit(const catalog::AcaLayout& layout, std::string_view field, uint64_t status) {
  const catalog::BitField* f = catalog::FindField(layout.status_fields, field);
  return f != nullptr && f->Extract(status) != 0;
}

void Decode(const catalog::AcaLayout& layout, AcaBank& bank) {
  if (auto status = bank.registers.find("STATUS"); status != bank.registers.end()) {
    bank.valid = Bit(layout, "VAL", status->second);
    bank.uncorrected = Bit(layout, "UC", status->second);
    bank.deferred = Bit(layout, "DEFERRED", status->second);
    bank.poisoned = Bit(layout, "POISON", status->second);
    if (const catalog::BitField* ext = catalog::FindField(layout.status_fields, "ERRORCODEEXT")) {
      bank.error_code_ext = ext->Extract(status->second);
    }
  }
  if (auto ipid = bank.registers.find("IPID"); ipid != bank.registers.end()) bank.ip = layout.IpOf(ipid->second);
}

}  // namespace

std::string_view AcaAssembler::LinePattern() { return R"((?:aca entry\[\d+\]|ACA\[\d+/\d+\])\.\w+=0x)"; }

bool AcaAssembler::Line(std::string_view line, uint64_t line_number, std::string_view input) {
  if (sealed_ || line.find("=0x") == std::string_view::npos) return false;
  static const RE2 kEntry(R"((?:aca entry\[(\d+)\]|ACA\[(\d+)/\d+\])\.(\w+)=0x([0-9a-fA-F]{1,16})\b)");
  static const RE2 kDevice(R"(\b(?:amdgpu|aca) ([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]):)");
  re2::StringPiece text(line.data(), line.size());
  std::string old_index, new_index, name, value, device;
  if (!RE2::PartialMatch(text, kEntry, &old_index, &new_index, &name, &value)) return false;
  RE2::PartialMatch(text, kDevice, &device);
  int index = static_cast<int>(core::ParseU64(old_index.empty() ? new_index : old_index, 10).value_or(0));
  std::optional<uint64_t> word = core::ParseU64(value, 16);
  if (!word) return false;
  // A register of the same bank continues it; another bank, device or a repeated register
  // starts the next one.
  bool same = !banks_.empty() && banks_.back().index == index && banks_.back().device == device &&
              banks_.back().registers.count(name) == 0;
  if (!same) {
    if (banks_.size() >= kMaxBanks) {
      sealed_ = true;  // the last bank is closed: a register for it later would be a new dump's
      return true;
    }
    AcaBank bank;
    bank.device = device;
    bank.index = index;
    bank.line_number = line_number;
    bank.input = std::string(input);
    banks_.push_back(std::move(bank));
  }
  banks_.back().registers[name] = *word;
  return true;
}

std::vector<AcaBank> AcaAssembler::Finish() {
  for (AcaBank& bank : banks_) Decode(*layout_, bank);
  return std::move(banks_);
}

std::string AcaBank::Describe() const {
  std::string out = fmt::format("ACA bank {:02}", index);
  if (!device.empty()) out += " of " + device;
  if (!ip.empty()) out += " from " + ip;
  std::vector<std::string> parts;
  parts.push_back(valid ? "valid" : "not valid (VAL clear)");
  if (uncorrected) parts.push_back("uncorrected (UC)");
  if (deferred) parts.push_back("deferred (DEFERRED)");
  if (poisoned) parts.push_back("poisoned data (POISON)");
  if (error_code_ext && *error_code_ext) parts.push_back(fmt::format("ERRORCODEEXT {:#x}", *error_code_ext));
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : ": ") + parts[i];
  return out;
}

core::Json ToJson(const AcaBank& b) {
  core::Json registers = core::Json::object();
  for (const auto& [name, value] : b.registers) registers[name] = fmt::format("{:#018x}", value);
  return {{"device", b.device.empty() ? core::Json(nullptr) : core::Json(b.device)},
          {"bank", b.index},
          {"ip", b.ip.empty() ? core::Json(nullptr) : core::Json(b.ip)},
          {"valid", b.valid},
          {"uncorrected", b.uncorrected},
          {"deferred", b.deferred},
          {"poisoned", b.poisoned},
          {"error_code_ext", b.error_code_ext ? core::Json(*b.error_code_ext) : core::Json(nullptr)},
          {"registers", registers},
          {"line", fmt::format("{}:{}", b.input, b.line_number)},
          {"summary", b.Describe()}};
}

}  // namespace gputriage::kb
