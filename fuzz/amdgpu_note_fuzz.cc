// Fuzz target for the AMDGPU code object reader (src/inspect/amd.h, ReadAmdgpuCodeObject).
// Bytes that start with the ELF magic are read as a code object. Any other bytes are the
// MessagePack of an NT_AMDGPU_METADATA note: they are wrapped in a minimal code object (ELF64,
// EM_AMDGPU, HSA, v4, gfx90a, one PT_NOTE segment and no section headers), so that the
// metadata reader is fuzzed directly. The reader's promises are checked.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "inspect/amd.h"

using namespace gputriage::inspect;

namespace {

template <typename T>
void Put(std::string* out, size_t offset, T value) {
  std::memcpy(out->data() + offset, &value, sizeof(T));
}

/// ELF header (64 bytes), one program header (56), then the note: namesz, descsz, type,
/// "AMDGPU\0" padded to 8, the MessagePack padded to 4 (AMDGPUUsage "Note Records").
std::string WrapAsMetadataNote(std::string_view msgpack) {
  constexpr size_t kNoteAt = 64 + 56;
  std::string elf(kNoteAt + 12 + 8, '\0');
  std::memcpy(elf.data(),
              "\x7f"
              "ELF",
              4);
  elf[4] = 2;                      // ELFCLASS64
  elf[5] = 1;                      // little-endian
  elf[6] = 1;                      // EV_CURRENT
  elf[7] = 64;                     // ELFOSABI_AMDGPU_HSA
  elf[8] = 2;                      // code object v4
  Put<uint16_t>(&elf, 16, 3);      // ET_DYN
  Put<uint16_t>(&elf, 18, 224);    // EM_AMDGPU
  Put<uint32_t>(&elf, 20, 1);      // e_version
  Put<uint64_t>(&elf, 32, 64);     // e_phoff
  Put<uint32_t>(&elf, 48, 0xe3f);  // gfx90a, sramecc on, xnack off
  Put<uint16_t>(&elf, 52, 64);     // e_ehsize
  Put<uint16_t>(&elf, 54, 56);     // e_phentsize
  Put<uint16_t>(&elf, 56, 1);      // e_phnum
  size_t desc_bytes = (msgpack.size() + 3) & ~size_t{3};
  Put<uint32_t>(&elf, 64, 4);                         // PT_NOTE
  Put<uint64_t>(&elf, 64 + 8, kNoteAt);               // p_offset
  Put<uint64_t>(&elf, 64 + 32, 12 + 8 + desc_bytes);  // p_filesz
  Put<uint32_t>(&elf, kNoteAt, 7);                    // namesz
  Put<uint32_t>(&elf, kNoteAt + 4, msgpack.size());   // descsz
  Put<uint32_t>(&elf, kNoteAt + 8, 32);               // NT_AMDGPU_METADATA
  std::memcpy(elf.data() + kNoteAt + 12, "AMDGPU", 6);
  elf.append(msgpack);
  elf.resize(kNoteAt + 12 + 8 + desc_bytes, '\0');
  return elf;
}

void Check(const CodeObject& object, std::string_view elf) {
  if (object.size != elf.size() || object.vendor != "amd") std::abort();
  if (object.error && (object.error->empty() || !object.kernels.empty())) std::abort();
  if (!object.error && (!LooksLikeAmdgpuElf(elf) || object.format.empty())) std::abort();
  for (const Kernel& kernel : object.kernels) {
    if (kernel.name.empty() && kernel.symbol.empty()) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  (void)LooksLikeAmdgpuElf(bytes);
  if (bytes.substr(0, 4) == std::string_view("\x7f"
                                             "ELF",
                                             4)) {
    Check(ReadAmdgpuCodeObject(bytes, "fuzz"), bytes);
  } else {
    std::string elf = WrapAsMetadataNote(bytes);
    Check(ReadAmdgpuCodeObject(elf, "fuzz"), elf);
  }
  return 0;
}
