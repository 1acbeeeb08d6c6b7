// The AMD half of `gputriage inspect`: Clang offload bundles (plain and compressed), the
// `.hip_fatbin` section of a host binary that holds them, and AMDGPU code objects (ELF) with
// their kernel metadata. Every reader takes bytes, not paths, and treats them as untrusted:
// offsets and sizes are bounds-checked, damage becomes an error that names the numbers.
//
// Formats, and where they are documented:
// - offload bundle: clang/docs/ClangOffloadBundler.rst ("Bundled Code Object Layout");
// - compressed bundle ("CCOB"): clang/include/clang/Driver/OffloadBundler.h and
//   llvm/include/llvm/Object/OffloadBundle.h, class CompressedOffloadBundle;
// - code objects and their metadata note: llvm/docs/AMDGPUUsage.rst ("ELF Code Object",
//   "Code Object Metadata").
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "inspect/model.h"

namespace gputriage::inspect {

/// Largest decompressed bundle accepted (a compressed bundle's header declares its size; a
/// larger declaration is refused before anything is allocated).
inline constexpr uint64_t kMaxDecompressedBundleBytes = uint64_t{4} << 30;

/// One entry of an offload bundle.
struct BundleEntry {
  std::string id;         ///< as stored: "hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"
  std::string kind;       ///< the offload kind before the first '-': "hipv4", "hip", "host"
  std::string triple;     ///< "amdgcn-amd-amdhsa-" (empty environment), "x86_64-unknown-linux"
  std::string target_id;  ///< what follows the triple: "gfx90a:sramecc+:xnack-"; may be empty
  /// The entry's bytes. They point into the `data` given to ReadOffloadBundle, or, for a
  /// compressed bundle, into `storage`; either must outlive this view.
  std::string_view bytes;
  uint64_t offset = 0;      ///< of `bytes` in the (decompressed) bundle
  bool compressed = false;  ///< the bundle was compressed; `bytes` are decompressed
  /// Holds the decompressed bundle when `compressed` (shared by all its entries, so copies of
  /// an entry keep its bytes alive); null when `bytes` point into the caller's data.
  std::shared_ptr<const std::string> storage;
  /// Set when this entry's offset/size lie outside the bundle (then `bytes` is empty); the
  /// other entries of the bundle are still read.
  std::optional<std::string> error;
};

/// Reads the offload bundle that starts at data[0]: "__CLANG_OFFLOAD_BUNDLE__" (plain) or
/// "CCOB" (compressed, zlib or zstd, header versions 1-3; decompressed into an owned buffer of
/// at most `max_decompressed_bytes`). On success `*consumed` (when not null) is the number of
/// bytes of `data` the bundle occupies, so a reader can look for the next bundle after it.
/// Fails, naming the field and the numbers, on a wrong magic, a truncated header, an entry
/// count or id that cannot fit, an unknown compression version or method, a declared size
/// over the limit, or compressed data that does not decompress to the declared size. An entry
/// whose offset/size lie is returned with `error` set.
core::Result<std::vector<BundleEntry>> ReadOffloadBundle(std::string_view data, size_t* consumed,
                                                         uint64_t max_decompressed_bytes = kMaxDecompressedBundleBytes);

/// Splits a bundle entry id "<kind>-<triple>[-<target id>]" into `entry`'s kind, triple and
/// target id, as clang-offload-bundler does: the target id is the part from the last '-'
/// before its first ':', when that names a GPU processor ("gfx90a", "sm_90").
void SplitBundleId(std::string_view id, BundleEntry* entry);

/// The code objects in the content of a host binary's `.hip_fatbin` section: one or more
/// offload bundles, found by scanning for their magics (each usually starts 4096-aligned;
/// padding between them is skipped). One CodeObject per amdgcn entry ("host-" entries and
/// other triples are skipped), vendor "amd", origin "<origin>+0x<offset in the section>".
/// A bundle or entry that cannot be read becomes a CodeObject with `error` set and the scan
/// goes on; a section with no bundle at all gives one such CodeObject. Never fails as a whole.
std::vector<CodeObject> ReadHipFatbin(std::string_view section, std::string_view origin,
                                      uint64_t max_decompressed_bytes = kMaxDecompressedBundleBytes);

/// Receives code objects one at a time, in the order of the data.
using CodeObjectCallback = std::function<void(CodeObject&&)>;

/// ReadHipFatbin over data it reads through `read`, [0, size) in `read`'s coordinates (a host
/// binary's `.hip_fatbin` section, a bundle file), one offload bundle at a time: the bundle's
/// extent comes from its header (a plain bundle's entry table, a compressed bundle's total size;
/// version 1 compressed bundles, which declare none, run to the next bundle magic), only that
/// is read, and each code object goes to `sink` as soon as it is parsed. Memory is bounded by
/// the largest bundle, not the section (Debian's librocsparse.so.0.1: a 1.2 GB section, bundles
/// of at most tens of MB). A bundle whose header is damaged is read with the rest of the data,
/// as ReadHipFatbin reads it, so that the objects and errors are the same as ReadHipFatbin's on
/// the whole data. `progress`, when set, is called after each bundle with the bytes passed.
void StreamHipFatbin(const RangeReader& read, uint64_t size, std::string_view origin, const CodeObjectCallback& sink,
                     const std::function<void(uint64_t done)>& progress = nullptr,
                     uint64_t max_decompressed_bytes = kMaxDecompressedBundleBytes);

/// True when `data` starts like an AMDGPU ELF: ELF magic, ELFCLASS64, little-endian,
/// e_machine EM_AMDGPU (224). Says nothing about the rest.
bool LooksLikeAmdgpuElf(std::string_view data);

/// Reads one AMDGPU code object (ELF64, EM_AMDGPU, ELFOSABI_AMDGPU_HSA): format
/// "hsaco-v2".."hsaco-v6" from EI_ABIVERSION, arch and target id from the metadata's
/// amdhsa.target (else from e_flags), and the kernels of the NT_AMDGPU_METADATA note
/// (MessagePack). Damage (truncation, headers or notes out of bounds, malformed or unknown
/// metadata) sets `error`; what was read before the damage (format, arch) stays. Code object
/// v2 (YAML metadata) gives format "hsaco-v2" and the error "code object v2 metadata (YAML) is
/// not read". `size` is elf.size().
CodeObject ReadAmdgpuCodeObject(std::string_view elf, std::string_view origin);

}  // namespace gputriage::inspect
