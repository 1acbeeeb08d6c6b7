// `libs` and `libs diff` for the terminal.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/render.h"

namespace gputriage::cli {
namespace {

constexpr size_t kMaxListed = 40;

std::string SymbolText(const std::string& symbol, const std::optional<std::string>& demangled,
                       const std::optional<std::string>& version) {
  std::string out = demangled.value_or(symbol);
  if (version) out += "@" + *version;
  return out;
}

}  // namespace

std::string RenderLibraryReport(const core::LibraryReport& report) {
  std::string out;
  if (report.pid) out += fmt::format("process {}: {} objects loaded\n", *report.pid, report.libraries.size());
  if (report.mode == "trace")
    out += fmt::format("{} objects opened, {} loader events\n", report.libraries.size(), report.trace.size());
  if (report.mode == "resolve")
    out += fmt::format("{} objects in the closure of {}\n", report.libraries.size(), fmt::join(report.inputs, ", "));
  for (const core::LibraryEntry& l : report.libraries) {
    std::string component = l.component ? fmt::format("  [{}{}{}]", *l.component, l.version ? " " + *l.version : "",
                                                      l.release ? ", " + *l.release : "")
                                        : "";
    std::string via = l.found_via && *l.found_via != "loaded" ? fmt::format("  ({})", *l.found_via) : "";
    std::string path = l.path.value_or("not found");
    if (l.realpath && l.path && *l.realpath != *l.path) path += " -> " + *l.realpath;
    out += fmt::format("  {} => {}{}{}\n", l.soname, path, via, component);
  }
  for (const core::MissingLibrary& m : report.missing) {
    out += fmt::format("  {} => not found (needed by {}; {} places tried)\n", m.soname, fmt::join(m.needed_by, ", "),
                       m.searched.size());
  }
  if (!report.shadowed.empty()) out += "shadowed copies (the loader takes the first):\n";
  for (const core::ShadowedLibrary& s : report.shadowed) {
    out += fmt::format("  {}: {} shadows {}\n", s.soname, s.chosen, fmt::join(s.shadowed, ", "));
  }
  if (!report.undefined_symbols.empty())
    out += fmt::format("undefined symbols ({}):\n", report.undefined_symbols.size());
  for (size_t i = 0; i < report.undefined_symbols.size() && i < kMaxListed; ++i) {
    const core::UndefinedSymbol& u = report.undefined_symbols[i];
    out += fmt::format("  {}  ({})\n", SymbolText(u.symbol, u.demangled, u.version), u.needed_by);
  }
  if (report.undefined_symbols.size() > kMaxListed)
    out += fmt::format("  ... {} more (--json lists all)\n", report.undefined_symbols.size() - kMaxListed);
  for (const core::LibraryError& e : report.errors) out += fmt::format("problem: {}: {}\n", e.path, e.message);
  if (!report.findings.empty()) out += "\n" + RenderFindings(report.findings);
  return out;
}

std::string RenderSymbolDiff(const core::SymbolDiff& diff) {
  std::string out = fmt::format("{} -> {}: {} removed, {} changed, {} added\n", diff.old_path, diff.new_path,
                                diff.removed.size(), diff.changed.size(), diff.added.size());
  auto list = [&](const char* sign, const std::vector<core::ExportedSymbol>& symbols) {
    for (size_t i = 0; i < symbols.size() && i < kMaxListed; ++i) {
      const core::ExportedSymbol& e = symbols[i];
      std::string was;
      if (e.old_version) was += " version " + *e.old_version + " -> " + e.version.value_or("(none)");
      if (e.old_type) was += " type " + *e.old_type + " -> " + e.type;
      if (e.old_size) was += fmt::format(" size {} -> {}", *e.old_size, e.size);
      out += fmt::format("  {} {} {}{}\n", sign, e.type, SymbolText(e.symbol, e.demangled, e.version), was);
    }
    if (symbols.size() > kMaxListed)
      out += fmt::format("  ... {} more (--json lists all)\n", symbols.size() - kMaxListed);
  };
  list("-", diff.removed);
  list("~", diff.changed);
  list("+", diff.added);
  out += diff.abi_break ? fmt::format("ABI break: {}\n", fmt::join(diff.abi_break_reasons, "; "))
                        : "no ABI break: nothing removed or changed\n";
  return out;
}

}  // namespace gputriage::cli
