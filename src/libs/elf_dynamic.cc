#include "libs/elf_dynamic.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>

#include <fmt/format.h>

namespace gputriage::libs {
namespace {

// Loops over version records are bounded: a corrupt vd_next/vn_next could chain forever.
constexpr size_t kMaxVersionRecords = 65536;

struct Handle {
  Elf* elf = nullptr;
  int fd = -1;
  ~Handle() {
    if (elf) elf_end(elf);
    if (fd >= 0) close(fd);
  }
};

// The bytes at file offset [offset, offset + size) as libelf converts them to `type`, or null.
Elf_Data* Chunk(Elf* elf, uint64_t offset, uint64_t size, Elf_Type type) {
  if (size == 0 || size > (uint64_t{1} << 32)) return nullptr;
  return elf_getdata_rawchunk(elf, static_cast<int64_t>(offset), size, type);
}

// A string at `index` of a string table held in `table`; nullopt when it is outside the table
// or not terminated inside it.
std::optional<std::string> TableString(const Elf_Data* table, uint64_t index) {
  if (!table || index >= table->d_size) return std::nullopt;
  const char* base = static_cast<const char*>(table->d_buf);
  const void* end = std::memchr(base + index, '\0', table->d_size - index);
  if (!end) return std::nullopt;
  return std::string(base + index, static_cast<const char*>(end));
}

// The file offset of a virtual address, through the PT_LOAD segments (as the loader maps them).
std::optional<uint64_t> VaddrToOffset(const std::vector<GElf_Phdr>& loads, uint64_t vaddr) {
  for (const GElf_Phdr& p : loads) {
    if (vaddr >= p.p_vaddr && vaddr - p.p_vaddr < p.p_filesz) return vaddr - p.p_vaddr + p.p_offset;
  }
  return std::nullopt;
}

// DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH, DT_FLAGS_1 through PT_DYNAMIC and DT_STRTAB, as
// the loader reads them (a file without section headers is read the same way).
core::Result<void> ReadDynamicSegment(Elf* elf, uint64_t file_size, ElfDynamic& out) {
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0)
    return core::MakeError("{}: program headers cannot be read: {}", out.path, elf_errmsg(-1));
  std::vector<GElf_Phdr> loads;
  std::optional<GElf_Phdr> dynamic;
  size_t unreadable = 0;
  for (size_t i = 0; i < phnum && i < 4096; ++i) {
    GElf_Phdr ph;
    if (!gelf_getphdr(elf, static_cast<int>(i), &ph)) {
      out.problems.push_back(fmt::format("program header {} cannot be read: {}", i, elf_errmsg(-1)));
      ++unreadable;
      continue;
    }
    if (ph.p_type == PT_LOAD) loads.push_back(ph);
    if (ph.p_type == PT_DYNAMIC) dynamic = ph;
    if (ph.p_type == PT_INTERP) {
      if (Elf_Data* d = Chunk(elf, ph.p_offset, ph.p_filesz, ELF_T_BYTE); d) {
        if (auto s = TableString(d, 0)) out.interpreter = *s;
      } else {
        out.problems.push_back("PT_INTERP lies outside the file");
      }
    }
  }
  // A file cut short before its program headers ends has none to read: that says nothing about
  // how it was linked (it was called "statically linked" before).
  if (!dynamic && unreadable > 0) {
    return core::MakeErrorCode(core::ErrorCode::kDataLoss,
                               "{}: {} of its {} program headers cannot be read ({} bytes): truncated or corrupt, so "
                               "whether it is dynamically linked cannot be told",
                               out.path, unreadable, phnum, file_size);
  }
  if (!dynamic) return {};
  out.has_dynamic = true;
  size_t entsize = gelf_fsize(elf, ELF_T_DYN, 1, EV_CURRENT);
  Elf_Data* dyn = entsize ? Chunk(elf, dynamic->p_offset, dynamic->p_filesz, ELF_T_DYN) : nullptr;
  if (!dyn)
    return core::MakeErrorCode(
        core::ErrorCode::kDataLoss,
        "{}: the dynamic segment ({} bytes at {:#x}) lies outside the file: truncated or corrupt", out.path,
        dynamic->p_filesz, dynamic->p_offset);
  std::vector<GElf_Dyn> entries;
  std::optional<uint64_t> strtab, strsz;
  for (size_t i = 0; i < dyn->d_size / entsize; ++i) {
    GElf_Dyn d;
    if (!gelf_getdyn(dyn, static_cast<int>(i), &d) || d.d_tag == DT_NULL) break;
    if (d.d_tag == DT_STRTAB) strtab = d.d_un.d_ptr;
    if (d.d_tag == DT_STRSZ) strsz = d.d_un.d_val;
    if (d.d_tag == DT_FLAGS_1) out.nodeflib = (d.d_un.d_val & DF_1_NODEFLIB) != 0;
    entries.push_back(d);
  }
  std::optional<uint64_t> strtab_offset = strtab ? VaddrToOffset(loads, *strtab) : std::nullopt;
  if (!strtab_offset || !strsz || *strsz == 0 || *strsz > file_size || *strtab_offset > file_size - *strsz) {
    bool names = false;
    for (const GElf_Dyn& d : entries) names = names || d.d_tag == DT_NEEDED || d.d_tag == DT_SONAME;
    if (names)
      return core::MakeErrorCode(
          core::ErrorCode::kDataLoss,
          "{}: the dynamic string table (DT_STRTAB {:#x}, DT_STRSZ {}) is not in the file: corrupt dynamic section",
          out.path, strtab.value_or(0), strsz.value_or(0));
    return {};
  }
  // The string table holds every symbol's name too (3 MiB in libLLVM, more in libtorch): each name
  // is read alone (512 bytes from its offset), the whole table only for a name longer than that.
  auto is_name = [](const GElf_Dyn& d) {
    return d.d_tag == DT_NEEDED || d.d_tag == DT_SONAME || d.d_tag == DT_RPATH || d.d_tag == DT_RUNPATH;
  };
  Elf_Data* whole = nullptr;
  auto name_at = [&](uint64_t index) -> std::optional<std::string> {
    uint64_t end = std::min<uint64_t>(*strsz, index + 512);
    if (Elf_Data* near = Chunk(elf, *strtab_offset + index, end - index, ELF_T_BYTE)) {
      if (auto s = TableString(near, 0)) return s;
    }
    if (!whole) whole = Chunk(elf, *strtab_offset, *strsz, ELF_T_BYTE);
    return TableString(whole, index);
  };
  for (const GElf_Dyn& d : entries) {
    if (!is_name(d)) continue;
    std::optional<std::string> s = d.d_un.d_val < *strsz ? name_at(d.d_un.d_val) : std::nullopt;
    if (!s) {
      out.problems.push_back(
          fmt::format("dynamic entry {:#x}: string offset {:#x} is outside the string table ({} bytes)",
                      static_cast<uint64_t>(d.d_tag), d.d_un.d_val, *strsz));
      continue;
    }
    if (d.d_tag == DT_NEEDED) out.needed.push_back(std::move(*s));
    if (d.d_tag == DT_SONAME) out.soname = std::move(*s);
    if (d.d_tag == DT_RPATH) out.rpath = std::move(*s);
    if (d.d_tag == DT_RUNPATH) out.runpath = std::move(*s);
  }
  return {};
}

struct NeededVersion {
  std::string_view name;
  std::string_view file;
};

const char* Str(Elf* elf, size_t section, size_t offset) { return elf_strptr(elf, section, offset); }

// verdef index -> name, and the names (the base version excluded).
void ReadVerdef(Elf* elf, Elf_Scn* scn, const GElf_Shdr& sh, std::map<int, std::string_view>& by_index,
                ElfDynamic& out) {
  Elf_Data* data = elf_getdata(scn, nullptr);
  size_t offset = 0;
  for (size_t n = 0; data && n < sh.sh_info && n < kMaxVersionRecords; ++n) {
    GElf_Verdef vd;
    GElf_Verdaux aux;
    if (offset >= data->d_size || !gelf_getverdef(data, static_cast<int>(offset), &vd)) break;
    if (offset + vd.vd_aux < data->d_size && gelf_getverdaux(data, static_cast<int>(offset + vd.vd_aux), &aux)) {
      if (const char* name = Str(elf, sh.sh_link, aux.vda_name)) {
        bool base = (vd.vd_flags & VER_FLG_BASE) != 0;
        by_index[vd.vd_ndx & 0x7fff] = base ? std::string_view() : std::string_view(name);
        if (!base) out.version_definitions.emplace_back(name);
      } else {
        out.problems.push_back(fmt::format("version definition {}: name outside the string table", n));
      }
    }
    if (vd.vd_next == 0) break;
    offset += vd.vd_next;
  }
}

// verneed: version index -> (version name, library file).
void ReadVerneed(Elf* elf, Elf_Scn* scn, const GElf_Shdr& sh, std::map<int, NeededVersion>& by_index, ElfDynamic& out) {
  Elf_Data* data = elf_getdata(scn, nullptr);
  size_t offset = 0, records = 0;
  for (size_t n = 0; data && n < sh.sh_info && n < kMaxVersionRecords; ++n) {
    GElf_Verneed vn;
    if (offset >= data->d_size || !gelf_getverneed(data, static_cast<int>(offset), &vn)) break;
    const char* file = Str(elf, sh.sh_link, vn.vn_file);
    size_t aux_offset = offset + vn.vn_aux;
    for (size_t j = 0; j < vn.vn_cnt && ++records < kMaxVersionRecords; ++j) {
      GElf_Vernaux aux;
      if (aux_offset >= data->d_size || !gelf_getvernaux(data, static_cast<int>(aux_offset), &aux)) break;
      const char* name = Str(elf, sh.sh_link, aux.vna_name);
      if (name && file) {
        by_index[aux.vna_other & 0x7fff] = {name, file};
      } else {
        out.problems.push_back(fmt::format("version requirement {}/{}: name outside the string table", n, j));
      }
      if (aux.vna_next == 0) break;
      aux_offset += aux.vna_next;
    }
    if (vn.vn_next == 0) break;
    offset += vn.vn_next;
  }
}

void ReadSymbols(Elf* elf, ElfDynamic& out) {
  Elf_Scn* dynsym = nullptr;
  Elf_Scn* versym = nullptr;
  GElf_Shdr dynsym_sh{};
  std::map<int, std::string_view> defined_versions;
  std::map<int, NeededVersion> needed_versions;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    if (sh.sh_type == SHT_DYNSYM) dynsym = scn, dynsym_sh = sh;
    if (sh.sh_type == SHT_GNU_versym) versym = scn;
    if (sh.sh_type == SHT_GNU_verdef) ReadVerdef(elf, scn, sh, defined_versions, out);
    if (sh.sh_type == SHT_GNU_verneed) ReadVerneed(elf, scn, sh, needed_versions, out);
  }
  if (!dynsym) {
    if (out.has_dynamic) out.problems.push_back("no .dynsym section header: the dynamic symbols cannot be listed");
    return;
  }
  Elf_Data* syms = elf_getdata(dynsym, nullptr);
  Elf_Data* vers = versym ? elf_getdata(versym, nullptr) : nullptr;
  size_t sym_size = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
  if (!syms || sym_size == 0) {
    out.problems.push_back(fmt::format(".dynsym cannot be read: {}", elf_errmsg(-1)));
    return;
  }
  size_t count = syms->d_size / sym_size;
  size_t bad_names = 0;
  out.symbols.reserve(count);
  // The names' string table, read once: a name is any offset inside it, the table ending in a
  // NUL (checked here once instead of elf_strptr's checks per symbol: a libtorch has 10^5 names).
  Elf_Scn* strscn = elf_getscn(elf, dynsym_sh.sh_link);
  Elf_Data* strdata = strscn ? elf_getdata(strscn, nullptr) : nullptr;
  const char* strtab = strdata && strdata->d_size > 0 ? static_cast<const char*>(strdata->d_buf) : nullptr;
  size_t strsize = strtab && strtab[strdata->d_size - 1] == '\0' ? strdata->d_size : 0;
  // libelf hands the sections over in this machine's layout: for ELFCLASS64 an array of
  // Elf64_Sym and of Elf64_Half versions, read directly.
  bool direct = gelf_getclass(elf) == ELFCLASS64 && syms->d_type == ELF_T_SYM && (!vers || vers->d_type == ELF_T_HALF);
  const Elf64_Sym* sym64 = direct ? static_cast<const Elf64_Sym*>(syms->d_buf) : nullptr;
  const Elf64_Half* ver64 = direct && vers ? static_cast<const Elf64_Half*>(vers->d_buf) : nullptr;
  size_t ver_count = vers ? vers->d_size / sizeof(Elf64_Half) : 0;
  for (size_t i = 1; i < count; ++i) {
    GElf_Sym sym;
    if (sym64) {
      sym = sym64[i];
    } else if (!gelf_getsym(syms, static_cast<int>(i), &sym)) {
      break;
    }
    unsigned bind = GELF_ST_BIND(sym.st_info);
    if (bind == STB_LOCAL) continue;
    const char* name = sym.st_name < strsize ? strtab + sym.st_name : nullptr;
    if (!name) {
      ++bad_names;
      continue;
    }
    if (*name == '\0') continue;
    DynamicSymbol s;
    s.name = name;
    s.defined = sym.st_shndx != SHN_UNDEF;
    s.weak = bind == STB_WEAK;
    s.type = GELF_ST_TYPE(sym.st_info);
    s.size = sym.st_size;
    GElf_Versym v = 0;
    bool has_version =
        ver64 ? i < ver_count && ((v = ver64[i]), true) : vers && gelf_getversym(vers, static_cast<int>(i), &v);
    if (has_version) {
      int index = v & 0x7fff;
      s.hidden_version = (v & 0x8000) != 0;
      if (index > 1) {
        if (s.defined) {
          if (auto it = defined_versions.find(index); it != defined_versions.end()) s.version = it->second;
        } else if (auto it = needed_versions.find(index); it != needed_versions.end()) {
          s.version = it->second.name;
          s.version_file = it->second.file;
        }
      }
    }
    out.symbols.push_back(s);
  }
  if (bad_names)
    out.problems.push_back(fmt::format("{} dynamic symbols have names outside the string table", bad_names));
}

