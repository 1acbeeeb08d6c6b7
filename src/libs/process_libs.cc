#include "libs/process_libs.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <set>

#include <fmt/format.h>

#include "core/file.h"
#include "core/maps.h"
#include "core/scoped_fd.h"
#include "libs/elf_dynamic.h"

namespace gputriage::libs {
namespace {

template <class T>
bool ReadAt(int fd, uint64_t address, T& out) {
  return pread(fd, &out, sizeof(T), static_cast<off_t>(address)) == static_cast<ssize_t>(sizeof(T));
}

std::optional<std::string> ReadString(int fd, uint64_t address) {
  std::string out;
  char buf[256];
  while (out.size() < 4096) {
    ssize_t n = pread(fd, buf, sizeof(buf), static_cast<off_t>(address + out.size()));
    if (n <= 0) return std::nullopt;
    const void* nul = memchr(buf, '\0', static_cast<size_t>(n));
    if (nul) return out + std::string(buf, static_cast<size_t>(static_cast<const char*>(nul) - buf));
    out.append(buf, static_cast<size_t>(n));
  }
  return std::nullopt;
}

// The link map of a 64-bit little-endian process of this machine's architecture: the
// executable's PT_DYNAMIC (at its load bias) holds DT_DEBUG = &r_debug; r_debug.r_map at +8;
// each link_map: l_addr +0, l_name +8, l_next +24.
core::Result<std::vector<LoadedObject>> LinkMap(int pid, const std::string& proc,
                                                const std::vector<core::Mapping>& maps) {
  std::string exe = fmt::format("{}/{}/exe", proc, pid);
  GT_ASSIGN_OR_RETURN(ElfDynamic elf, ReadElfDynamic(exe, false));
  if (elf.elf_class != 64 || elf.big_endian || elf.machine != EM_X86_64) {
    return core::MakeError("the executable is {}, the link map is read for 64-bit x86-64 processes only",
                           elf.Describe());
  }
  char target[4096];
  ssize_t len = readlink(exe.c_str(), target, sizeof(target) - 1);
  if (len <= 0) return core::ErrnoError(errno, "{}: cannot read the link", exe);
  std::string exe_path(target, static_cast<size_t>(len));
  // The load bias: the lowest mapping of the executable minus its first PT_LOAD's page.
  uint64_t lowest = UINT64_MAX;
  for (const core::Mapping& m : maps) {
    if (m.path == exe_path && m.file_offset == 0) lowest = std::min(lowest, m.start);
  }
  if (lowest == UINT64_MAX) return core::MakeError("the executable {} is not in the process's maps", exe_path);
  core::ScopedFd fd(open(exe.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return core::ErrnoError(errno, "{}: cannot open", exe);
  Elf64_Ehdr eh{};
  if (!ReadAt(fd.get(), 0, eh)) return core::MakeError("{}: cannot read the ELF header", exe);
  uint64_t first_load = UINT64_MAX, dyn_vaddr = 0, dyn_size = 0;
  for (int i = 0; i < eh.e_phnum && i < 4096; ++i) {
    Elf64_Phdr ph{};
    if (!ReadAt(fd.get(), eh.e_phoff + uint64_t(i) * sizeof(ph), ph)) break;
    if (ph.p_type == PT_LOAD && first_load == UINT64_MAX) first_load = ph.p_vaddr & ~uint64_t{0xfff};
    if (ph.p_type == PT_DYNAMIC) dyn_vaddr = ph.p_vaddr, dyn_size = ph.p_memsz;
  }
  if (!dyn_vaddr || first_load == UINT64_MAX)
    return core::MakeError("the executable has no PT_DYNAMIC: statically linked");
  uint64_t bias = eh.e_type == ET_DYN ? lowest - first_load : 0;
  std::string mem_path = fmt::format("{}/{}/mem", proc, pid);
  core::ScopedFd mem(open(mem_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!mem.valid())
    return core::ErrnoError(errno, "{}: cannot open (reading another process's memory needs ptrace permission)",
                            mem_path);
  uint64_t r_debug = 0;
  for (uint64_t off = 0; off + sizeof(Elf64_Dyn) <= dyn_size && off < (1u << 20); off += sizeof(Elf64_Dyn)) {
    Elf64_Dyn d{};
    if (!ReadAt(mem.get(), bias + dyn_vaddr + off, d))
      return core::ErrnoError(errno, "{}: cannot read the dynamic section", mem_path);
    if (d.d_tag == DT_NULL) break;
    if (d.d_tag == DT_DEBUG) r_debug = d.d_un.d_ptr;
  }
  if (!r_debug) return core::MakeError("DT_DEBUG is not set: the loader's r_debug cannot be found");
  uint64_t map = 0;
  if (!ReadAt(mem.get(), r_debug + 8, map)) return core::MakeError("r_debug at {:#x} cannot be read", r_debug);
  std::vector<LoadedObject> out;
  std::set<uint64_t> seen;
  while (map && out.size() < 65536 && seen.insert(map).second) {
    uint64_t l_addr = 0, l_name = 0, l_next = 0;
    if (!ReadAt(mem.get(), map, l_addr) || !ReadAt(mem.get(), map + 8, l_name) ||
        !ReadAt(mem.get(), map + 24, l_next)) {
      return core::MakeError("link_map entry at {:#x} cannot be read", map);
    }
    std::optional<std::string> name = l_name ? ReadString(mem.get(), l_name) : std::nullopt;
    if (name && !name->empty()) out.push_back({*name, l_addr});
    if (name && name->empty() && out.empty()) out.push_back({exe_path, l_addr});  // the main map has an empty name
    map = l_next;
  }
  return out;
}

}  // namespace

core::Result<ProcessObjects> ReadProcessObjects(int pid, const std::string& proc_root) {
  std::string maps_path = fmt::format("{}/{}/maps", proc_root, pid);
  GT_ASSIGN_OR_RETURN(std::string text, core::ReadFile(maps_path, 16u << 20));
  std::vector<core::Mapping> maps = core::ParseMaps(text);
  ProcessObjects out;
  auto linked = LinkMap(pid, proc_root, maps);
  if (linked.ok() && !linked->empty()) {
    out.objects = std::move(*linked);
    out.load_order = true;
    return out;
  }
  out.note = linked.ok() ? "the link map is empty" : linked.error().message;
  std::set<std::string> seen;
  for (const core::Mapping& m : maps) {
    if (m.path.empty() || m.path.front() != '/' || m.file_offset != 0 || !seen.insert(m.path).second) continue;
    // Only ELF files: a mapped data file or font is not a library.
    if (auto elf = ReadElfDynamic(m.path, false); elf.ok()) out.objects.push_back({m.path, m.start});
  }
  return out;
}

}  // namespace gputriage::libs
