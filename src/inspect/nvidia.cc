#include "inspect/nvidia.h"

#include <cxxabi.h>
#include <gelf.h>
#include <libelf.h>
#include <lz4.h>
#include <zstd.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include "core/byte_reader.h"

namespace gputriage::inspect {
namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50;
constexpr uint64_t kFlagLz4 = 0x2000;
constexpr uint64_t kFlagZstd = 0x8000;
// No entry of a real fatbin comes near this (libtorch_cuda.so's largest cubin is a few MiB).
constexpr uint64_t kMaxEntryBytes = 1ull << 30;

// libelf keeps per-descriptor state but reports errors through a process-wide elf_errno: one
// cubin at a time.
std::mutex& ElfMutex() {
  static std::mutex mutex;
  return mutex;
}

void InitLibelf() {
  static const bool ok = elf_version(EV_CURRENT) != EV_NONE;
  (void)ok;
}

struct NvInfoRecord {
  uint8_t format = 0;
  uint8_t attribute = 0;
  uint16_t value = 0;     // the value (formats 1-3) or the length (format 4)
  std::string_view data;  // format 4: the bytes that follow
};

// `.nv.info` records; stops at the first record that runs past the section.
std::vector<NvInfoRecord> ParseNvInfo(std::string_view section) {
  core::ByteReader reader(section);
  std::vector<NvInfoRecord> out;
  uint64_t at = 0;
  for (;;) {
    auto format = reader.U8(at);
    auto attribute = reader.U8(at + 1);
    auto value = reader.U16(at + 2);
    if (!format || !attribute || !value) break;
    NvInfoRecord r{*format, *attribute, *value, {}};
    at += 4;
    if (r.format == 4) {
      auto data = reader.Bytes(at, r.value);
      if (!data) break;
      r.data = *data;
      at += r.value;
    }
    out.push_back(r);
  }
  return out;
}

// The u32 at `at` of a record's data; 0 when the record is too short.
uint32_t U32(std::string_view data, uint64_t at) { return core::ByteReader(data).U32(at).value_or(0); }

constexpr uint8_t kAttrMaxThreads = 0x05;
constexpr uint8_t kAttrFrameSize = 0x11;
constexpr uint8_t kAttrCbankParamSize = 0x19;
constexpr uint8_t kAttrRegCount = 0x2f;

std::string ArchName(std::string_view prefix, uint32_t arch, std::string_view suffix = "") {
  return fmt::format("{}_{}{}", prefix, arch, suffix);
}

core::Result<void> Decompress(const std::string& stored, const FatbinEntry& e, std::string& out) {
  if (e.uncompressed_size == 0 || e.uncompressed_size > kMaxEntryBytes) {
    return core::MakeError("uncompressed size {} is not plausible", e.uncompressed_size);
  }
  out.resize(e.uncompressed_size);
  if (core::ByteReader(stored).U32(0) == 0xFD2FB528u) {
    size_t n = ZSTD_decompress(out.data(), out.size(), stored.data(), stored.size());
    if (ZSTD_isError(n)) return core::MakeError("zstd: {}", ZSTD_getErrorName(n));
    if (n != out.size()) return core::MakeError("zstd: {} bytes decoded, the entry header says {}", n, out.size());
    return {};
  }
  if (e.flags & kFlagLz4) {
    // An LZ4 block. Some entries carry padding after the block: decode what fits.
    int n = LZ4_decompress_safe_partial(stored.data(), out.data(), static_cast<int>(stored.size()),
                                        static_cast<int>(out.size()), static_cast<int>(out.size()));
    if (n < 0) return core::MakeError("LZ4: corrupt block");
    if (static_cast<size_t>(n) != out.size()) {
      return core::MakeError("LZ4: {} bytes decoded, the entry header says {}", n, out.size());
    }
    return {};
  }
  return core::MakeError("compressed (flags {:#x}) in a way this version does not know", e.flags);
}

// The 16-byte container header and the fields of the (at least) 64-byte entry header that are
// read; the layout is in nvidia.h.
constexpr uint64_t kContainerHeaderBytes = 16;
constexpr uint64_t kEntryHeaderMinBytes = 64;

struct ContainerHeader {
  uint32_t magic = 0;
  uint16_t header_size = 0;
  uint64_t entries_size = 0;
};

std::optional<ContainerHeader> ParseContainerHeader(std::string_view bytes) {
  core::ByteReader reader(bytes);
  auto magic = reader.U32(0);
  auto header_size = reader.U16(6);
  auto entries_size = reader.U64(8);
  if (!magic || !header_size || !entries_size) return std::nullopt;
  return ContainerHeader{*magic, *header_size, *entries_size};
}

struct EntryHeader {
  uint16_t kind = 0;
  uint32_t header_size = 0;
  uint64_t padded_size = 0;
  uint32_t compressed_size = 0;
  uint32_t arch = 0;
  uint64_t flags = 0;
  uint64_t uncompressed_size = 0;
};

std::optional<EntryHeader> ParseEntryHeader(std::string_view bytes) {
  core::ByteReader reader(bytes);
  auto kind = reader.U16(0);
  auto header_size = reader.U32(4);
  auto padded_size = reader.U64(8);
  auto compressed_size = reader.U32(16);
  auto arch = reader.U32(28);
  auto flags = reader.U64(40);
  auto uncompressed_size = reader.U64(56);
  if (!kind || !header_size || !padded_size || !compressed_size || !arch || !flags || !uncompressed_size) {
    return std::nullopt;
  }
  return EntryHeader{*kind, *header_size, *padded_size, *compressed_size, *arch, *flags, *uncompressed_size};
}

/// `value` rounded up to a multiple of 8, or the largest uint64_t when that overflows.
uint64_t AlignUp8(uint64_t value) { return value > UINT64_MAX - 7 ? UINT64_MAX : (value + 7) / 8 * 8; }

// Appends the PTX and ELF entries of the container at `container` whose entries are
// [entries_begin, container_end); stops at the first entry whose sizes run past it.
void ListContainerEntries(const RangeReader& read, uint64_t container, uint64_t entries_begin, uint64_t container_end,
                          const std::function<void(std::string)>& problem, std::vector<FatbinEntry>* out) {
  std::string bytes;
  for (uint64_t p = entries_begin; container_end - p >= kEntryHeaderMinBytes;) {
    if (!read(p, kEntryHeaderMinBytes, &bytes)) break;
    std::optional<EntryHeader> eh = ParseEntryHeader(bytes);
    if (!eh) break;
    uint64_t room = container_end - p;
    if (eh->header_size < kEntryHeaderMinBytes || eh->header_size > room || eh->padded_size > room - eh->header_size) {
      problem(fmt::format("fatbin entry at {:#x}: header size {} and payload {} run past its container (ends at {:#x})",
                          p, eh->header_size, eh->padded_size, container_end));
      break;
    }
    FatbinEntry e;
    e.kind = eh->kind;
    e.arch = eh->arch;
    e.flags = eh->flags;
    e.uncompressed_size = eh->uncompressed_size;
    e.container_offset = container;
    e.payload_offset = p + eh->header_size;
    e.payload_size = e.compressed() && eh->compressed_size > 0 && eh->compressed_size <= eh->padded_size
                         ? eh->compressed_size
                         : eh->padded_size;
    if (e.kind == 1 || e.kind == 2) out->push_back(e);
    p += eh->header_size + eh->padded_size;
  }
}

// Each decoding thread reuses its two buffers across entries (a library has thousands); one
// grown past 2 MiB by a large entry is released after it, so idle threads hold little.
struct EntryBuffers {
  std::string stored, bytes;
  void Trim() {
    constexpr size_t kKeep = 2u << 20;
    if (stored.capacity() > kKeep) std::string().swap(stored);
    if (bytes.capacity() > kKeep) std::string().swap(bytes);
  }
};

}  // namespace

