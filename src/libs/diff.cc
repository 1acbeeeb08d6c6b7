#include "libs/diff.h"

#include <elf.h>

#include <map>

#include <fmt/format.h>

namespace gputriage::libs {
namespace {

// name -> version -> symbol; a hidden (non-default) version counts as exported too: old
// binaries bind to it.
using Exports = std::map<std::string_view, std::map<std::string_view, const DynamicSymbol*>>;

Exports ExportsOf(const ElfDynamic& lib) {
  Exports out;
  for (const DynamicSymbol& s : lib.symbols) {
    if (s.defined) out[s.name][s.version] = &s;
  }
  return out;
}

core::ExportedSymbol Exported(const DynamicSymbol& s) {
  core::ExportedSymbol e;
  e.symbol = std::string(s.name);
  e.demangled = Demangle(s.name);
  if (!s.version.empty()) e.version = std::string(s.version);
  e.type = std::string(SymbolTypeName(s.type));
  e.size = s.size;
  return e;
}

bool SizeMatters(uint8_t type) { return type == STT_OBJECT || type == STT_TLS || type == STT_COMMON; }

}  // namespace

core::SymbolDiff DiffSymbols(const ElfDynamic& old_lib, const ElfDynamic& new_lib) {
  core::SymbolDiff d;
  d.old_path = old_lib.path;
  d.new_path = new_lib.path;
  d.old_soname = old_lib.soname;
  d.new_soname = new_lib.soname;
  Exports before = ExportsOf(old_lib), after = ExportsOf(new_lib);
  for (const auto& [name, versions] : before) {
    auto now = after.find(name);
    for (const auto& [version, s] : versions) {
      if (now == after.end()) {
        d.removed.push_back(Exported(*s));
        continue;
      }
      auto same = now->second.find(version);
      const DynamicSymbol* n = same != now->second.end() ? same->second : nullptr;
      if (!n && now->second.size() == 1) n = now->second.begin()->second;  // the version changed
      if (!n) {
        d.removed.push_back(Exported(*s));
        continue;
      }
      bool changed = n->version != s->version || n->type != s->type || (SizeMatters(s->type) && n->size != s->size);
      if (!changed) continue;
      core::ExportedSymbol e = Exported(*n);
      if (n->version != s->version) e.old_version = std::string(s->version.empty() ? "(none)" : s->version);
      if (n->type != s->type) e.old_type = std::string(SymbolTypeName(s->type));
      if (n->size != s->size) e.old_size = s->size;
      d.changed.push_back(std::move(e));
    }
  }
  for (const auto& [name, versions] : after) {
    auto was = before.find(name);
    for (const auto& [version, s] : versions) {
      if (was == before.end()) {
        d.added.push_back(Exported(*s));
      } else if (!was->second.count(version) && was->second.size() != 1) {
        d.added.push_back(Exported(*s));
      }
    }
  }
  if (!d.removed.empty())
    d.abi_break_reasons.push_back(
        fmt::format("{} symbol{} removed", d.removed.size(), d.removed.size() == 1 ? "" : "s"));
  size_t version = 0, type = 0, size = 0;
  for (const core::ExportedSymbol& e : d.changed) {
    version += e.old_version.has_value();
    type += e.old_type.has_value();
    size += e.old_size.has_value() && (e.type == "OBJECT" || e.type == "TLS");
  }
  if (version)
    d.abi_break_reasons.push_back(fmt::format("{} symbol{} changed version (the old version is no longer defined)",
                                              version, version == 1 ? "" : "s"));
  if (type) d.abi_break_reasons.push_back(fmt::format("{} symbol{} changed type", type, type == 1 ? "" : "s"));
  if (size) d.abi_break_reasons.push_back(fmt::format("{} data object{} changed size", size, size == 1 ? "" : "s"));
  if (old_lib.soname && new_lib.soname && *old_lib.soname != *new_lib.soname) {
    d.abi_break_reasons.push_back(
        fmt::format("the soname changed ({} -> {}): programs linked against the old one will not load the new one",
                    *old_lib.soname, *new_lib.soname));
  }
  d.abi_break = !d.abi_break_reasons.empty();
  return d;
}

core::Result<core::SymbolDiff> DiffLibraries(const std::string& old_path, const std::string& new_path) {
  GT_ASSIGN_OR_RETURN(ElfDynamic old_lib, ReadElfDynamic(old_path, true));
  GT_ASSIGN_OR_RETURN(ElfDynamic new_lib, ReadElfDynamic(new_path, true));
  return DiffSymbols(old_lib, new_lib);
}

}  // namespace gputriage::libs
