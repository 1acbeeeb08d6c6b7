#include "corefile/core_notes.h"

#include <elf.h>
#include <signal.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/byte_reader.h"
#include "corefile/elf_image.h"

namespace gputriage::corefile {
namespace {

using core::ByteReader;
using core::CheckedMul;
using core::RangeInside;
using internal::CoreImage;

// Layout of struct elf_prstatus on 64-bit Linux (include/uapi/linux/elfcore.h): pr_info
// (3 ints), pr_cursig (short) at 12, pr_pid at 32, pr_reg at 112 after the four timevals.
constexpr uint64_t kPrstatusCursig = 12;
constexpr uint64_t kPrstatusPid = 32;
constexpr uint64_t kPrstatusReg = 112;
// struct elf_prpsinfo (64-bit): pr_pid at 24, pr_fname[16] at 40, pr_psargs[80] at 56.
constexpr uint64_t kPrpsinfoPid = 24;
constexpr uint64_t kPrpsinfoFname = 40;
constexpr uint64_t kPrpsinfoFnameSize = 16;
constexpr uint64_t kPrpsinfoPsargs = 56;
constexpr uint64_t kPrpsinfoPsargsSize = 80;
// siginfo_t: si_signo, si_errno, si_code, then the union at 16 (si_addr, or si_pid + si_uid).
constexpr uint64_t kSiginfoCode = 8;
constexpr uint64_t kSiginfoUnion = 16;

// x86_64 struct user_regs_struct, in its order (the index is the slot in pr_reg).
constexpr std::array<const char*, 27> kX86UserRegs = {
    "r15", "r14",      "r13", "r12", "rbp",    "rbx", "r11", "r10",     "r9",      "r8", "rax", "rcx", "rdx", "rsi",
    "rdi", "orig_rax", "rip", "cs",  "eflags", "rsp", "ss",  "fs_base", "gs_base", "ds", "es",  "fs",  "gs"};
// The order we present them in (gdb's), as names looked up in kX86UserRegs.
constexpr std::array<const char*, 27> kX86Presented = {
    "rax", "rbx", "rcx", "rdx",    "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10",     "r11",     "r12",     "r13",
    "r14", "r15", "rip", "eflags", "cs",  "ss",  "ds",  "es",  "fs", "gs", "fs_base", "gs_base", "orig_rax"};
constexpr size_t kAarch64Regs = 34;
// A kernel core's notes take ~3 KB per thread (prstatus, fpregs, xstate); anything far larger
// is garbage, and libelf would allocate it in one piece when reading from a file.
constexpr uint64_t kMaxNoteSegmentBytes = 256ull << 20;  // struct user_pt_regs: regs[31], sp, pc, pstate

std::string MachineName(uint16_t machine) {
  if (machine == EM_X86_64) return "x86_64";
  if (machine == EM_AARCH64) return "aarch64";
  return "EM_" + std::to_string(machine);
}

std::string NoteTypeName(uint32_t type) {
  switch (type) {
    case NT_PRSTATUS:
      return "NT_PRSTATUS";
    case NT_PRFPREG:
      return "NT_PRFPREG";
    case NT_PRPSINFO:
      return "NT_PRPSINFO";
    case NT_AUXV:
      return "NT_AUXV";
    case NT_SIGINFO:
      return "NT_SIGINFO";
    case NT_FILE:
      return "NT_FILE";
    default:
      return fmt::format("type 0x{:x}", type);
  }
}

// Collects the parse state of all notes.
class NoteParser {
 public:
  NoteParser(uint16_t machine, CoreNotes* notes) : machine_(machine), notes_(notes) {}

  // One note of owner "CORE" with descriptor `desc` starting at file offset `file_offset`.
  void Parse(uint32_t type, std::string_view desc, uint64_t file_offset) {
    ByteReader reader(desc);
    std::string where =
        fmt::format("{} note at offset 0x{:x} ({} bytes)", NoteTypeName(type), file_offset, desc.size());
    switch (type) {
      case NT_PRSTATUS:
        ParsePrstatus(reader, where);
        break;
      case NT_PRPSINFO:
        ParsePrpsinfo(reader, where);
        break;
      case NT_SIGINFO:
        ParseSiginfo(reader, where);
        break;
      case NT_FILE:
        ParseFile(reader, where);
        break;
      case NT_AUXV:
        ParseAuxv(reader, where);
        break;
      default:
        break;
    }
  }

