// The undefined-symbol check's results remembered between runs. What `ldd -r` reports for a
// closure depends only on the files of the closure: the check's result is kept under a key made of
// every object's path and file identity (device, inode, size, modification and status-change
// times), in load order. Installing, replacing or editing any library of the closure, or a change
// of search path that loads another file, makes another key, and the tables are read again. One
// JSON file, written under a temporary name and renamed; a missing, unreadable, malformed or
// foreign cache is an empty one, one that cannot be written stays as it was: the cache saves the
// reading of symbol tables (10^5 symbols in libtorch_cpu.so) and never changes what is reported.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/libs.h"
#include "core/result.h"
#include "libs/resolve.h"

namespace gputriage::libs {

class SymbolCheckCache {
 public:
  /// What the check found for one closure: its undefined symbols and the symbol tables that
  /// could not be read ("symbols: ..." errors).
  struct Result {
    std::vector<core::UndefinedSymbol> undefined;
    std::vector<core::LibraryError> errors;
    bool operator==(const Result&) const;
  };

  /// The cache in the file `path`; empty when the file is missing or not a cache of this format.
  explicit SymbolCheckCache(std::string path);

  /// The key of a closure resolved without symbols; nullopt when a file's identity cannot be read
  /// (such a closure is checked every time).
  static std::optional<std::string> KeyOf(const Closure& closure);

  /// The result remembered under `key`. Thread-safe.
  std::optional<Result> Find(const std::string& key);
  /// Remembers `result` under `key` (a result too large to keep is not kept). Thread-safe.
  void Remember(const std::string& key, Result result);

  /// Writes the cache when something was remembered since Load: the results found or remembered
  /// by this run first, then older ones, up to a bound. Errors name the path; callers ignore them.
  core::Result<void> Save();

 private:
  struct Entry {
    Result result;
    bool used = false;
  };
  std::string path_;
  std::mutex mutex_;
  std::map<std::string, Entry> entries_;
  bool changed_ = false;
};

}  // namespace gputriage::libs