core::Result<ElfDynamic> Read(std::shared_ptr<Handle> handle, std::string_view name, uint64_t size, bool with_symbols) {
  Elf* elf = handle->elf;
  ElfDynamic out;
  out.path = std::string(name);
  if (!elf)
    return core::MakeErrorCode(core::ErrorCode::kDataLoss, "{}: not a readable ELF file: {}", name, elf_errmsg(-1));
  if (elf_kind(elf) == ELF_K_AR)
    return core::MakeErrorCode(core::ErrorCode::kUnsupported, "{}: an ar archive (static library), not a shared object",
                               name);
  size_t ident_size = 0;
  const char* ident = elf_kind(elf) == ELF_K_ELF ? elf_getident(elf, &ident_size) : nullptr;
  if (!ident || ident_size < EI_NIDENT) {
    return core::MakeErrorCode(core::ErrorCode::kDataLoss, "{}: not an ELF file ({} bytes{})", name, size,
                               size >= 4 ? ", no ELF header" : "");
  }
  GElf_Ehdr ehdr;
  if (!gelf_getehdr(elf, &ehdr))
    return core::MakeErrorCode(core::ErrorCode::kDataLoss, "{}: the ELF header cannot be read ({} bytes): {}", name,
                               size, elf_errmsg(-1));
  out.elf_class = ident[EI_CLASS] == ELFCLASS32 ? 32 : ident[EI_CLASS] == ELFCLASS64 ? 64 : 0;
  out.big_endian = ident[EI_DATA] == ELFDATA2MSB;
  out.machine = ehdr.e_machine;
  out.type = ehdr.e_type;
  if (out.type != ET_DYN && out.type != ET_EXEC) {
    return core::MakeErrorCode(core::ErrorCode::kUnsupported,
                               "{}: ELF type {}: neither an executable nor a shared object", name, out.type);
  }
  // libelf reads no program headers at all when their table runs past the file's end: without
  // this, a file cut there would look like one without a dynamic segment ("statically linked").
  if (ehdr.e_phnum != 0 && ehdr.e_phnum != PN_XNUM &&
      (ehdr.e_phoff > size || uint64_t{ehdr.e_phnum} * ehdr.e_phentsize > size - ehdr.e_phoff)) {
    return core::MakeErrorCode(core::ErrorCode::kDataLoss,
                               "{}: its {} program headers (at offset {:#x}) run past the end of the file ({} bytes): "
                               "truncated or corrupt, so whether it is dynamically linked cannot be told",
                               name, ehdr.e_phnum, ehdr.e_phoff, size);
  }
  GT_RETURN_IF_ERROR(ReadDynamicSegment(elf, size, out));
  if (!with_symbols) return out;  // every field is a copy: the file is closed and unmapped now
  ReadSymbols(elf, out);
  // The names point into the mapped file, which stays; its descriptor is not needed any more (a
  // memo of a few hundred libraries must not hold a few hundred descriptors).
  if (handle->fd >= 0) {
    elf_cntl(elf, ELF_C_FDDONE);
    close(handle->fd);
    handle->fd = -1;
  }
  out.keep = std::move(handle);
  return out;
}

