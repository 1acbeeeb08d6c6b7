#include "forensics/disasm.h"

#include <capstone/capstone.h>

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "core/file.h"
#include "core/text.h"

namespace gputriage::forensics {
using core::Disassembly;
using core::Hex;
using core::Instruction;
namespace {

struct GroupFlag {
  const char* group;
  const char* flag;
};

// Capstone 4 x86 group names -> Linux /proc/cpuinfo flags (arch/x86/include/asm/cpufeatures.h).
constexpr std::array kGroupFlags = {
    GroupFlag{"3dnow", "3dnow"},  GroupFlag{"aes", "aes"},           GroupFlag{"adx", "adx"},
    GroupFlag{"avx", "avx"},      GroupFlag{"avx2", "avx2"},         GroupFlag{"avx512", "avx512f"},
    GroupFlag{"bmi", "bmi1"},     GroupFlag{"bmi2", "bmi2"},         GroupFlag{"cmov", "cmov"},
    GroupFlag{"fc16", "f16c"},    GroupFlag{"f16c", "f16c"},         GroupFlag{"fma", "fma"},
    GroupFlag{"fma4", "fma4"},    GroupFlag{"fsgsbase", "fsgsbase"}, GroupFlag{"hle", "hle"},
    GroupFlag{"mmx", "mmx"},      GroupFlag{"rtm", "rtm"},           GroupFlag{"sha", "sha_ni"},
    GroupFlag{"sse1", "sse"},     GroupFlag{"sse2", "sse2"},         GroupFlag{"sse3", "pni"},
    GroupFlag{"sse41", "sse4_1"}, GroupFlag{"sse42", "sse4_2"},      GroupFlag{"sse4a", "sse4a"},
    GroupFlag{"ssse3", "ssse3"},  GroupFlag{"pclmul", "pclmulqdq"},  GroupFlag{"xop", "xop"},
    GroupFlag{"cdi", "avx512cd"}, GroupFlag{"eri", "avx512er"},      GroupFlag{"tbm", "tbm"},
    GroupFlag{"sgx", "sgx"},      GroupFlag{"dqi", "avx512dq"},      GroupFlag{"bwi", "avx512bw"},
    GroupFlag{"pfi", "avx512pf"}, GroupFlag{"vlx", "avx512vl"},      GroupFlag{"smap", "smap"},
    GroupFlag{"fpu", "fpu"},
};

class CapstoneHandle {
 public:
  CapstoneHandle(cs_arch arch, cs_mode mode) {
    ok_ = cs_open(arch, mode, &handle_) == CS_ERR_OK;
    if (ok_) cs_option(handle_, CS_OPT_DETAIL, CS_OPT_ON);
  }
  ~CapstoneHandle() {
    if (ok_) cs_close(&handle_);
  }
  CapstoneHandle(const CapstoneHandle&) = delete;
  CapstoneHandle& operator=(const CapstoneHandle&) = delete;
  bool ok() const { return ok_; }
  csh get() const { return handle_; }

 private:
  csh handle_ = 0;
  bool ok_ = false;
};

// Owns the array cs_disasm returns.
struct Decoded {
  cs_insn* insn = nullptr;
  size_t count = 0;
  ~Decoded() {
    if (insn) cs_free(insn, count);
  }
};

std::string HexBytes(const uint8_t* bytes, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    if (i) out.push_back(' ');
    out += fmt::format("{:02x}", bytes[i]);
  }
  return out;
}

Instruction ToInstruction(const cs_insn& insn, uint64_t pc) {
  Instruction out;
  out.address = insn.address;
  out.bytes = HexBytes(insn.bytes, insn.size);
  out.text = insn.op_str[0] ? fmt::format("{} {}", insn.mnemonic, insn.op_str) : insn.mnemonic;
  out.faulting = insn.address == pc;
  return out;
}

void NoteIsa(csh handle, const cs_insn& insn, const std::set<std::string>& cpu_flags, Disassembly& out) {
  if (!insn.detail) return;
  for (uint8_t i = 0; i < insn.detail->groups_count; ++i) {
    const char* name = cs_group_name(handle, insn.detail->groups[i]);
    if (!name) continue;
    std::string flag = CpuFlagForGroup(name);
    if (flag.empty()) continue;
    out.isa_extensions.push_back(flag);
    if (!cpu_flags.empty() && !cpu_flags.count(flag)) out.missing_on_cpu.push_back(flag);
  }
}

}  // namespace

