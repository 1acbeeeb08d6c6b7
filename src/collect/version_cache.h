// Private to src/collect: the toolchain collector's memory of `--version` results between runs.
// A program's version is kept with the identity of the file that was run (device, inode, size,
// modification and status-change times in nanoseconds): replacing or editing the program changes
// one of them, and it is run again. A wrapper script whose version comes from other files is
// re-run when those are reinstalled only if its own file changes too (pip and dpkg write new
// files). One JSON file, written under a temporary name and renamed; a missing, unreadable,
// malformed or foreign cache is an empty one, and one that cannot be written stays as it was: the
// cache saves time and never changes what a snapshot reports.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "collect/toolchain.h"
#include "core/fs.h"
#include "core/result.h"

namespace gputriage::collect {

using core::FileIdentity;
using core::IdentityOf;

class VersionCache {
 public:
  /// The cache in the file `path`; empty when the file is missing or is not a cache of this format.
  static VersionCache Load(const std::string& path);

  /// The version remembered for `program` (a real path) when its file still has `identity`.
  std::optional<ToolVersion> Find(const std::string& program, const FileIdentity& identity) const;
  void Remember(const std::string& program, const FileIdentity& identity, const ToolVersion& version);

  /// Writes the cache when something was remembered since Load (creating its directory, mode
  /// 0700). Errors name the path; callers ignore them (the next run reads the versions again).
  core::Result<void> Save() const;

 private:
  struct Entry {
    FileIdentity identity;
    ToolVersion version;
  };
  std::string path_;
  std::map<std::string, Entry> entries_;
  bool changed_ = false;
};

}  // namespace gputriage::collect
