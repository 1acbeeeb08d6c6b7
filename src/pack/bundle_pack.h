// `gputriage bundles pack`: one crash bundle as one .tar.zst to attach to a bug report, with the
// secrets redacted. Every JSON file is read into its typed model (core::BundleFromFiles), redacted
// there (core::RedactBundle, the snapshot's environment by variable name) and written back; every
// string left in it then goes through core::RedactText. The text files (the output tails,
// kmsg.log) go through core::RedactText. What cannot be redacted is left out: a core (raw memory)
// unless asked for, and any file that is not one of the bundle layout's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/bundle.h"
#include "core/model.h"
#include "core/result.h"

namespace gputriage::pack {

struct PackRequest {
  std::string bundle_dir;  ///< the bundle directory
  std::string output;      ///< the archive to write; "" for DefaultPackPath(bundle_dir)
  bool with_core = false;  ///< also pack `core`/`core.zst`, unredacted
  bool force = false;      ///< replace an existing output
};

struct PackedMember {
  std::string name;  ///< as in the archive: "TOP/process.json"
  uint64_t bytes = 0;
  bool redacted = false;  ///< went through redaction (false only for a core)
  bool changed = false;   ///< redaction replaced something in it
};

struct PackResult {
  std::string output;                        ///< the archive written
  std::string top;                           ///< its top directory: the bundle directory's name
  std::vector<PackedMember> members;         ///< sorted by name
  std::vector<core::NotCollected> left_out;  ///< files of the directory not packed, and why
  uint64_t archive_bytes = 0;
  bool core_included = false;
};

/// "<bundle directory's name>.tar.zst" in the current directory.
std::string DefaultPackPath(std::string_view bundle_dir);

/// The bundle as it goes into the archive, by file name ("manifest.json" -> its text), redacted;
/// `left_out` gets every file of `dir` that is not in it, and why (a core gets the reason that
/// raw memory cannot be redacted; with_core adds nothing here, the core is streamed by
/// PackBundle). The manifest says for each file left out that it is absent and why. Fails when
/// the directory is not a bundle (core::ReadBundle's errors).
struct RedactedBundle {
  std::vector<std::pair<std::string, std::string>> files;  ///< sorted by name
  std::vector<std::string> changed;                        ///< names whose redaction changed something
  std::vector<core::NotCollected> left_out;
  std::vector<std::string> cores;  ///< "core", "core.zst": regular files present in the directory
};
core::Result<RedactedBundle> RedactBundleForPack(const std::string& dir, bool with_core);

/// Writes the archive: a zstd-compressed POSIX tar, members sorted by name under one top
/// directory named after the bundle, each owned by 0:0 with mode 0644 (the directory 0755) and
/// the bundle directory's modification time, so packing the same bundle twice gives the same
/// bytes. Written to a temp file beside the output and renamed into place (mode 0600). Fails
/// (kInvalidArgument) when the output exists and !force, naming it; otherwise naming the file
/// that cannot be read or written.
core::Result<PackResult> PackBundle(const PackRequest& request);

}  // namespace gputriage::pack