std::string Demangle(const std::string& symbol) {
  // Only Itanium C++ names ("i" alone would demangle to "int"); very long names are left alone
  // (the demangler recurses on their structure).
  if (symbol.rfind("_Z", 0) != 0 || symbol.size() > 4096) return symbol;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> d(abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status),
                                                &std::free);
  return status == 0 && d ? std::string(d.get()) : symbol;
}

// The first 8-byte step after `at` (at + 8, at + 16, ... before `end`) whose 4 bytes hold the
// container magic; `end` when none does or a read fails.
uint64_t NextMagicSlot(const RangeReader& read, uint64_t at, uint64_t end) {
  constexpr uint64_t kWindow = 1 << 16;  // a multiple of 8
  std::string window;
  uint64_t from = at;
  while (end - from > 8) {
    from += 8;
    uint64_t n = std::min(end - from, kWindow);
    if (!read(from, n, &window)) return end;
    core::ByteReader reader(window);
    for (uint64_t p = 0; p + 4 <= window.size(); p += 8) {
      if (reader.U32(p) == kFatbinMagic) return from + p;
    }
    if (n < kWindow) return end;
    from += kWindow - 8;  // the step at the top lands on the first slot after the window
  }
  return end;
}

std::vector<FatbinEntry> ListFatbinEntries(const RangeReader& read, uint64_t begin, uint64_t length,
                                           std::string_view origin, std::vector<std::string>* problems) {
  std::vector<FatbinEntry> out;
  auto problem = [&](std::string text) {
    if (problems) problems->push_back(fmt::format("{}: {}", origin, text));
  };
  std::optional<uint64_t> end = core::CheckedAdd(begin, length);
  if (!end) {
    problem(fmt::format("{:#x} bytes at {:#x} run past the end of the address space", length, begin));
    return out;
  }
  // Every read stays inside [begin, end), whatever the headers say.
  RangeReader read_inside = [&](uint64_t offset, size_t size, std::string* bytes) {
    return offset >= begin && core::RangeInside(offset - begin, size, length) && read(offset, size, bytes);
  };
  uint64_t at = begin;
  // Containers start 8-byte aligned: after padding or a damaged container, look 8 bytes on —
  // a window of slots at a time, to the next slot that holds the magic (a megabyte of padding
  // is one read, not 131,072 of them).
  auto next_slot = [&] { at = NextMagicSlot(read_inside, at, *end); };
  std::string bytes;
  while (*end - at >= 4) {
    uint64_t remaining = *end - at;
    if (!read_inside(at, std::min(remaining, kContainerHeaderBytes), &bytes)) break;
    std::optional<ContainerHeader> header = ParseContainerHeader(bytes);
    if (!header) {
      if (core::ByteReader(bytes).U32(0) == kFatbinMagic) {
        problem(fmt::format("fatbin container at {:#x}: header truncated ({} of {} bytes)", at, remaining,
                            kContainerHeaderBytes));
      }
      break;
    }
    if (header->magic != kFatbinMagic) {
      next_slot();
      continue;
    }
    // The header's own size first: what remains after it is only computed once it fits.
    if (header->header_size < kContainerHeaderBytes || header->header_size > remaining) {
      problem(header->header_size < kContainerHeaderBytes
                  ? fmt::format("fatbin container at {:#x}: header size {} is smaller than the {}-byte header", at,
                                header->header_size, kContainerHeaderBytes)
                  : fmt::format("fatbin container at {:#x}: header of {} bytes runs past the end ({} bytes remain)", at,
                                header->header_size, remaining));
      next_slot();
      continue;
    }
    uint64_t entries_begin = at + header->header_size;
    if (header->entries_size > *end - entries_begin) {
      problem(fmt::format("fatbin container at {:#x}: header says {} bytes of entries, only {} remain", at,
                          header->entries_size, *end - entries_begin));
      next_slot();
      continue;
    }
    uint64_t container_end = entries_begin + header->entries_size;
    ListContainerEntries(read_inside, at, entries_begin, container_end, problem, &out);
    at = std::min(*end, AlignUp8(container_end));
  }
  return out;
}