  void Warn(std::string message) {
    auto& warnings = notes_->warnings;
    if (std::find(warnings.begin(), warnings.end(), message) == warnings.end()) {
      warnings.push_back(std::move(message));
    }
  }

  size_t prstatus_notes() const { return prstatus_notes_; }

 private:
  void ParsePrstatus(const ByteReader& reader, const std::string& where) {
    ++prstatus_notes_;
    size_t reg_count = machine_ == EM_X86_64 ? kX86UserRegs.size() : machine_ == EM_AARCH64 ? kAarch64Regs : 0;
    uint64_t needed = kPrstatusReg + reg_count * 8;
    auto cursig = reader.I16(kPrstatusCursig);
    auto tid = reader.I32(kPrstatusPid);
    if (!cursig || !tid || reader.size() < needed) {
      Warn(fmt::format("{}: too short for {} prstatus (needs {} bytes); thread skipped", where, MachineName(machine_),
                       needed));
      return;
    }
    CoreThread thread;
    thread.tid = *tid;
    if (*cursig != 0) thread.signal = *cursig;
    if (machine_ == EM_X86_64) {
      for (const char* name : kX86Presented) {
        size_t slot = std::find_if(kX86UserRegs.begin(), kX86UserRegs.end(),
                                   [&](const char* n) { return std::strcmp(n, name) == 0; }) -
                      kX86UserRegs.begin();
        thread.registers.push_back({name, *reader.U64(kPrstatusReg + slot * 8)});
      }
    } else if (machine_ == EM_AARCH64) {
      for (size_t i = 0; i < kAarch64Regs; ++i) {
        std::string name = i < 31 ? "x" + std::to_string(i) : i == 31 ? "sp" : i == 32 ? "pc" : "pstate";
        thread.registers.push_back({std::move(name), *reader.U64(kPrstatusReg + i * 8)});
      }
    }
    notes_->threads.push_back(std::move(thread));
  }

  void ParsePrpsinfo(const ByteReader& reader, const std::string& where) {
    auto pid = reader.I32(kPrpsinfoPid);
    auto fname = reader.Bytes(kPrpsinfoFname, kPrpsinfoFnameSize);
    auto psargs = reader.Bytes(kPrpsinfoPsargs, kPrpsinfoPsargsSize);
    if (!pid || !fname || !psargs) {
      Warn(fmt::format("{}: too short for prpsinfo (needs {} bytes); skipped", where,
                       kPrpsinfoPsargs + kPrpsinfoPsargsSize));
      return;
    }
    notes_->pid = *pid;
    notes_->name = std::string(TrimField(*fname));
    notes_->args = std::string(TrimField(*psargs));
  }

  void ParseSiginfo(const ByteReader& reader, const std::string& where) {
    auto signo = reader.I32(0);
    auto code = reader.I32(kSiginfoCode);
    auto addr = reader.U64(kSiginfoUnion);
    auto sender = reader.I32(kSiginfoUnion);
    if (!signo || !code || !addr || !sender) {
      Warn(fmt::format("{}: too short for siginfo (needs {} bytes); skipped", where, kSiginfoUnion + 8));
      return;
    }
    // Signal 0: no signal at all. A core of a process that was running when it was written
    // (gcore, `gputriage capture --core`) has an empty siginfo; read as a signal it would be
    // "SIG0 was sent by another process".
    if (*signo == 0) return;
    notes_->signal = *signo;
    notes_->si_code = *code;
    bool fault_signal =
        *signo == SIGSEGV || *signo == SIGBUS || *signo == SIGILL || *signo == SIGFPE || *signo == SIGTRAP;
    if (fault_signal && *code > 0) notes_->fault_address = *addr;
    if (*code == SI_USER || *code == SI_QUEUE || *code == SI_TKILL) notes_->sender_pid = *sender;
  }