void InitLibelf() {
  static const bool ok = elf_version(EV_CURRENT) != EV_NONE;
  (void)ok;
}

}  // namespace

std::string ElfDynamic::Describe() const {
  std::string machine_name = machine == EM_X86_64    ? "x86-64"
                             : machine == EM_386     ? "i386"
                             : machine == EM_AARCH64 ? "aarch64"
                             : machine == EM_PPC64   ? "ppc64"
                                                     : fmt::format("machine {}", machine);
  return fmt::format("{}-bit {} {}", elf_class, machine_name, big_endian ? "big-endian" : "little-endian");
}

core::Result<ElfDynamic> ReadElfDynamic(const std::string& path, bool with_symbols) {
  InitLibelf();
  auto handle = std::make_shared<Handle>();
  // O_NONBLOCK: opening a FIFO for reading would wait for a writer forever (`libs FIFO`); it is
  // refused below like any file that is not regular. Reads of a regular file ignore the flag.
  handle->fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (handle->fd < 0) return core::ErrnoError(errno, "{}: cannot open", path);
  struct stat st {};
  if (fstat(handle->fd, &st) != 0) return core::ErrnoError(errno, "{}: cannot stat", path);
  if (!S_ISREG(st.st_mode)) {
    return core::MakeErrorCode(core::ErrorCode::kInvalidArgument, "{}: not a regular file ({}): not an ELF file", path,
                               S_ISFIFO(st.st_mode)  ? "a FIFO"
                               : S_ISDIR(st.st_mode) ? "a directory"
                               : S_ISCHR(st.st_mode) ? "a character device"
                               : S_ISBLK(st.st_mode) ? "a block device"
                                                     : "a socket");
  }
  if (st.st_size == 0)
    return core::MakeErrorCode(core::ErrorCode::kDataLoss, "{}: empty file (0 bytes), not an ELF file", path);
  // The dynamic section alone is read with pread (mapping a 1 GiB file and unmapping it costs more
  // than the few kilobytes read); the symbol tables from the mapped file.
  handle->elf = elf_begin(handle->fd, with_symbols ? ELF_C_READ_MMAP : ELF_C_READ, nullptr);
  return Read(std::move(handle), path, static_cast<uint64_t>(st.st_size), with_symbols);
}