CodeObject FatbinEntryObject(const FatbinEntry& e, std::string_view origin) {
  CodeObject co;
  co.vendor = "nvidia";
  co.arch = ArchName(e.kind == 1 ? "compute" : "sm", e.arch, e.suffix());
  co.target_id = co.arch;
  co.format = e.kind == 1 ? "ptx" : "cubin";
  co.origin = fmt::format("{}+{:#x}", origin, e.payload_offset);
  co.compressed = e.compressed();
  co.size = e.compressed() ? e.uncompressed_size : e.payload_size;
  return co;
}

CodeObject DecodeFatbinEntry(const RangeReader& read, const FatbinEntry& e, std::string_view origin) {
  CodeObject co = FatbinEntryObject(e, origin);
  if (e.payload_size > kMaxEntryBytes) {
    co.error = fmt::format("entry of {} bytes is not plausible", e.payload_size);
    return co;
  }
  thread_local EntryBuffers buffers;
  struct TrimAtExit {
    EntryBuffers& b;
    ~TrimAtExit() { b.Trim(); }
  } trim{buffers};
  if (!read(e.payload_offset, e.payload_size, &buffers.stored)) {
    co.error = "entry runs past the end of the data";
    return co;
  }
  const std::string* bytes = &buffers.stored;
  if (co.compressed) {
    if (auto d = Decompress(buffers.stored, e, buffers.bytes); !d.ok()) {
      co.error = "cannot decompress: " + d.error().message;
      return co;
    }
    bytes = &buffers.bytes;
  }
  CodeObject parsed =
      e.kind == 1 ? ReadPtx(*bytes, co.origin, e.arch, e.suffix()) : ReadCubin(*bytes, co.origin, e.arch, e.suffix());
  parsed.compressed = co.compressed;
  return parsed;
}