  // NT_FILE: count, page_size, count * {start, end, page_offset}, then count NUL-terminated
  // paths (fs/binfmt_elf.c fill_files_note).
  void ParseFile(const ByteReader& reader, const std::string& where) {
    auto count = reader.U64(0);
    auto page_size = reader.U64(8);
    if (!count || !page_size) {
      Warn(fmt::format("{}: too short for the file table header (16 bytes); skipped", where));
      return;
    }
    uint64_t max_entries = (reader.size() - 16) / 24;
    if (*count > max_entries) {
      Warn(fmt::format("{}: claims {} files but has room for at most {}; skipped", where, *count, max_entries));
      return;
    }
    uint64_t path_offset = 16 + *count * 24;  // no overflow: count <= size / 24
    std::vector<core::Mapping> files;
    files.reserve(*count);
    for (uint64_t i = 0; i < *count; ++i) {
      uint64_t entry = 16 + i * 24;
      uint64_t start = *reader.U64(entry), end = *reader.U64(entry + 8);
      uint64_t page_offset = *reader.U64(entry + 16);
      auto path = reader.CString(path_offset);
      if (!path) {
        Warn(
            fmt::format("{}: path of file {} of {} at note offset 0x{:x} is missing or not "
                        "NUL-terminated; the remaining files are skipped",
                        where, i, *count, path_offset));
        break;
      }
      path_offset += path->size() + 1;
      auto file_offset = CheckedMul(page_offset, *page_size);
      if (start > end || !file_offset) {
        Warn(
            fmt::format("{}: file {} ({}) has a bad range 0x{:x}-0x{:x} page offset 0x{:x} page "
                        "size 0x{:x}; entry skipped",
                        where, i, *path, start, end, page_offset, *page_size));
        continue;
      }
      core::Mapping mapping;
      mapping.start = start;
      mapping.end = end;
      mapping.file_offset = *file_offset;
      mapping.path = std::string(*path);
      files.push_back(std::move(mapping));
    }
    notes_->files = std::move(files);
  }

  void ParseAuxv(const ByteReader& reader, const std::string& where) {
    std::vector<std::pair<uint64_t, uint64_t>> auxv;
    uint64_t offset = 0;
    for (; offset + 16 <= reader.size(); offset += 16) {
      uint64_t type = *reader.U64(offset);
      if (type == AT_NULL) break;
      auxv.emplace_back(type, *reader.U64(offset + 8));
    }
    if (offset + 16 > reader.size() && reader.size() % 16 != 0) {
      Warn(
          fmt::format("{}: ends inside an entry (size is not a multiple of 16); the partial "
                      "entry is skipped",
                      where));
    }
    notes_->auxv = std::move(auxv);
  }

  // A fixed-size char array field: up to the first NUL, without trailing spaces.
  static std::string_view TrimField(std::string_view field) {
    field = field.substr(0, field.find('\0'));
    while (!field.empty() && (field.back() == ' ' || field.back() == '\0')) field.remove_suffix(1);
    return field;
  }

