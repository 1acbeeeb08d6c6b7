// Reading a packed crash bundle (`gputriage bundles pack`'s .tar.zst, or a plain tar) for
// `analyze` and `report`: the archive is untrusted input, read in memory with libarchive under
// limits, never extracted to disk. Only the files core::ReadBundle reads of a directory are kept,
// with the same bounds, so a packed bundle analyses as its directory does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/bundle.h"
#include "core/result.h"
#include "pack/zstd_stream.h"

namespace gputriage::pack {

struct PackedBundleLimits {
  /// Entries in the archive, the top directory included (a bundle has about 14 files).
  size_t max_members = 64;
  /// Everything the archive's members hold together, skipped ones (a core) included: reading
  /// stops, with an error, past this.
  uint64_t max_total_bytes = 64ull << 30;
};

struct PackedBundle {
  std::string top;                         ///< the one top directory every member is in
  core::BundleFileSet files;               ///< the members core::BundleFromFiles reads, each within its bound
  std::vector<std::string> other_members;  ///< names of the members not read (core, findings.json), sorted
};

/// True when `bytes` (the start of a decompressed stream) is a tar header: "ustar" at offset 257.
bool LooksLikeTar(std::string_view bytes);

/// Reads the tar archive `source`, zstd-compressed or not. Every member must be `TOP/` (a
/// directory) or `TOP/NAME` (a regular file), with one TOP for all. Fails with kInvalidArgument,
/// naming `name` and the member, for: an absolute path, a `..` or empty component, a member in a
/// subdirectory, another top directory, a symbolic or hard link, a device, FIFO or socket, a
/// name that appears twice, more than limits.max_members entries, more than
/// limits.max_total_bytes of member data, and an archive libarchive cannot read (truncated,
/// corrupt: its message). A member of the bundle layout larger than its bound is kept as
/// core::ReadBundle keeps such a file (a tail: its end, with a problem; a JSON file: a problem).
core::Result<PackedBundle> ReadPackedBundle(const ByteSource& source, std::string_view name,
                                            const PackedBundleLimits& limits = {});

/// ReadPackedBundle, then core::BundleFromFiles with `name` as the bundle's directory: the
/// bundle as `analyze` reads it.
core::Result<core::Bundle> ReadPackedBundleModel(const ByteSource& source, std::string_view name,
                                                 const PackedBundleLimits& limits = {});

}  // namespace gputriage::pack
