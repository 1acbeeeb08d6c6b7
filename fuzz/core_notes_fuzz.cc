// Fuzz target for the core file readers: the bytes are parsed as an ELF core's notes, and the
// memory of the parsed core is read at the registers' values, the NT_FILE mappings and a few
// fixed addresses, as the crash report does. The mapped-file fallback is reached too, but only
// for regular files outside /proc, /sys and /dev (CoreMemory refuses the rest).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "corefile/core_memory.h"
#include "corefile/core_notes.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto notes = gputriage::corefile::ParseCoreNotes(bytes, "fuzz");
  if (!notes.ok()) return 0;
  auto memory = gputriage::corefile::CoreMemory::FromBytes(bytes, *notes, "fuzz");
  if (!memory.ok()) return 0;
  for (uint64_t address : {uint64_t{0}, uint64_t{0x1000}, UINT64_MAX - 8, UINT64_MAX}) {
    (void)memory->Read(address, 64);
  }
  for (const auto& thread : notes->threads) {
    for (const auto& reg : thread.registers) (void)memory->Read(reg.value, 32);
  }
  size_t files = 0;
  for (const auto& file : notes->files) {
    if (++files > 8) break;
    (void)memory->Read(file.start, 16);
    (void)memory->Read(file.end - 1, 16);
  }
  return 0;
}