  uint16_t machine_;
  CoreNotes* notes_;
  size_t prstatus_notes_ = 0;
};

// Walks every note of the PT_NOTE segment `phdr` with gelf_getnote.
void ParseNoteSegment(const CoreImage& image, const GElf_Phdr& phdr, NoteParser& parser, size_t* note_count) {
  if (phdr.p_filesz == 0) return;
  if (phdr.p_filesz > kMaxNoteSegmentBytes) {
    parser.Warn(
        fmt::format("PT_NOTE at offset 0x{:x} size 0x{:x}: larger than the 0x{:x} bytes "
                    "we read (a core of ~100000 threads); skipped",
                    phdr.p_offset, phdr.p_filesz, kMaxNoteSegmentBytes));
    return;
  }
  Elf_Type type = phdr.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR;
  Elf_Data* data = elf_getdata_rawchunk(image.elf.get(), static_cast<int64_t>(phdr.p_offset), phdr.p_filesz, type);
  if (data == nullptr || data->d_buf == nullptr) {
    parser.Warn(fmt::format("PT_NOTE at offset 0x{:x} size 0x{:x}: cannot be read: {}; skipped", phdr.p_offset,
                            phdr.p_filesz, elf_errmsg(-1)));
    return;
  }
  ByteReader segment(std::string_view(static_cast<const char*>(data->d_buf), data->d_size));
  size_t offset = 0;
  while (offset < data->d_size) {
    GElf_Nhdr nhdr;
    size_t name_offset = 0, desc_offset = 0;
    size_t next = gelf_getnote(data, offset, &nhdr, &name_offset, &desc_offset);
    if (next == 0 || next <= offset) {
      parser.Warn(
          fmt::format("PT_NOTE at offset 0x{:x}: damaged note header at offset 0x{:x}; "
                      "the remaining 0x{:x} bytes of the segment are skipped",
                      phdr.p_offset, phdr.p_offset + offset, data->d_size - offset));
      return;
    }
    ++*note_count;
    // gelf_getnote checked these ranges; the reader keeps that explicit and cheap.
    auto owner = segment.Bytes(name_offset, nhdr.n_namesz);
    auto desc = segment.Bytes(desc_offset, nhdr.n_descsz);
    if (owner && desc && owner->substr(0, owner->find('\0')) == "CORE") {
      parser.Parse(nhdr.n_type, *desc, phdr.p_offset + desc_offset);
    }
    offset = next;
  }
}

core::Result<CoreNotes> ParseImage(const CoreImage& image, std::string_view source_name) {
  CoreNotes notes;
  notes.machine = MachineName(image.machine);
  NoteParser parser(image.machine, &notes);
  size_t segments = 0, note_count = 0;
  for (const GElf_Phdr& phdr : image.phdrs) {
    if (phdr.p_type != PT_NOTE) continue;
    ++segments;
    if (!RangeInside(phdr.p_offset, phdr.p_filesz, image.file_size)) {
      return core::MakeError(
          "{}: PT_NOTE at offset 0x{:x} size 0x{:x} runs past the end of the file (0x{:x} "
          "bytes): truncated core?",
          source_name, phdr.p_offset, phdr.p_filesz, image.file_size);
    }
    ParseNoteSegment(image, phdr, parser, &note_count);
  }
  if (segments == 0) {
    return core::MakeError("{}: no PT_NOTE segment among {} program headers: not a Linux core?", source_name,
                           image.phdrs.size());
  }
  if (notes.threads.empty()) {
    std::string why = parser.prstatus_notes() == 0
                          ? "no NT_PRSTATUS note"
                          : fmt::format("all {} NT_PRSTATUS notes are damaged", parser.prstatus_notes());
    return core::MakeError("{}: {} among {} notes in {} PT_NOTE segment(s): no thread to report{}", source_name, why,
                           note_count, segments, notes.warnings.empty() ? "" : " (" + notes.warnings.front() + ")");
  }
  if (!notes.signal && notes.threads.front().signal) notes.signal = notes.threads.front().signal;
  return notes;
}

}  // namespace

core::Result<CoreNotes> ParseCoreNotes(std::string_view bytes, std::string_view source_name) {
  // libelf takes a mutable image and may convert data in place: give it a copy we own.
  std::vector<char> image(bytes.begin(), bytes.end());
  GT_ASSIGN_OR_RETURN(CoreImage core_image, internal::OpenCoreImage(image.data(), image.size(), source_name));
  return ParseImage(core_image, source_name);
}

std::optional<uint64_t> CoreExtent(std::string_view head) {
  core::ByteReader eh(head);
  if (head.size() < 64 ||
      head.substr(0, 4) !=
          "\x7f"
          "ELF" ||
      head[4] != 2 || head[5] != 1)
    return std::nullopt;
  if (eh.U16(16).value_or(0) != 4 /* ET_CORE */) return std::nullopt;
  uint64_t phoff = *eh.U64(32), shoff = *eh.U64(40);
  uint64_t phentsize = *eh.U16(54), phnum = *eh.U16(56), shentsize = *eh.U16(58), shnum = *eh.U16(60);
  if (phnum == 0xffff || phentsize < 56 || phnum == 0) return std::nullopt;  // PN_XNUM: count is elsewhere
  if (phoff > head.size() || phnum * phentsize > head.size() - phoff) return std::nullopt;
  uint64_t extent = std::max<uint64_t>(64, phoff + phnum * phentsize);
  for (uint64_t i = 0; i < phnum; ++i) {
    uint64_t at = phoff + i * phentsize;
    uint64_t offset = *eh.U64(at + 8), filesz = *eh.U64(at + 32);
    if (offset > UINT64_MAX - filesz) return std::nullopt;
    extent = std::max(extent, offset + filesz);
  }
  if (shoff != 0 && shentsize != 0 && shnum != 0 && shoff < UINT64_MAX - shnum * shentsize) {
    extent = std::max(extent, shoff + shnum * shentsize);
  }
  return extent;
}

core::Result<CoreNotes> ReadCoreNotesFile(const std::string& path) {
  uint64_t size = 0;
  GT_ASSIGN_OR_RETURN(core::ScopedFd fd, internal::OpenRegularFile(path, &size));
  GT_ASSIGN_OR_RETURN(CoreImage core_image, internal::OpenCoreFd(fd.get(), size, path));
  return ParseImage(core_image, path);
}

}  // namespace gputriage::corefile