core::Result<ElfDynamic> ParseElfDynamic(std::span<const uint8_t> bytes, std::string_view name, bool with_symbols) {
  InitLibelf();
  auto handle = std::make_shared<Handle>();
  if (bytes.empty())
    return core::MakeErrorCode(core::ErrorCode::kDataLoss, "{}: empty (0 bytes), not an ELF file", name);
  handle->elf = elf_memory(const_cast<char*>(reinterpret_cast<const char*>(bytes.data())), bytes.size());
  return Read(std::move(handle), name, bytes.size(), with_symbols);
}

std::string_view SymbolTypeName(uint8_t type) {
  switch (type) {
    case STT_NOTYPE:
      return "NOTYPE";
    case STT_OBJECT:
      return "OBJECT";
    case STT_FUNC:
      return "FUNC";
    case STT_SECTION:
      return "SECTION";
    case STT_FILE:
      return "FILE";
    case STT_COMMON:
      return "COMMON";
    case STT_TLS:
      return "TLS";
    case STT_GNU_IFUNC:
      return "IFUNC";
    default:
      return "OTHER";
  }
}

std::optional<std::string> Demangle(std::string_view symbol) {
  if (!symbol.starts_with("_Z")) return std::nullopt;
  int status = 0;
  std::string name(symbol);
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (!out || status != 0) {
    std::free(out);
    return std::nullopt;
  }
  std::string result(out);
  std::free(out);
  return result;
}

}  // namespace gputriage::libs