std::vector<CodeObject> ReadNvFatbin(std::string_view data, std::string_view origin) {
  RangeReader read = [data](uint64_t offset, size_t size, std::string* out) {
    std::optional<std::string_view> bytes = core::ByteReader(data).Bytes(offset, size);
    if (bytes) out->assign(*bytes);
    return bytes.has_value();
  };
  std::vector<std::string> problems;
  std::vector<CodeObject> out;
  for (const FatbinEntry& e : ListFatbinEntries(read, 0, data.size(), origin, &problems)) {
    out.push_back(DecodeFatbinEntry(read, e, origin));
  }
  for (const std::string& p : problems) {
    CodeObject bad;
    bad.vendor = "nvidia";
    bad.format = "fatbin";
    bad.origin = std::string(origin);
    bad.error = p;
    out.push_back(std::move(bad));
  }
  return out;
}

namespace {

// A cubin's sections by name (the last of a name wins), and its symbol table (the last
// SHT_SYMTAB; nullptr when there is none). The Elf_Scn pointers live as long as the Elf.
struct CubinSection {
  GElf_Shdr header;
  Elf_Scn* scn;
};
struct CubinSections {
  std::map<std::string, CubinSection, std::less<>> by_name;
  Elf_Scn* symtab = nullptr;
  GElf_Shdr symtab_header{};
};

CubinSections ReadSections(Elf* elf, size_t shstrndx) {
  CubinSections out;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
    if (!name) continue;
    out.by_name[name] = {sh, scn};
    if (sh.sh_type == SHT_SYMTAB) {
      out.symtab = scn;
      out.symtab_header = sh;
    }
  }
  return out;
}

// The bytes libelf holds for the section; empty when it has none or cannot read them.
std::string_view SectionBytes(const CubinSection& s) {
  Elf_Data* d = elf_getdata(s.scn, nullptr);
  if (!d || !d->d_buf) return {};
  return std::string_view(static_cast<const char*>(d->d_buf), d->d_size);
}

// Symbol index -> name ("" for a symbol without one), for the per-symbol records of the global
// `.nv.info`; stops at the first unreadable symbol and after 10 million.
std::vector<std::string> SymbolNames(Elf* elf, const CubinSections& sections) {
  std::vector<std::string> symbols;
  if (!sections.symtab) return symbols;
  Elf_Data* d = elf_getdata(sections.symtab, nullptr);
  if (!d) return symbols;
  const GElf_Shdr& header = sections.symtab_header;
  size_t count = header.sh_entsize ? header.sh_size / header.sh_entsize : 0;
  for (size_t i = 0; i < count && i < 10'000'000; ++i) {
    GElf_Sym sym;
    if (!gelf_getsym(d, static_cast<int>(i), &sym)) break;
    const char* name = elf_strptr(elf, header.sh_link, sym.st_name);
    symbols.emplace_back(name ? name : "");
  }
  return symbols;
}

// "a" when `.nv.compat` marks the cubin arch-specific (sm_90a): attribute 9 = 1 (seen with nvcc
// 13.0; e_flags are the same as sm_90's); else `suffix`.
std::string_view CompatSuffix(const CubinSections& sections, std::string_view suffix) {
  if (auto it = sections.by_name.find(".nv.compat"); it != sections.by_name.end()) {
    for (const NvInfoRecord& r : ParseNvInfo(SectionBytes(it->second))) {
      if (r.attribute == 9 && r.format == 2 && (r.value & 0xff) == 1) suffix = "a";
    }
  }
  return suffix;
}

