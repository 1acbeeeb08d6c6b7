#include "libs/resolve.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <filesystem>
#include <map>
#include <set>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

namespace gputriage::libs {
namespace {

namespace fs = std::filesystem;

using FileId = std::pair<uint64_t, uint64_t>;  // device, inode

std::optional<FileId> IdOf(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return FileId{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

std::string Absolute(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

}  // namespace

std::string RealPath(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::canonical(path, ec);
  return ec ? path : p.string();
}

namespace {

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// One place the loader would look, and why.
struct Candidate {
  std::string dir;
  std::string via;
};

class Resolver {
 public:
  Resolver(const ResolveOptions& options) : options_(options) {}

  Closure Run(const std::vector<std::string>& roots) {
    for (const std::string& root : roots) AddRoot(root);
    for (size_t i = 0; i < closure_.objects.size(); ++i) {
      std::vector<std::string> needed = closure_.objects[i].elf.needed;
      for (const std::string& name : needed) Need(static_cast<int>(i), name);
    }
    if (options_.symbols) ReadClosureSymbols(closure_, options_);
    return std::move(closure_);
  }

 private:
  void AddRoot(const std::string& root) {
    auto elf = ReadElfDynamic(root, false);
    if (!elf.ok()) {
      closure_.errors.push_back({root, elf.error().message});
      return;
    }
    if (!elf->has_dynamic) {
      closure_.errors.push_back({root, "statically linked: no dynamic section, nothing to load"});
      return;
    }
    if (!reference_) reference_ = *elf;
    if (main_ < 0) main_ = static_cast<int>(closure_.objects.size());
    std::string path = Absolute(root);
    Add(std::move(*elf), path, "input", -1, root, 0);
  }

  int Add(ElfDynamic elf, const std::string& path, const std::string& via, int loader, const std::string& requested,
          int depth) {
    ResolvedObject o;
    o.entry.path = path;
    o.entry.realpath = Real(path);
    o.entry.soname =
        elf.soname.value_or(requested.find('/') == std::string::npos ? requested : fs::path(path).filename().string());
    o.entry.found_via = via;
    o.entry.depth = depth;
    o.loader = loader;
    o.names = {requested, path};
    if (elf.soname) o.names.push_back(*elf.soname);
    for (const std::string& p : elf.problems) closure_.errors.push_back({path, p});
    o.elf = std::move(elf);
    if (auto id = Id(path)) by_id_[*id] = static_cast<int>(closure_.objects.size());
    closure_.objects.push_back(std::move(o));
    return static_cast<int>(closure_.objects.size()) - 1;
  }

  // The effective DT_RPATH: ignored when the object has DT_RUNPATH, as the loader ignores it.
  static const std::optional<std::string>& RpathOf(const ResolvedObject& o) {
    static const std::optional<std::string> none;
    return o.elf.runpath ? none : o.elf.rpath;
  }

  std::string OriginOf(int index) const {
    const ResolvedObject& o = closure_.objects[index];
    // The executable's $ORIGIN is its real location (/proc/self/exe); a library's, the
    // directory of the path it was opened by.
    return DirName(index == main_ ? o.entry.realpath.value_or(*o.entry.path) : *o.entry.path);
  }

  void AddDirs(std::vector<Candidate>& out, const std::string& path, int owner, const std::string& via) {
    for (std::string& dir : ExpandSearchPath(path, OriginOf(owner), options_.config))
      out.push_back({std::move(dir), via});
  }

  std::vector<Candidate> SearchOrder(int requester) {
    std::vector<Candidate> out;
    const ResolvedObject& r = closure_.objects[requester];
    if (!r.elf.runpath) {
      bool did_main = false;
      for (int l = requester; l >= 0; l = closure_.objects[l].loader) {
        if (const auto& rpath = RpathOf(closure_.objects[l])) {
          AddDirs(out, *rpath, l, fmt::format("rpath of {}", *closure_.objects[l].entry.path));
          did_main = did_main || l == main_;
        }
      }
      if (!did_main && main_ >= 0) {
        if (const auto& rpath = RpathOf(closure_.objects[main_]))
          AddDirs(out, *rpath, main_, "rpath of the executable");
      }
    }
    for (const std::string& dir : options_.config.ld_library_path)
      out.push_back({dir.empty() ? "." : dir, "ld_library_path"});
    if (r.elf.runpath) AddDirs(out, *r.elf.runpath, requester, fmt::format("runpath of {}", *r.entry.path));
    return out;
  }

  // The cache's answer for `name`: the entry in the best supported glibc-hwcaps subdirectory,
  // else the plain one.
  std::vector<std::string> CacheAnswers(const std::string& name) const {
    std::vector<std::string> out;
    if (!options_.cache) return out;
    std::vector<const LdCacheEntry*> entries = options_.cache->Find(name);
    for (const std::string& h : options_.config.hwcaps_subdirs) {
      for (const LdCacheEntry* e : entries) {
        if (e->path.find("/glibc-hwcaps/" + h + "/") != std::string::npos) out.push_back(e->path);
      }
    }
    for (const LdCacheEntry* e : entries) {
      if (e->path.find("/glibc-hwcaps/") == std::string::npos) out.push_back(e->path);
    }
    return out;
  }

  // Whether `path` holds a library a process of the root's kind can load; the ELF read when so.
  std::optional<ElfDynamic> Usable(const std::string& path, std::vector<std::string>& tried) {
    if (!Id(path)) return std::nullopt;
    std::shared_ptr<const core::Result<ElfDynamic>> read =
        options_.memo ? options_.memo->Read(path, false)
                      : std::make_shared<const core::Result<ElfDynamic>>(ReadElfDynamic(path, false));
    const core::Result<ElfDynamic>& elf = *read;
    if (!elf.ok()) {
      tried.push_back(fmt::format("{} (skipped: {})", path, elf.error().message));
      return std::nullopt;
    }
    if (reference_ && !elf->Compatible(*reference_)) {
      tried.push_back(
          fmt::format("{} (skipped: {}, the program is {})", path, elf->Describe(), reference_->Describe()));
      return std::nullopt;
    }
    return *elf;
  }

  int FindLoaded(const std::string& name) const {
    for (size_t i = 0; i < closure_.objects.size(); ++i) {
      const auto& names = closure_.objects[i].names;
      if (std::find(names.begin(), names.end(), name) != names.end()) return static_cast<int>(i);
    }
    return -1;
  }

  void Need(int requester, const std::string& name) {
    const std::string by = *closure_.objects[requester].entry.path;  // a copy: Add() grows the vector
    int depth = closure_.objects[requester].entry.depth.value_or(0) + 1;
    if (int loaded = FindLoaded(name); loaded >= 0) {
      NeededBy(loaded, by);
      return;
    }
    std::vector<std::string> tried;
    std::vector<std::pair<std::string, std::string>> answers;  // path, via
    if (name.find('/') != std::string::npos) {
      answers.push_back({name, "direct"});
    } else {
      for (const Candidate& c : SearchOrder(requester)) {
        for (const std::string& dir : SubdirectoriesTried(c.dir, options_.config)) {
          answers.push_back({dir + "/" + name, c.via.starts_with("rpath")     ? "rpath"
                                               : c.via.starts_with("runpath") ? "runpath"
                                                                              : c.via});
        }
      }
      if (!closure_.objects[requester].elf.nodeflib) {
        for (const std::string& path : CacheAnswers(name)) answers.push_back({path, "ld.so.cache"});
        for (const std::string& sys : options_.config.system_dirs) {
          for (const std::string& dir : SubdirectoriesTried(sys, options_.config))
            answers.push_back({dir + "/" + name, "default"});
        }
      }
    }
    int chosen = -1;
    std::vector<std::string> shadowed;
    std::set<std::string> seen;
    for (const auto& [path, via] : answers) {
      std::string abs = Absolute(path);
      if (!seen.insert(abs).second) continue;
      if (chosen < 0) {
        size_t before = tried.size();
        auto elf = Usable(abs, tried);
        if (!elf) {
          if (tried.size() == before) tried.push_back(abs);
          continue;
        }
        // The same file under another name (a symlink, the cache's path) is the loaded object.
        if (auto id = Id(abs); id && by_id_.count(*id)) {
          chosen = by_id_[*id];
          closure_.objects[chosen].names.push_back(name);
          NeededBy(chosen, by);
          continue;
        }
        bool hwcaps = abs.find("/glibc-hwcaps/") != std::string::npos;
        chosen = Add(std::move(*elf), abs, hwcaps ? via + " (hwcaps)" : via, requester, name, depth);
        NeededBy(chosen, by);
      } else if (std::vector<std::string> ignored; Usable(abs, ignored)) {
        if (Real(abs) != closure_.objects[chosen].entry.realpath) shadowed.push_back(abs);
      }
    }
    if (chosen < 0) {
      AddMissing(name, by, tried);
      return;
    }
    if (!shadowed.empty()) AddShadowed(name, *closure_.objects[chosen].entry.path, shadowed);
  }

  void NeededBy(int index, const std::string& by) {
    auto& list = closure_.objects[index].entry.needed_by;
    if (std::find(list.begin(), list.end(), by) == list.end()) list.push_back(by);
  }

  void AddMissing(const std::string& name, const std::string& by, std::vector<std::string> tried) {
    for (core::MissingLibrary& m : closure_.missing) {
      if (m.soname == name) {
        if (std::find(m.needed_by.begin(), m.needed_by.end(), by) == m.needed_by.end()) m.needed_by.push_back(by);
        return;
      }
    }
    closure_.missing.push_back({name, {by}, std::move(tried)});
  }

  void AddShadowed(const std::string& name, const std::string& chosen, std::vector<std::string> others) {
    for (const core::ShadowedLibrary& s : closure_.shadowed) {
      if (s.soname == name && s.chosen == chosen) return;
    }
    closure_.shadowed.push_back({name, chosen, std::move(others)});
  }

  std::optional<FileId> Id(const std::string& path) {
    return options_.memo ? options_.memo->RegularFile(path) : IdOf(path);
  }
  std::string Real(const std::string& path) { return options_.memo ? options_.memo->Real(path) : RealPath(path); }

  const ResolveOptions& options_;
  Closure closure_;
  std::optional<ElfDynamic> reference_;
  int main_ = -1;
  std::map<FileId, int> by_id_;
};

}  // namespace

template <class Map, class Compute>
typename Map::mapped_type ElfMemo::Remembered(Map& memo, const typename Map::key_type& key, Compute compute) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
  }
  typename Map::mapped_type value = compute();
  std::lock_guard<std::mutex> lock(mutex_);
  return memo.emplace(key, std::move(value)).first->second;
}

std::shared_ptr<const core::Result<ElfDynamic>> ElfMemo::Read(const std::string& path, bool with_symbols) {
  return Remembered(read_, {path, with_symbols}, [&] {
    return std::make_shared<const core::Result<ElfDynamic>>(ReadElfDynamic(path, with_symbols));
  });
}

std::optional<std::pair<uint64_t, uint64_t>> ElfMemo::RegularFile(const std::string& path) {
  return Remembered(stat_, path, [&] { return IdOf(path); });
}

std::string ElfMemo::Real(const std::string& path) {
  return Remembered(real_, path, [&] { return RealPath(path); });
}

// The dynamic sections resolved the closure; the symbol tables (most of the bytes: libtorch_cpu.so
// has about 10^5 dynamic symbols) are read side by side.
void ReadClosureSymbols(Closure& closure, const ResolveOptions& options) {
  std::atomic<size_t> next{0};
  size_t n = closure.objects.size();
  unsigned threads = options.threads > 0 ? static_cast<unsigned>(options.threads)
                                         : std::min(8u, std::max(1u, std::thread::hardware_concurrency()));
  auto work = [&]() {
    for (size_t i = next++; i < n; i = next++) {
      const core::LibraryEntry& e = closure.objects[i].entry;
      closure.objects[i].symbols =
          options.memo ? options.memo->Read(e.realpath.value_or(*e.path), true)
                       : std::make_shared<const core::Result<ElfDynamic>>(ReadElfDynamic(*e.path, true));
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < std::min<size_t>(threads, n); ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (ResolvedObject& o : closure.objects) {
    if (!o.symbols->ok()) closure.errors.push_back({*o.entry.path, "symbols: " + o.symbols->error().message});
  }
}

Closure ResolveClosure(const std::vector<std::string>& roots, const ResolveOptions& options) {
  Resolver resolver(options);
  return resolver.Run(roots);
}

namespace {

const ElfDynamic& SymbolsOf(const ResolvedObject& o) { return o.symbols && o.symbols->ok() ? **o.symbols : o.elf; }

}  // namespace

std::vector<core::UndefinedSymbol> UndefinedSymbols(const Closure& closure) {
  // The references first (usually far fewer names than the definitions), then one pass over
  // every definition keeping only those referenced.
  struct Reference {
    const DynamicSymbol* symbol;
    size_t object;
  };
  std::unordered_map<std::string_view, std::vector<Reference>> refs;
  for (size_t i = 0; i < closure.objects.size(); ++i) {
    for (const DynamicSymbol& s : SymbolsOf(closure.objects[i]).symbols) {
      if (!s.defined && !s.weak) refs[s.name].push_back({&s, i});
    }
  }
  struct Definitions {
    std::set<std::string_view> versions;  // "" for unversioned
    bool unversioned_object = false;      // defined by an object without version definitions
    bool default_version = false;         // a non-hidden definition
  };
  std::unordered_map<std::string_view, Definitions> defs;
  for (const ResolvedObject& o : closure.objects) {
    const ElfDynamic& elf = SymbolsOf(o);
    bool versioned = !elf.version_definitions.empty();
    for (const DynamicSymbol& s : elf.symbols) {
      if (!s.defined) continue;
      auto it = refs.find(s.name);
      if (it == refs.end()) continue;
      Definitions& d = defs[s.name];
      d.versions.insert(s.version);
      d.unversioned_object = d.unversioned_object || !versioned;
      d.default_version = d.default_version || !s.hidden_version;
    }
  }
  std::vector<core::UndefinedSymbol> out;
  for (size_t i = 0; i < closure.objects.size(); ++i) {
    for (const DynamicSymbol& s : SymbolsOf(closure.objects[i]).symbols) {
      if (s.defined || s.weak) continue;
      auto it = defs.find(s.name);
      bool ok = false;
      if (it != defs.end()) {
        ok = s.version.empty() ? it->second.default_version
                               : it->second.versions.count(s.version) > 0 || it->second.unversioned_object;
      }
      if (ok) continue;
      core::UndefinedSymbol u;
      u.symbol = std::string(s.name);
      u.demangled = Demangle(s.name);
      if (!s.version.empty()) u.version = std::string(s.version);
      if (!s.version_file.empty()) u.version_from = std::string(s.version_file);
      u.needed_by = *closure.objects[i].entry.path;
      out.push_back(std::move(u));
    }
  }
  return out;
}

}  // namespace gputriage::libs
