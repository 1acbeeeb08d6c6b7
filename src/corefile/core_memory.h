// The memory of a dead process, as its core file has it: PT_LOAD segments for what was dumped,
// and the mapped files (NT_FILE) for what was not (file-backed text pages usually are not).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "corefile/core_notes.h"

namespace gputriage::corefile {
namespace internal {
struct CoreImage;
}

/// Reads addresses of the process a core was taken from. Copyable and cheap to copy (the
/// core's bytes or descriptor are shared); Read is const and uses only pread/memcpy, so copies
/// and one instance may be read from several threads.
class CoreMemory {
 public:
  /// From the core's bytes (copied; `bytes` need not outlive the result) and its parsed notes
  /// (NT_FILE is kept for the file fallback). Fails as ParseCoreNotes does on bytes that are not
  /// a 64-bit ELF core or whose program headers are truncated.
  static core::Result<CoreMemory> FromBytes(std::string_view bytes, const CoreNotes& notes,
                                            std::string_view source_name);

  /// From the core file at `path`, kept open and read with pread as needed (a multi-GB core is
  /// not loaded). Messages name `path`.
  static core::Result<CoreMemory> OpenFile(const std::string& path, const CoreNotes& notes);

  /// Up to `length` bytes of process memory from `address`: from a PT_LOAD segment whose file
  /// contents (p_filesz, clipped to what the file holds) cover it, else from the file NT_FILE
  /// names for that address (read at file_offset + (address - start)). Contiguous segments and
  /// mappings are followed; the result stops at the first byte that is in neither, so it may be
  /// shorter than `length`. nullopt when not even the first byte is available (unmapped, not
  /// dumped and the mapped file is missing or shorter). Never reads outside the core.
  std::optional<std::vector<uint8_t>> Read(uint64_t address, size_t length) const;

  /// Number of PT_LOAD segments.
  size_t segment_count() const { return segments_.size(); }

  /// Set when the core is shorter than its program headers say (a PT_NOTE or PT_LOAD segment's
  /// p_offset + p_filesz past the end of the file): Read returns less than the process had.
  const std::optional<core::CoreTruncation>& truncation() const { return truncation_; }

  /// True when a PT_LOAD segment covers `address` (p_vaddr .. p_vaddr + p_memsz), whether or
  /// not its contents were dumped: the address was mapped in the process.
  bool Mapped(uint64_t address) const;

 private:
  struct Segment {
    uint64_t vaddr = 0;
    uint64_t memsz = 0;
    uint64_t offset = 0;
    uint64_t filesz = 0;  ///< clipped to the bytes the core really holds
  };
  struct Source;  // the core's bytes or open descriptor

  CoreMemory() = default;
  static CoreMemory Build(const internal::CoreImage& image, const CoreNotes& notes,
                          std::shared_ptr<const Source> source);
  size_t ReadChunk(uint64_t address, uint8_t* out, size_t length) const;
  size_t ReadFromCore(uint64_t address, uint8_t* out, size_t length) const;
  size_t ReadFromMappedFile(uint64_t address, uint8_t* out, size_t length) const;

  std::shared_ptr<const Source> source_;
  std::vector<Segment> segments_;  // sorted by vaddr
  std::vector<core::Mapping> files_;
  std::optional<core::CoreTruncation> truncation_;
};

}  // namespace gputriage::corefile