// What the global `.nv.info` records per symbol name: registers (REGCOUNT) and stack frame
// (FRAME_SIZE). Records naming a symbol index outside `symbols` are ignored.
struct PerSymbolInfo {
  std::map<std::string, uint32_t, std::less<>> registers, frames;
};

PerSymbolInfo GlobalNvInfo(const CubinSections& sections, const std::vector<std::string>& symbols) {
  PerSymbolInfo out;
  if (auto it = sections.by_name.find(".nv.info"); it != sections.by_name.end()) {
    for (const NvInfoRecord& r : ParseNvInfo(SectionBytes(it->second))) {
      if (r.format != 4 || r.data.size() < 8) continue;
      uint32_t sym = U32(r.data, 0), value = U32(r.data, 4);
      if (sym >= symbols.size()) continue;
      if (r.attribute == kAttrRegCount) out.registers[symbols[sym]] = value;
      if (r.attribute == kAttrFrameSize) out.frames[symbols[sym]] = value;
    }
  }
  return out;
}

// One kernel per `.nv.info.<kernel>` section, in name order: launch bounds and parameter size
// from its records, registers and stack frame from `info` (registers else from the kernel's
// `.text.` section flags), static shared memory from `.nv.shared.<kernel>`.
std::vector<Kernel> ReadKernels(const CubinSections& sections, const PerSymbolInfo& info) {
  std::vector<Kernel> kernels;
  // Since sm_90 the kernel's shared section also holds the 1 KiB the system reserves per block
  // (there is then a `.nv.shared.reserved.0` section); ptxas -v and the launch limits count the
  // kernel's own static shared memory, without it. Seen with nvcc 13.0 for sm_90, sm_100 and
  // sm_120 (the tests compare with ptxas -v).
  bool reserved_in_section = sections.by_name.count(".nv.shared.reserved.0") > 0;
  constexpr std::string_view kInfoPrefix = ".nv.info.";
  for (const auto& [name, sec] : sections.by_name) {
    if (name.rfind(kInfoPrefix, 0) != 0) continue;
    Kernel k;
    k.symbol = name.substr(kInfoPrefix.size());
    for (const NvInfoRecord& r : ParseNvInfo(SectionBytes(sec))) {
      if (r.attribute == kAttrMaxThreads && r.format == 4 && r.data.size() >= 12) {
        uint64_t n = uint64_t{U32(r.data, 0)} * U32(r.data, 4) * U32(r.data, 8);
        if (n > 0 && n <= 0xffffffffu) k.max_threads = static_cast<uint32_t>(n);
      }
      if (r.attribute == kAttrCbankParamSize && r.format == 3) k.param_bytes = r.value;
    }
    if (auto it = info.registers.find(k.symbol); it != info.registers.end()) {
      k.registers = it->second;
    } else if (auto text = sections.by_name.find(".text." + k.symbol); text != sections.by_name.end()) {
      k.registers = static_cast<uint32_t>(text->second.header.sh_info >> 24);
    }
    if (auto it = info.frames.find(k.symbol); it != info.frames.end()) k.local_bytes = it->second;
    k.shared_bytes = 0;
    if (auto sh = sections.by_name.find(".nv.shared." + k.symbol); sh != sections.by_name.end()) {
      uint64_t size = sh->second.header.sh_size;
      if (reserved_in_section && size >= 1024) {
        size -= 1024;
        k.reserved_shared_bytes = 1024;
      }
      k.shared_bytes = static_cast<uint32_t>(std::min<uint64_t>(size, 0xffffffffu));
    }
    kernels.push_back(std::move(k));
  }
  return kernels;
}

