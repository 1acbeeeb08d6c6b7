#include "corefile/elf_image.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/byte_reader.h"

namespace gputriage::corefile::internal {
namespace {

void InitLibelf() {
  static const bool initialised = elf_version(EV_CURRENT) != EV_NONE;
  (void)initialised;
}

// Why libelf refused the bytes, in words, for a file of `size` bytes that starts with `head`.
core::Error NotElfError(std::string_view source_name, uint64_t size, std::string_view head) {
  if (size == 0) return core::MakeError("{}: empty file (0 bytes), not an ELF core file", source_name);
  bool has_magic = head.size() >= SELFMAG && std::memcmp(head.data(), ELFMAG, SELFMAG) == 0;
  if (!has_magic) {
    return core::MakeError("{}: not an ELF file ({} bytes, no \\x7fELF magic at offset 0)", source_name, size);
  }
  return core::MakeError(
      "{}: ELF header truncated or invalid (file is {} bytes, an ELF64 header needs {}): "
      "truncated core?",
      source_name, size, sizeof(Elf64_Ehdr));
}

core::Result<CoreImage> CheckCore(ElfPtr elf, uint64_t file_size, std::string_view source_name, std::string_view head) {
  if (elf == nullptr || elf_kind(elf.get()) != ELF_K_ELF) {
    return NotElfError(source_name, file_size, head);
  }
  size_t ident_size = 0;
  const char* ident = elf_getident(elf.get(), &ident_size);
  if (ident == nullptr || ident_size < EI_NIDENT) return NotElfError(source_name, file_size, head);
  if (ident[EI_CLASS] != ELFCLASS64) {
    return core::MakeError("{}: {}: only 64-bit (ELFCLASS64) cores are supported", source_name,
                           ident[EI_CLASS] == ELFCLASS32
                               ? std::string("32-bit ELF (ELFCLASS32)")
                               : fmt::format("ELF class {}", static_cast<int>(ident[EI_CLASS])));
  }
  if (ident[EI_DATA] != ELFDATA2LSB) {
    return core::MakeError("{}: {}: only little-endian (ELFDATA2LSB) cores are supported", source_name,
                           ident[EI_DATA] == ELFDATA2MSB
                               ? std::string("big-endian ELF (ELFDATA2MSB)")
                               : fmt::format("ELF data encoding {}", static_cast<int>(ident[EI_DATA])));
  }
  GElf_Ehdr ehdr;
  if (gelf_getehdr(elf.get(), &ehdr) == nullptr) {
    return core::MakeError("{}: cannot read the ELF header ({} bytes): {}", source_name, file_size, elf_errmsg(-1));
  }
  if (ehdr.e_type != ET_CORE) {
    return core::MakeError("{}: ELF type {}, not a core file", source_name, ElfTypeName(ehdr.e_type));
  }
  // e_phnum as written: elf_getphdrnum quietly lowers it to the headers that fit in the file.
  size_t phnum = ehdr.e_phnum;
  if (phnum == PN_XNUM && elf_getphdrnum(elf.get(), &phnum) != 0) {
    return core::MakeError("{}: cannot count the program headers (PN_XNUM): {}", source_name, elf_errmsg(-1));
  }
  if (phnum == 0) return core::MakeError("{}: core file has no program headers", source_name);
  // libelf refuses program headers past the end without saying so; say it with the numbers.
  auto table_size = core::CheckedMul(phnum, sizeof(Elf64_Phdr));
  if (!table_size || !core::RangeInside(ehdr.e_phoff, *table_size, file_size)) {
    return core::MakeError(
        "{}: {} program headers at offset 0x{:x} run past the end of the file (0x{:x} bytes): "
        "truncated core?",
        source_name, phnum, ehdr.e_phoff, file_size);
  }
  CoreImage image;
  image.file_size = file_size;
  image.machine = ehdr.e_machine;
  image.phdrs.reserve(phnum);  // bounded: the table is inside the file
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr phdr;
    if (gelf_getphdr(elf.get(), static_cast<int>(i), &phdr) == nullptr) {
      return core::MakeError("{}: cannot read program header {} of {} at offset 0x{:x}: {}", source_name, i, phnum,
                             ehdr.e_phoff + i * sizeof(Elf64_Phdr), elf_errmsg(-1));
    }
    image.phdrs.push_back(phdr);
  }
  image.elf = std::move(elf);
  return image;
}

}  // namespace

std::string ElfTypeName(unsigned type) {
  switch (type) {
    case ET_NONE:
      return "ET_NONE";
    case ET_REL:
      return "ET_REL";
    case ET_EXEC:
      return "ET_EXEC";
    case ET_DYN:
      return "ET_DYN";
    case ET_CORE:
      return "ET_CORE";
    default:
      return "type " + std::to_string(type);
  }
}

core::Result<CoreImage> OpenCoreImage(char* image, size_t size, std::string_view source_name) {
  InitLibelf();
  std::string_view head(image, std::min<size_t>(size, EI_NIDENT));
  ElfPtr elf(size == 0 ? nullptr : elf_memory(image, size));
  return CheckCore(std::move(elf), size, source_name, head);
}

core::Result<CoreImage> OpenCoreFd(int fd, uint64_t file_size, std::string_view source_name) {
  InitLibelf();
  char head[EI_NIDENT] = {};
  ssize_t got = file_size == 0 ? 0 : pread(fd, head, sizeof(head), 0);
  if (got < 0) {
    return core::MakeError("{}: cannot read: {}", source_name, std::strerror(errno));
  }
  std::string_view head_view(head, static_cast<size_t>(got));
  ElfPtr elf(file_size == 0 ? nullptr : elf_begin(fd, ELF_C_READ, nullptr));
  return CheckCore(std::move(elf), file_size, source_name, head_view);
}

core::Result<core::ScopedFd> OpenRegularFile(const std::string& path, uint64_t* size) {
  core::ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return core::MakeError("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st;
  if (fstat(fd.get(), &st) != 0) {
    return core::MakeError("{}: cannot stat: {}", path, std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) return core::MakeError("{}: is a directory, not a core file", path);
  if (!S_ISREG(st.st_mode)) return core::MakeError("{}: not a regular file", path);
  *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

}  // namespace gputriage::corefile::internal
