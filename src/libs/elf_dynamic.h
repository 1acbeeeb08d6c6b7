// The dynamic-linking view of one ELF file, read with libelf: what the loader reads before it
// maps a library (class, machine, DT_SONAME, DT_NEEDED, DT_RPATH/DT_RUNPATH, DT_FLAGS_1) and,
// on request, its dynamic symbols with their versions (SHT_GNU_versym, verdef, verneed). Reads
// only the sections it needs (the file is mapped, not read), so a 1 GiB libtorch costs what its
// dynamic section and symbol table cost.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gputriage::libs {

/// One dynamic symbol. Names point into the file's string table (valid while the ElfDynamic
/// that holds them lives).
struct DynamicSymbol {
  std::string_view name;
  std::string_view version;       ///< "" when unversioned (or the base version)
  std::string_view version_file;  ///< for an undefined versioned reference: the library it names
  bool defined = false;
  bool weak = false;
  bool hidden_version = false;  ///< a non-default version (foo@V, not foo@@V)
  uint8_t type = 0;             ///< STT_*
  uint64_t size = 0;
};

struct ElfDynamic {
  std::string path;
  int elf_class = 0;  ///< 32 or 64
  bool big_endian = false;
  uint16_t machine = 0;
  uint16_t type = 0;  ///< ET_EXEC, ET_DYN
  std::optional<std::string> interpreter;
  std::optional<std::string> soname;
  std::vector<std::string> needed;
  std::optional<std::string> rpath;              ///< DT_RPATH
  std::optional<std::string> runpath;            ///< DT_RUNPATH
  bool nodeflib = false;                         ///< DF_1_NODEFLIB
  bool has_dynamic = false;                      ///< false for a static executable
  std::vector<DynamicSymbol> symbols;            ///< filled when asked for
  std::vector<std::string> version_definitions;  ///< verdef names, the base (file) name excluded
  std::vector<std::string> problems;             ///< damage found while reading (a bad string offset, ...)
  std::shared_ptr<void> keep;                    ///< with symbols: the mapped file the names point into

  /// "64-bit x86-64 little-endian" for messages.
  std::string Describe() const;
  /// Whether a process of `other`'s class and machine can load this file.
  bool Compatible(const ElfDynamic& other) const {
    return elf_class == other.elf_class && machine == other.machine && big_endian == other.big_endian;
  }
};

/// Reads `path`. Fails naming the file when it is missing, unreadable, not ELF, or its dynamic
/// section cannot be read at all; smaller damage goes to `problems`.
core::Result<ElfDynamic> ReadElfDynamic(const std::string& path, bool with_symbols);

/// The same from bytes held in memory (tests, fuzzing); `name` is used in messages.
core::Result<ElfDynamic> ParseElfDynamic(std::span<const uint8_t> bytes, std::string_view name, bool with_symbols);

/// "FUNC", "OBJECT", "TLS", "IFUNC", "NOTYPE", ... for an STT_* value.
std::string_view SymbolTypeName(uint8_t type);

/// The demangled form of a C++ symbol, nullopt for one that is not mangled.
std::optional<std::string> Demangle(std::string_view symbol);

}  // namespace gputriage::libs