// ReadCubin under libelf's lock, without demangling: the ELF checks, the architecture (from the
// arguments, else e_flags and .nv.compat) and the kernels.
CodeObject ReadCubinLocked(std::string_view image, std::string_view origin, uint32_t arch, std::string_view suffix) {
  CodeObject co;
  co.vendor = "nvidia";
  co.format = "cubin";
  co.origin = std::string(origin);
  co.size = image.size();
  InitLibelf();
  std::lock_guard<std::mutex> lock(ElfMutex());
  // libelf only reads through this pointer (ELF_C_READ on memory).
  Elf* elf = elf_memory(const_cast<char*>(image.data()), image.size());
  if (!elf || elf_kind(elf) != ELF_K_ELF) {
    if (elf) elf_end(elf);
    co.error = "not an ELF file";
    return co;
  }
  std::unique_ptr<Elf, decltype(&elf_end)> guard(elf, &elf_end);
  GElf_Ehdr eh;
  if (!gelf_getehdr(elf, &eh) || eh.e_machine != 190) {
    co.error = "not a cubin (ELF machine is not EM_CUDA)";
    return co;
  }
  bool from_header = arch == 0;
  if (from_header) {
    // CUDA 12.8+ cubins (ABI version 8) keep the SM number in bits 8-15 of e_flags; older ones
    // in bits 0-7.
    arch = eh.e_ident[EI_ABIVERSION] >= 8 ? (eh.e_flags >> 8) & 0xff : eh.e_flags & 0xff;
    // Failed before: an all-zero header with EM_CUDA was "an sm_0 cubin with 0 kernels".
    if (arch == 0) {
      co.error = "not a cubin: its ELF header names no SM architecture (e_flags 0)";
      return co;
    }
  }
  size_t shnum = 0;
  if (elf_getshdrnum(elf, &shnum) != 0 || shnum == 0) {
    co.error = "cubin without section headers: nothing to read (truncated or not a cubin)";
    return co;
  }
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) {
    co.error = "cubin without a section-name table";
    return co;
  }
  CubinSections sections = ReadSections(elf, shstrndx);
  std::vector<std::string> symbols = SymbolNames(elf, sections);
  if (from_header) suffix = CompatSuffix(sections, suffix);
  co.arch = ArchName("sm", arch, suffix);
  co.target_id = co.arch;
  co.kernels = ReadKernels(sections, GlobalNvInfo(sections, symbols));
  return co;
}

}  // namespace

CodeObject ReadCubin(std::string_view image, std::string_view origin, uint32_t arch, std::string_view suffix) {
  CodeObject co = ReadCubinLocked(image, origin, arch, suffix);
  // Demangling long template names is the slow part: outside libelf's lock.
  for (Kernel& k : co.kernels) k.name = Demangle(k.symbol);
  return co;
}

CodeObject ReadPtx(std::string_view text, std::string_view origin, uint32_t arch, std::string_view suffix) {
  CodeObject co;
  co.vendor = "nvidia";
  co.format = "ptx";
  co.origin = std::string(origin);
  co.size = text.size();
  if (arch == 0) {
    // ".target sm_90a" -> 90
    size_t t = text.find(".target sm_");
    if (t != std::string_view::npos)
      arch = static_cast<uint32_t>(std::strtoul(std::string(text.substr(t + 11, 4)).c_str(), nullptr, 10));
  }
  co.arch = ArchName("compute", arch, suffix);
  co.target_id = co.arch;
  size_t at = 0;
  while ((at = text.find(".entry", at)) != std::string_view::npos) {
    at += 6;
    size_t name_begin = text.find_first_not_of(" \t", at);
    if (name_begin == std::string_view::npos) break;
    size_t name_end = text.find_first_of(" \t\r\n(", name_begin);
    if (name_end == std::string_view::npos) break;
    Kernel k;
    k.symbol = std::string(text.substr(name_begin, name_end - name_begin));
    k.name = Demangle(k.symbol);
    // Directives come after the parameter list, before the body's '{'.
    size_t body = text.find('{', name_end);
    std::string_view head =
        text.substr(name_end, body == std::string_view::npos ? std::string_view::npos : body - name_end);
    if (size_t m = head.find(".maxntid"); m != std::string_view::npos) {
      uint64_t product = 1;
      const char* p = head.data() + m + 8;
      const char* end = head.data() + head.size();
      int dims = 0;
      while (p < end && dims < 3) {
        char* next = nullptr;
        unsigned long v = std::strtoul(p, &next, 10);
        if (next == p) break;
        product *= v;
        ++dims;
        p = next;
        while (p < end && (*p == ',' || *p == ' ')) ++p;
      }
      if (dims > 0 && product > 0 && product <= 0xffffffffu) k.max_threads = static_cast<uint32_t>(product);
    }
    co.kernels.push_back(std::move(k));
    at = name_end;
  }
  return co;
}

}  // namespace gputriage::inspect
