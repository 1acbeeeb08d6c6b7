// `gputriage libs [PATH... | --pid PID | --trace -- CMD] [--json]` and `libs diff OLD NEW`:
// layer 3, the shared libraries a program loads and what is wrong with them.
#include <cstdlib>
#include <filesystem>

#include "catalog/catalog.h"
#include "cli/common.h"
#include "cli/render.h"
#include "libs/diff.h"
#include "libs/libs.h"

namespace gputriage::cli {
namespace {

struct LibsFlags {
  std::vector<std::string> paths;
  int pid = 0;
  bool trace = false;
  bool json = false;
  bool no_symbols = false;
  bool no_cache = false;
  std::string old_path, new_path;
};

// libgputriage-audit.so beside the binary: <prefix>/lib for <prefix>/bin/gputriage.
std::string AuditLibrary() {
  if (const char* env = std::getenv("GPUTRIAGE_AUDIT_LIBRARY"); env && *env) return env;
  std::filesystem::path exe = SelfExecutable().value_or("gputriage");
  return (exe.parent_path().parent_path() / "lib" / "libgputriage-audit.so").string();
}

int Report(const core::LibraryReport& report, bool json, int job_status) {
  if (json) {
    PrintJson(core::ToJson(report));
  } else {
    std::fputs(RenderLibraryReport(report).c_str(), stdout);
  }
  if (job_status >= 0) return job_status;
  bool input_failed = false;
  for (const core::LibraryError& e : report.errors) {
    for (const std::string& in : report.inputs) input_failed = input_failed || e.path == in;
  }
  if (input_failed) return kExitUsage;
  auto worst = core::MaxSeverity(report.findings);
  return worst && *worst >= core::Severity::kError ? kExitFindings : kExitOk;
}

int Libs(const LibsFlags& flags) {
  auto catalog = catalog::BuiltinLibraryTables();
  if (!catalog.ok()) return Fail(catalog.error().message, kExitInternal);
  int modes = (flags.pid > 0) + flags.trace + (!flags.trace && !flags.paths.empty());
  if (modes != 1) return Fail("libs: give PATH..., --pid PID, or --trace -- CMD (one of them)", kExitUsage);
  if (flags.pid > 0) {
    auto report = libs::ProcessLibraries(flags.pid, **catalog);
    if (!report.ok()) return Fail(report.error().message, kExitUsage);
    return Report(*report, flags.json, -1);
  }
  if (flags.trace) {
    int status = 0;
    auto report = libs::TraceLibraries(flags.paths, AuditLibrary(), **catalog, &status);
    if (!report.ok()) return Fail(report.error().message, kExitUsage);
    if (status != 0 && !flags.json)
      std::fprintf(stderr, "gputriage: the traced command exited with status %d\n", status);
    return Report(*report, flags.json, -1);
  }
  libs::LibsOptions options;
  options.symbols = !flags.no_symbols;
  if (const char* p = std::getenv("LD_LIBRARY_PATH")) options.ld_library_path = p;
  if (auto dir = CacheDirectory(); dir && !flags.no_cache) options.symbol_cache = *dir + "/closure-symbols.json";
  return Report(libs::ResolveLibraries(flags.paths, options, **catalog), flags.json, -1);
}

int Diff(const LibsFlags& flags) {
  auto diff = libs::DiffLibraries(flags.old_path, flags.new_path);
  if (!diff.ok()) return Fail(diff.error().message, kExitUsage);
  if (flags.json) {
    PrintJson(core::ToJson(*diff));
  } else {
    std::fputs(RenderSymbolDiff(*diff).c_str(), stdout);
  }
  return diff->abi_break ? kExitFindings : kExitOk;
}

}  // namespace

Command LibsCommand() {
  return Command{
      "libs", "Shared libraries: load order, where each comes from, undefined symbols, mixed versions, ABI diffs.",
      [](CLI::App& app) -> std::function<int()> {
        auto flags = std::make_shared<LibsFlags>();
        app.description(
            "Resolves the libraries a program or library would load, as glibc's loader does and without running "
            "it: DT_NEEDED breadth-first; DT_RPATH (of the requester and its loaders, when it has no DT_RUNPATH), "
            "LD_LIBRARY_PATH, DT_RUNPATH, /etc/ld.so.cache, the system directories, with $ORIGIN/$LIB/$PLATFORM "
            "and glibc-hwcaps subdirectories. Shows where each library comes from, which copies it shadows, the "
            "undefined symbols and missing symbol versions (`ldd -r`, demangled), each GPU library's component "
            "and release, and findings: a needed library not found, two copies of one library, CUDA or ROCm "
            "libraries of different releases, and the version matrix (kb/compat) on the versions found. "
            "--pid: what a running process has loaded, in load order (the loader's link map). --trace -- CMD: "
            "runs CMD under the loader's audit interface (LD_AUDIT) and records every search, path tried and "
            "object opened, dlopen included. Exit status 1 when a finding is an error, 2 when an input cannot "
            "be read. The undefined symbols of a closure are remembered by the identities of its files (device, "
            "inode, size, times) and read again when any file changes. `libs diff OLD NEW` compares exported "
            "symbols.");
        app.add_option("paths", flags->paths, "Programs or libraries; with --trace, the command and its arguments");
        app.add_option("--pid", flags->pid, "Report what this running process has loaded")->type_name("PID");
        app.add_flag("--trace", flags->trace, "Run the command (after --) and record the loader's searches and opens");
        app.add_flag("--no-symbols", flags->no_symbols, "Skip the undefined-symbol check (reads no symbol tables)");
        app.add_flag("--no-cache", flags->no_cache,
                     "Read every symbol table, even for a closure whose files are unchanged since the check "
                     "remembered in $GPUTRIAGE_HOME/cache/closure-symbols.json (neither read nor updated)");
        app.add_flag("--json", flags->json,
                     "Print {libraries: [{soname, path, realpath, needed_by, component, version, release, found_via, "
                     "depth}], undefined_symbols: [{symbol, demangled, version, needed_by}], shadowed: [{soname, "
                     "chosen, shadowed}], missing, errors, trace, findings}");
        CLI::App* diff = app.add_subcommand("diff", "Exported dynamic symbols of OLD and NEW: added, removed, changed");
        diff->description(
            "Compares the exported dynamic symbols (name, symbol version, type, size) of two versions of a library. "
            "Removed symbols, versions no longer defined, changed types and changed object sizes are ABI breaks "
            "(exit status 1).");
        diff->add_option("old", flags->old_path, "The old library")->required();
        diff->add_option("new", flags->new_path, "The new library")->required();
        diff->add_flag("--json", flags->json,
                       "Print {old, new, added, removed, changed: [{symbol, demangled, version, type, size, "
                       "old_version, old_type, old_size}], abi_break, abi_break_reasons}");
        return [flags, diff]() { return diff->parsed() ? Diff(*flags) : Libs(*flags); };
      }};
}

}  // namespace gputriage::cli