std::set<std::string> HostCpuFlags() {
  constexpr size_t kMaxCpuinfoBytes = 16u << 20;
  return ParseCpuFlags(core::ReadFile("/proc/cpuinfo", kMaxCpuinfoBytes).value_or(""));
}

std::set<std::string> ParseCpuFlags(std::string_view cpuinfo) {
  std::set<std::string> flags;
  for (std::string_view line : core::SplitLines(cpuinfo)) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = core::Trim(line.substr(0, colon));
    if (key != "flags" && key != "Features") continue;
    for (std::string_view flag : core::SplitWhitespace(line.substr(colon + 1))) {
      flags.emplace(flag);
    }
    break;
  }
  return flags;
}

std::string CpuFlagForGroup(std::string_view group) {
  for (const GroupFlag& g : kGroupFlags) {
    if (group == g.group) return g.flag;
  }
  return {};
}

std::string_view HostArch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "unknown";
#endif
}

Disassembly DisassembleAround(const MemoryReader& read, std::string_view arch, uint64_t pc,
                              std::optional<uint64_t> function_start, const std::set<std::string>& cpu_flags,
                              const DisassemblyWindow& window) {
  Disassembly out;
  out.arch = std::string(arch);
  cs_arch cs_a;
  cs_mode cs_m;
  if (arch == "x86_64") {
    cs_a = CS_ARCH_X86;
    cs_m = CS_MODE_64;
  } else if (arch == "aarch64") {
    cs_a = CS_ARCH_ARM64;
    cs_m = CS_MODE_ARM;
  } else {
    out.note = fmt::format("no disassembler for architecture {}", arch);
    return out;
  }
  CapstoneHandle handle(cs_a, cs_m);
  if (!handle.ok()) {
    out.note = "Capstone could not be opened for this architecture";
    return out;
  }
  constexpr size_t kTail = 96;  // bytes decoded after the PC: enough for `after` instructions
  std::vector<uint8_t> at_pc = read(pc, 16);
  if (at_pc.empty()) {
    out.note = fmt::format(
        "pc {} is not readable memory: execution jumped to a bad address (a corrupted function "
        "pointer, vtable or return address)",
        Hex(pc));
    return out;
  }
  uint64_t start = pc;
  bool from_function = function_start && *function_start <= pc && pc - *function_start <= window.max_function_prefix;
  if (from_function) start = *function_start;
  std::vector<uint8_t> bytes = read(start, static_cast<size_t>(pc - start) + kTail);
  if (bytes.size() < pc - start + 1) {  // the function prefix was not readable
    start = pc;
    from_function = false;
    bytes = read(pc, kTail);
  }
  Decoded decoded;
  decoded.count = cs_disasm(handle.get(), bytes.data(), bytes.size(), start, 0, &decoded.insn);
  size_t fault_index = decoded.count;
  for (size_t i = 0; i < decoded.count; ++i) {
    if (decoded.insn[i].address == pc) {
      fault_index = i;
      break;
    }
    if (decoded.insn[i].address > pc) break;
  }
  if (fault_index == decoded.count && from_function) {
    // Decoding from the function start did not land on the PC (data in code, or a symbol that
    // is not the real start): decode from the PC alone.
    Decoded retry;
    bytes = read(pc, kTail);
    retry.count = cs_disasm(handle.get(), bytes.data(), bytes.size(), pc, 0, &retry.insn);
    std::swap(decoded.insn, retry.insn);
    std::swap(decoded.count, retry.count);
    fault_index = decoded.count > 0 ? 0 : decoded.count;
    from_function = false;
  }
  if (fault_index == decoded.count) {
    Instruction bad;
    bad.address = pc;
    bad.bytes = HexBytes(at_pc.data(), std::min<size_t>(at_pc.size(), 8));
    bad.text = "(bad)";
    bad.faulting = true;
    out.instructions.push_back(std::move(bad));
    out.note = fmt::format(
        "the bytes at pc {} do not decode as a {} instruction this "
        "disassembler knows",
        Hex(pc), arch);
    return out;
  }
  size_t first = fault_index > window.before ? fault_index - window.before : 0;
  size_t last = std::min(decoded.count, fault_index + window.after + 1);
  for (size_t i = first; i < last; ++i) out.instructions.push_back(ToInstruction(decoded.insn[i], pc));
  if (cs_a == CS_ARCH_X86) NoteIsa(handle.get(), decoded.insn[fault_index], cpu_flags, out);
  if (!from_function) {
    out.note =
        "instructions before the faulting one are not shown: the start of the function "
        "is not known";
  }
  return out;
}

}  // namespace gputriage::forensics
