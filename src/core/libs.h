// Layer 3's model: the shared libraries a program loads (or would load), where each comes from,
// which GPU-stack component and release it belongs to, the dynamic symbols nothing defines, the
// copies another one shadows, and the exported-symbol differences between two versions of one
// library. Written by `libs` (resolver, /proc/PID/maps, LD_AUDIT trace), kept in crash bundles
// (libraries.json) and read by doctor and the analyzer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"

namespace gputriage::core {

inline constexpr int kLibrariesSchemaVersion = 1;

/// One shared object of the closure (or of a process).
struct LibraryEntry {
  std::string soname;                    ///< DT_SONAME, else the name it was asked for, else the file name
  std::optional<std::string> path;       ///< where it was found (absent: not found)
  std::optional<std::string> realpath;   ///< the file the path's symlinks lead to
  std::vector<std::string> needed_by;    ///< the objects whose DT_NEEDED named it (paths), "dlopen" for late loads
  std::optional<std::string> component;  ///< "cublas", "hip-runtime" (kb/tables/gpu-libraries.yaml)
  std::optional<std::string> version;    ///< from the file's name ("12.8.4.1"), when it has one
  std::optional<std::string> release;    ///< the component's release family: "cuda 12", "rocm 6.2.0"
  std::optional<std::string>
      found_via;             ///< rpath | runpath | ld_library_path | ld.so.cache | default | hwcaps | direct | loaded
  std::optional<int> depth;  ///< 0 for the inputs, 1 for their needs, ...
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("soname", s.soname);
    v("path", s.path);
    v("realpath", s.realpath);
    v("needed_by", s.needed_by);
    v("component", s.component);
    v("version", s.version);
    v("release", s.release);
    v("found_via", s.found_via);
    v("depth", s.depth);
  }
};

/// A dynamic symbol some object needs that nothing loaded defines (what `ldd -r` reports).
struct UndefinedSymbol {
  std::string symbol;
  std::optional<std::string> demangled;
  std::optional<std::string> version;       ///< "GLIBCXX_3.4.32" for a versioned reference
  std::string needed_by;                    ///< the path of the object that references it
  std::optional<std::string> version_from;  ///< the library the version is expected in (vna_file)
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("symbol", s.symbol);
    v("demangled", s.demangled);
    v("version", s.version);
    v("needed_by", s.needed_by);
    v("version_from", s.version_from);
  }
};

/// A library name that more than one file answers: the one the loader takes and the others.
struct ShadowedLibrary {
  std::string soname;
  std::string chosen;
  std::vector<std::string> shadowed;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("soname", s.soname);
    v("chosen", s.chosen);
    v("shadowed", s.shadowed);
  }
};

/// A name that could not be resolved, with every place that was tried.
struct MissingLibrary {
  std::string soname;
  std::vector<std::string> needed_by;
  std::vector<std::string> searched;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("soname", s.soname);
    v("needed_by", s.needed_by);
    v("searched", s.searched);
  }
};

/// An input or library that could not be read as the loader would read it, and why.
struct LibraryError {
  std::string path;
  std::string message;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("path", s.path);
    v("message", s.message);
  }
};

/// One step of an LD_AUDIT trace: a search (`la_objsearch`) or an open (`la_objopen`).
struct LoaderEvent {
  int64_t pid = 0;                       ///< the process (a traced command's children are traced too)
  std::string kind;                      ///< "search" | "open"
  std::string name;                      ///< the name or path searched / opened
  std::optional<std::string> via;        ///< for a search: orig | ld_library_path | runpath | config | default | secure
  std::optional<std::string> requester;  ///< the object whose need it is (for a search)
  std::optional<int64_t> namespace_id;   ///< link-map namespace (for an open)
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("pid", s.pid);
    v("kind", s.kind);
    v("name", s.name);
    v("via", s.via);
    v("requester", s.requester);
    v("namespace", s.namespace_id);
  }
};

/// `libs`: the closure of the inputs (or a process's libraries), its problems and findings.
struct LibraryReport {
  int schema = kLibrariesSchemaVersion;
  std::string mode;  ///< "resolve" | "pid" | "trace"
  std::vector<std::string> inputs;
  std::optional<int64_t> pid;
  std::vector<LibraryEntry> libraries;  ///< load order (breadth-first, as the loader does)
  std::vector<UndefinedSymbol> undefined_symbols;
  std::vector<ShadowedLibrary> shadowed;
  std::vector<MissingLibrary> missing;
  std::vector<LibraryError> errors;
  std::vector<LoaderEvent> trace;
  std::vector<Finding> findings;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("schema", s.schema);
    v("mode", s.mode);
    v("inputs", s.inputs);
    v("pid", s.pid);
    v("libraries", s.libraries);
    v("undefined_symbols", s.undefined_symbols);
    v("shadowed", s.shadowed);
    v("missing", s.missing);
    v("errors", s.errors);
    v("trace", s.trace);
    v("findings", s.findings);
  }
};

/// One exported symbol of a library, as `libs diff` compares them.
struct ExportedSymbol {
  std::string symbol;
  std::optional<std::string> demangled;
  std::optional<std::string> version;  ///< "GLIBC_2.34"; absent for an unversioned symbol
  std::string type;                    ///< FUNC | OBJECT | TLS | IFUNC | NOTYPE | ...
  uint64_t size = 0;
  std::optional<std::string> old_version;  ///< in `changed`: the old side's version, type, size
  std::optional<std::string> old_type;
  std::optional<uint64_t> old_size;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("symbol", s.symbol);
    v("demangled", s.demangled);
    v("version", s.version);
    v("type", s.type);
    v("size", s.size);
    v("old_version", s.old_version);
    v("old_type", s.old_type);
    v("old_size", s.old_size);
  }
};

/// `libs diff OLD NEW`.
struct SymbolDiff {
  std::string old_path;
  std::string new_path;
  std::optional<std::string> old_soname;
  std::optional<std::string> new_soname;
  std::vector<ExportedSymbol> added;
  std::vector<ExportedSymbol> removed;
  std::vector<ExportedSymbol> changed;
  bool abi_break = false;  ///< a symbol removed, or changed in type, version or (objects) size
  std::vector<std::string> abi_break_reasons;
  template <class V, class S>
  static void Fields(V& v, S& s) {
    v("old", s.old_path);
    v("new", s.new_path);
    v("old_soname", s.old_soname);
    v("new_soname", s.new_soname);
    v("added", s.added);
    v("removed", s.removed);
    v("changed", s.changed);
    v("abi_break", s.abi_break);
    v("abi_break_reasons", s.abi_break_reasons);
  }
};

Json ToJson(const LibraryReport& report);
Json ToJson(const SymbolDiff& diff);
LibraryReport LibraryReportFromJson(const Json& json);

}  // namespace gputriage::core
