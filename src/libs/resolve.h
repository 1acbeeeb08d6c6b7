// The dependency closure as glibc's loader builds it, without running anything: breadth-first
// over DT_NEEDED; for each name, the DT_RPATH of the requesting object and its loaders (when it
// has no DT_RUNPATH), the executable's DT_RPATH, LD_LIBRARY_PATH, the requester's DT_RUNPATH,
// /etc/ld.so.cache, then the system directories (the last two skipped for DF_1_NODEFLIB), each
// directory with its glibc-hwcaps subdirectories first; a name already loaded (by path, DT_SONAME
// or an earlier request) is not searched again; a file of another ELF class or machine is
// skipped. Every other file that would have answered a name is a shadowed copy. Then, when asked,
// the undefined symbols (`ldd -r`): every non-weak undefined dynamic symbol (and every required
// symbol version) that no object of the closure defines.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/libs.h"
#include "libs/elf_dynamic.h"
#include "libs/ld_cache.h"
#include "libs/loader_config.h"

namespace gputriage::libs {

/// ELF files already read, shared by the closures of several roots (libc, libstdc++ and the CUDA
/// runtime are in most of them, and every root's search looks at the same candidates): each file
/// is read once for its dynamic section and once for its symbol tables. Thread-safe.
class ElfMemo {
 public:
  /// ReadElfDynamic(path, with_symbols), from memory when `path` was read so before.
  std::shared_ptr<const core::Result<ElfDynamic>> Read(const std::string& path, bool with_symbols);

  /// The device and inode of `path` when it is a regular file (stat, following links), from
  /// memory when asked before: each root's search tries the same directories.
  std::optional<std::pair<uint64_t, uint64_t>> RegularFile(const std::string& path);
  /// RealPath(path), from memory when asked before.
  std::string Real(const std::string& path);

 private:
  // The value under `key` in `memo`, computed outside the lock the first time (two threads asking
  // at once may both compute it; the first kept).
  template <class Map, class Compute>
  typename Map::mapped_type Remembered(Map& memo, const typename Map::key_type& key, Compute compute);

  std::mutex mutex_;
  std::map<std::pair<std::string, bool>, std::shared_ptr<const core::Result<ElfDynamic>>> read_;
  std::map<std::string, std::optional<std::pair<uint64_t, uint64_t>>> stat_;
  std::map<std::string, std::string> real_;
};

struct ResolveOptions {
  LoaderConfig config;
  std::optional<LdCache> cache;   ///< absent: the cache could not be read (said in errors)
  bool symbols = true;            ///< check undefined symbols (reads every .dynsym)
  int threads = 0;                ///< symbol tables read side by side (0: one per CPU, at most 8)
  std::shared_ptr<ElfMemo> memo;  ///< set: files read once for several closures
};

/// One object of a resolved closure: its ELF view and what the report says of it.
struct ResolvedObject {
  ElfDynamic elf;  ///< the dynamic section (no symbols)
  /// The same file read with its symbol tables (ReadClosureSymbols); shared with other closures.
  std::shared_ptr<const core::Result<ElfDynamic>> symbols;
  core::LibraryEntry entry;
  int loader = -1;                 ///< index of the object that caused it to be loaded
  std::vector<std::string> names;  ///< names it answers to (requests, DT_SONAME, path)
};

struct Closure {
  std::vector<ResolvedObject> objects;  ///< load order
  std::vector<core::MissingLibrary> missing;
  std::vector<core::ShadowedLibrary> shadowed;
  std::vector<core::LibraryError> errors;
};

/// Resolves `roots` (each its own program, as `ldd` takes them) into one closure. Never fails:
/// an unreadable root or library is an entry of `errors`, the rest is still resolved.
Closure ResolveClosure(const std::vector<std::string>& roots, const ResolveOptions& options);

/// Reads the symbol tables of every object of `closure` (side by side, `options.threads`, through
/// `options.memo` when set); a table that cannot be read is an error "symbols: ..." of the closure.
void ReadClosureSymbols(Closure& closure, const ResolveOptions& options);

/// `path` with every symbolic link and ".." resolved (std::filesystem::canonical); `path` itself
/// when that fails.
std::string RealPath(const std::string& path);

/// `ldd -r`'s undefined symbols and missing symbol versions of a closure whose symbols were read
/// (resolved with `symbols`, or ReadClosureSymbols).
std::vector<core::UndefinedSymbol> UndefinedSymbols(const Closure& closure);

}  // namespace gputriage::libs
