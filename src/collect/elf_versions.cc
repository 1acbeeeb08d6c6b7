#include "collect/elf_versions.h"

#include <gelf.h>
#include <libelf.h>

#include <memory>

#include "core/text.h"

namespace gputriage::collect {

namespace {

struct ElfEnd {
  void operator()(Elf* elf) const { elf_end(elf); }
};
using ElfPtr = std::unique_ptr<Elf, ElfEnd>;

std::string ElfMessage() {
  const char* message = elf_errmsg(-1);
  return message != nullptr ? message : "unknown libelf error";
}

// Walks the verdef entries of one section; every step is bounds-checked by gelf_getverdef and
// gelf_getverdaux (they return null outside the data).
core::Result<std::vector<std::string>> ReadVerdefSection(Elf* elf, Elf_Scn* scn, const GElf_Shdr& shdr,
                                                         std::string_view source) {
  size_t index = elf_ndxscn(scn);
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (data == nullptr) {
    return core::MakeError("{}: section {} (SHT_GNU_verdef): cannot read its data: {}", source, index, ElfMessage());
  }
  std::vector<std::string> names;
  size_t offset = 0;
  for (size_t i = 0; i < shdr.sh_info; ++i) {
    GElf_Verdef def;
    if (gelf_getverdef(data, static_cast<int>(offset), &def) == nullptr) {
      return core::MakeError("{}: section {} (SHT_GNU_verdef): entry {} at offset {} is outside its {} bytes", source,
                             index, i, offset, data->d_size);
    }
    GElf_Verdaux aux;
    if (gelf_getverdaux(data, static_cast<int>(offset + def.vd_aux), &aux) == nullptr) {
      return core::MakeError("{}: section {} (SHT_GNU_verdef): entry {} names no version (aux offset {})", source,
                             index, i, offset + def.vd_aux);
    }
    const char* name = elf_strptr(elf, shdr.sh_link, aux.vda_name);
    if (name == nullptr) {
      return core::MakeError("{}: section {} (SHT_GNU_verdef): entry {}: name offset {} outside string section {}",
                             source, index, i, aux.vda_name, shdr.sh_link);
    }
    if ((def.vd_flags & VER_FLG_BASE) == 0) names.emplace_back(name);
    if (def.vd_next == 0) break;
    offset += def.vd_next;
  }
  return names;
}

// libelf sees no sections at all when the section header table lies past the end of the image;
// say that the file is truncated rather than that it has no version definitions.
core::Result<void> CheckSectionHeaderTable(Elf* elf, size_t size, std::string_view source) {
  GElf_Ehdr ehdr;
  if (gelf_getehdr(elf, &ehdr) == nullptr) {
    return core::MakeError("{}: cannot read the ELF header ({} bytes): {}", source, size, ElfMessage());
  }
  if (ehdr.e_shoff == 0) return core::MakeError("{}: has no section header table ({} bytes)", source, size);
  // e_shnum 0 with a table: more than 0xff00 sections, counted in section 0 (libelf checks it).
  uint64_t table_bytes = uint64_t{ehdr.e_shnum} * ehdr.e_shentsize;
  if (ehdr.e_shnum != 0 && (ehdr.e_shoff > size || table_bytes > size - ehdr.e_shoff)) {
    return core::MakeError("{}: truncated: its {} section headers at offset {} end past the file's {} bytes", source,
                           ehdr.e_shnum, ehdr.e_shoff, size);
  }
  return {};
}

}  // namespace

core::Result<std::vector<std::string>> ReadElfVersionDefinitions(std::string bytes, std::string_view source) {
  elf_version(EV_CURRENT);
  ElfPtr elf(bytes.empty() ? nullptr : elf_memory(bytes.data(), bytes.size()));
  if (elf == nullptr || elf_kind(elf.get()) != ELF_K_ELF) {
    return core::MakeError("{}: not an ELF file ({} bytes)", source, bytes.size());
  }
  GT_RETURN_IF_ERROR(CheckSectionHeaderTable(elf.get(), bytes.size(), source));
  size_t sections = 0;
  if (elf_getshdrnum(elf.get(), &sections) != 0) {
    return core::MakeError("{}: cannot read the section headers ({} bytes): {}", source, bytes.size(), ElfMessage());
  }
  for (Elf_Scn* scn = elf_nextscn(elf.get(), nullptr); scn != nullptr; scn = elf_nextscn(elf.get(), scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) {
      return core::MakeError("{}: section {}: cannot read its header: {}", source, elf_ndxscn(scn), ElfMessage());
    }
    if (shdr.sh_type == SHT_GNU_verdef) return ReadVerdefSection(elf.get(), scn, shdr, source);
  }
  return core::MakeError("{}: no symbol version definitions (no SHT_GNU_verdef section among {} sections)", source,
                         sections);
}

std::optional<std::string> HighestVersion(const std::vector<std::string>& names, std::string_view prefix) {
  std::optional<std::string> best;
  for (const std::string& name : names) {
    std::string_view n = name;
    if (!n.starts_with(prefix) || n.size() == prefix.size()) continue;
    char first = n[prefix.size()];
    if (first < '0' || first > '9') continue;  // "GLIBC_PRIVATE"
    if (!best ||
        core::CompareDottedVersions(n.substr(prefix.size()), std::string_view(*best).substr(prefix.size())) > 0) {
      best = name;
    }
  }
  return best;
}

}  // namespace gputriage::collect
