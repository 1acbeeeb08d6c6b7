// Internal: opening a core through libelf (from bytes we own or from a file descriptor) and the
// checks every reader of a core makes first (ELF, 64-bit little-endian, ET_CORE, program
// headers inside the file). Not part of the module's public interface.
#pragma once

#include <gelf.h>
#include <libelf.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/scoped_fd.h"

namespace gputriage::corefile::internal {

struct ElfDeleter {
  void operator()(Elf* elf) const { elf_end(elf); }
};
/// An open libelf handle; closing it does not close the descriptor it was opened on.
using ElfPtr = std::unique_ptr<Elf, ElfDeleter>;

/// A core opened through libelf, with its program headers read and checked.
struct CoreImage {
  ElfPtr elf;
  uint64_t file_size = 0;
  uint16_t machine = 0;  ///< e_machine
  std::vector<GElf_Phdr> phdrs;
};

/// Opens `image` (which must stay alive and unmodified while the result is used; libelf may
/// convert data in place, hence non-const) as a core. `source_name` starts every message.
core::Result<CoreImage> OpenCoreImage(char* image, size_t size, std::string_view source_name);

/// Opens the core on descriptor `fd` (of `file_size` bytes), read lazily with pread.
core::Result<CoreImage> OpenCoreFd(int fd, uint64_t file_size, std::string_view source_name);

/// "ET_DYN", "ET_CORE", ... or "type <n>".
std::string ElfTypeName(unsigned type);

/// Opens `path` read-only for a core reader: fails (naming `path` and the errno text) when it
/// cannot be opened, is a directory or is not a regular file. Never blocks on a FIFO.
core::Result<core::ScopedFd> OpenRegularFile(const std::string& path, uint64_t* size);

}  // namespace gputriage::corefile::internal
