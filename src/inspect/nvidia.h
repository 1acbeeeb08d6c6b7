// NVIDIA GPU code inside binaries: fatbin containers (the `.nv_fatbin` section of a host ELF, or
// a .fatbin file), their entries (SASS cubins per sm_XX, PTX per compute_XX; LZ4- or
// zstd-compressed entries decoded), and in each cubin the per-kernel attributes the driver reads
// from `.nv.info`: registers, launch bounds, stack frame, parameter size, static shared memory.
//
// Formats (no NVIDIA specification is published; checked against nvcc 13.0 output in the tests):
// - fatbin container: 16-byte header {u32 magic 0xBA55ED50, u16 version 1, u16 header size 16,
//   u64 size of the entries that follow}; entries back to back, each {u16 kind (1 PTX, 2 ELF),
//   u16, u32 entry-header size (64, 80, 112), u64 payload size (padded), u32 compressed size,
//   u32, u16 minor, u16 major, u32 arch (e.g. 90), u32 name offset, u32 name length, u64 flags,
//   u64, u64 uncompressed size}; flag 0x2000 = LZ4 block (nvcc --compress-mode=speed), 0x8000 =
//   zstd frame (the other modes). Public descriptions: n-eiling/cuda-fatbin-decompression and
//   GrigoryEvko/nvopen-tools fatbin/FORMAT_SPECIFICATION.md.
// - cubin: ELF64, e_machine EM_CUDA (190); `.nv.info` and `.nv.info.<kernel>` hold records
//   {u8 format, u8 attribute, u16 value-or-length} (format 4 = a length and that many bytes
//   follow); attributes used: 0x2f REGCOUNT {sym, value}, 0x11 FRAME_SIZE {sym, value}, 0x05
//   MAX_THREADS {x, y, z}, 0x19 CBANK_PARAM_SIZE (u16 value). Static shared memory is the size
//   of `.nv.shared.<kernel>`.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "inspect/model.h"

namespace gputriage::inspect {

/// One fatbin entry, located but not yet decoded.
struct FatbinEntry {
  uint16_t kind = 0;  ///< 1 PTX, 2 ELF (cubin)
  uint32_t arch = 0;  ///< 90 for sm_90 / compute_90
  uint64_t flags = 0;
  uint64_t payload_offset = 0;  ///< from the start of the data the entries were listed from
  uint64_t payload_size = 0;    ///< bytes stored (compressed size when compressed)
  uint64_t uncompressed_size = 0;
  uint64_t container_offset = 0;
  bool compressed() const { return (flags & 0xa000) != 0; }
  /// "a" (flag 0x100000: arch-specific, sm_90a), "f" (0x200000: family, sm_100f) or "".
  std::string_view suffix() const { return flags & 0x100000 ? "a" : flags & 0x200000 ? "f" : ""; }
};

/// Lists the entries of every fatbin container in [begin, begin + length) of the data `read`
/// gives access to (a .fatbin file, or a host binary's .nv_fatbin section); nothing outside that
/// range is read. Containers are found by their magic; a container whose header is truncated or
/// whose header, entries or entry sizes run past the range or their container is reported in
/// *problems ("ORIGIN: fatbin container at 0x...: ...", offsets in `read`'s coordinates) and
/// skipped, the others are still listed.
std::vector<FatbinEntry> ListFatbinEntries(const RangeReader& read, uint64_t begin, uint64_t length,
                                           std::string_view origin, std::vector<std::string>* problems);

/// What an entry's header alone says: vendor, arch ("sm_90a", "compute_90"), format, origin,
/// compression and size; no kernels. DecodeFatbinEntry starts from it.
CodeObject FatbinEntryObject(const FatbinEntry& entry, std::string_view origin);

/// Decodes one entry: decompresses it (LZ4 or zstd) and reads the cubin or the PTX. Errors are
/// in the result's `error`.
CodeObject DecodeFatbinEntry(const RangeReader& read, const FatbinEntry& entry, std::string_view origin);

/// A whole fatbin in memory (a .fatbin file, a section, a fuzz input): every entry decoded, and
/// one object with an `error` (origin `origin`) per problem ListFatbinEntries reports.
std::vector<CodeObject> ReadNvFatbin(std::string_view data, std::string_view origin);

/// A cubin: its kernels and their attributes. `arch` and `suffix` ("a", "f") override what the
/// cubin says (e_flags, and .nv.compat for "a") when `arch` is not 0.
CodeObject ReadCubin(std::string_view elf, std::string_view origin, uint32_t arch = 0, std::string_view suffix = "");

/// PTX text: its entry points and their .maxntid.
CodeObject ReadPtx(std::string_view text, std::string_view origin, uint32_t arch = 0, std::string_view suffix = "");

/// "_Z3addPfPKfi" -> "add(float*, float const*, int)"; the input when it is not an Itanium C++
/// name (no "_Z" prefix), is over 4 KiB or does not demangle. Used for AMD and NVIDIA kernels.
std::string Demangle(const std::string& symbol);

}  // namespace gputriage::inspect
