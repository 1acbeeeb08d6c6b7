// /etc/ld.so.cache, as ldconfig writes it (glibc's "glibc-ld.so.cache1.1" format, alone or after
// the old "ld.so-1.7.0" table): library name -> path, for the loader's architecture. The format
// is glibc's sysdeps/generic/dl-cache.h: a 48-byte header (magic, version, nlibs, len_strings,
// flags, extension offset), then nlibs 24-byte entries (flags, key, value, osversion, hwcap)
// whose key and value are string offsets.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gputriage::libs {

struct LdCacheEntry {
  std::string name;   ///< "libz.so.1"
  std::string path;   ///< "/lib/x86_64-linux-gnu/libz.so.1"
  int32_t flags = 0;  ///< FLAG_ELF_LIBC6 (3) | FLAG_X8664_LIB64 (0x0300), ...
  uint64_t hwcap = 0;
};

struct LdCache {
  std::vector<LdCacheEntry> entries;  ///< in file order
  /// The entries for `name` usable by an x86-64 process, in file order.
  std::vector<const LdCacheEntry*> Find(std::string_view name) const;
  std::multimap<std::string, size_t, std::less<>> by_name;
};

/// Parses the cache's bytes; `source` names it in errors. Entries whose strings lie outside the
/// file fail the parse (a corrupt cache is reported, not half-used).
core::Result<LdCache> ParseLdCache(std::string_view bytes, std::string_view source);

/// Reads and parses `path` (bounded: 64 MiB).
core::Result<LdCache> ReadLdCache(const std::string& path);

/// Whether an entry's flags say "ELF libc6 for x86-64".
bool IsX8664Entry(int32_t flags);

}  // namespace gputriage::libs
