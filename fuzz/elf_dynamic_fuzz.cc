// Fuzz target for the ELF dynamic-section reader of `libs` (src/libs/elf_dynamic.h): any file on
// a library search path can be damaged, truncated, of another class or byte order. The reader
// must answer a result or an error naming the input, never crash; a result's names must lie in
// its string tables (they are touched here), and diffing it against itself finds nothing.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "libs/diff.h"
#include "libs/elf_dynamic.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto elf = gputriage::libs::ParseElfDynamic(std::span<const uint8_t>(data, size), "fuzz.so", true);
  if (!elf.ok()) {
    if (!elf.error().message.starts_with("fuzz.so: ")) std::abort();  // errors name the input
    return 0;
  }
  size_t total = 0;
  for (const auto& s : elf->symbols) total += s.name.size() + s.version.size() + s.version_file.size();
  for (const auto& n : elf->needed) total += n.size();
  gputriage::core::SymbolDiff same = gputriage::libs::DiffSymbols(*elf, *elf);
  if (!same.removed.empty() || !same.changed.empty() || same.abi_break) std::abort();
  (void)elf->Describe();
  return total == SIZE_MAX;
}
