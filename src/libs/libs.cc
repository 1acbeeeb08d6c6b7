#include "libs/libs.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include <unistd.h>

#include "core/text.h"
#include "core/trust.h"
#include "libs/components.h"
#include "libs/elf_dynamic.h"
#include "libs/process_libs.h"
#include "libs/resolve.h"
#include "libs/symbol_cache.h"
#include "libs/trace.h"

namespace gputriage::libs {
namespace {

void Finish(core::LibraryReport& report, const catalog::LibraryTables& catalog, bool loaded) {
  ClassifyLibraries(report.libraries, catalog);
  report.findings = LibraryFindings(report, catalog, loaded);
}

struct CheckedClosure {
  Closure closure;  ///< symbol tables released once checked
  std::vector<core::UndefinedSymbol> undefined;
};

// One root's closure and, when asked, its undefined symbols: from the cache when it knows this
// closure's files, else read and checked (and remembered).
CheckedClosure CheckClosure(const std::string& root, const ResolveOptions& resolve, const LibsOptions& options,
                            std::optional<SymbolCheckCache>& cache) {
  CheckedClosure out;
  out.closure = ResolveClosure({root}, resolve);
  if (!options.symbols) return out;
  std::optional<std::string> key = cache ? SymbolCheckCache::KeyOf(out.closure) : std::nullopt;
  if (key) {
    if (std::optional<SymbolCheckCache::Result> known = cache->Find(*key)) {
      out.undefined = std::move(known->undefined);
      for (core::LibraryError& e : known->errors) out.closure.errors.push_back(std::move(e));
      return out;
    }
  }
  size_t errors_before = out.closure.errors.size();
  ReadClosureSymbols(out.closure, resolve);
  out.undefined = UndefinedSymbols(out.closure);
  if (key) {
    SymbolCheckCache::Result result{out.undefined, {}};
    result.errors.assign(out.closure.errors.begin() + static_cast<ptrdiff_t>(errors_before), out.closure.errors.end());
    cache->Remember(*key, std::move(result));
  }
  for (ResolvedObject& o : out.closure.objects) o.symbols.reset();  // the memo keeps what others share
  return out;
}

}  // namespace

core::LibraryReport ResolveLibraries(const std::vector<std::string>& paths, const LibsOptions& options,
                                     const catalog::LibraryTables& catalog) {
  core::LibraryReport report;
  report.mode = "resolve";
  report.inputs = paths;
  std::optional<std::string> interpreter;
  for (const std::string& p : paths) {
    if (auto elf = ReadElfDynamic(p, false); elf.ok() && elf->interpreter) {
      interpreter = elf->interpreter;
      break;
    }
  }
  ResolveOptions resolve;
  resolve.config = DetectLoaderConfig(interpreter, options.ld_library_path);
  if (auto cache = ReadLdCache(resolve.config.cache); cache.ok()) {
    resolve.cache = std::move(*cache);
  } else {
    report.errors.push_back({resolve.config.cache, cache.error().message + " (the cache is not searched)"});
  }
  resolve.symbols = false;  // read below, unless the cache knows the answer
  resolve.memo = std::make_shared<ElfMemo>();
  std::optional<SymbolCheckCache> cache;
  if (options.symbols && options.symbol_cache) cache.emplace(*options.symbol_cache);
  unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  unsigned workers =
      std::min<unsigned>(options.threads > 0 ? static_cast<unsigned>(options.threads) : std::min(8u, hardware),
                         static_cast<unsigned>(std::max<size_t>(1, paths.size())));
  // One root alone reads its symbol tables side by side; several roots are the parallelism.
  resolve.threads = workers > 1 ? 1 : 0;
  std::vector<CheckedClosure> checked(paths.size());
  std::atomic<size_t> next{0};
  auto work = [&]() {
    for (size_t i = next++; i < paths.size(); i = next++) checked[i] = CheckClosure(paths[i], resolve, options, cache);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (cache) (void)cache->Save();  // a cache that cannot be written only costs time next run
  std::map<std::string, size_t> by_path;
  std::set<std::pair<std::string, std::string>> seen_findings;
  for (CheckedClosure& c : checked) {
    Closure& closure = c.closure;
    // Findings per program: two inputs may each load their own copy of a library.
    core::LibraryReport one;
    for (const ResolvedObject& o : closure.objects) one.libraries.push_back(o.entry);
    one.missing = closure.missing;
    one.undefined_symbols = std::move(c.undefined);
    ClassifyLibraries(one.libraries, catalog);
    for (core::Finding& f : LibraryFindings(one, catalog, false)) {
      if (seen_findings.insert({f.id, f.title}).second) report.findings.push_back(std::move(f));
    }
    // The merged list takes the entries classified above (once per library, not again).
    for (core::LibraryEntry& entry : one.libraries) {
      auto [it, inserted] = by_path.emplace(*entry.path, report.libraries.size());
      if (inserted) {
        report.libraries.push_back(std::move(entry));
        continue;
      }
      auto& needed_by = report.libraries[it->second].needed_by;
      for (const std::string& n : entry.needed_by) {
        if (std::find(needed_by.begin(), needed_by.end(), n) == needed_by.end()) needed_by.push_back(n);
      }
    }
    for (core::UndefinedSymbol& u : one.undefined_symbols) report.undefined_symbols.push_back(std::move(u));
    for (auto& m : closure.missing) report.missing.push_back(std::move(m));
    for (auto& s : closure.shadowed) report.shadowed.push_back(std::move(s));
    for (auto& e : closure.errors) report.errors.push_back(std::move(e));
  }
  return report;
}

core::LibraryReport LoadedLibraries(const std::vector<std::string>& paths, const std::string& mode,
                                    const catalog::LibraryTables& catalog) {
  core::LibraryReport report;
  report.mode = mode;
  std::vector<ElfDynamic> elves;
  for (const std::string& path : paths) {
    core::LibraryEntry e;
    e.path = path;
    e.realpath = RealPath(path);
    e.found_via = "loaded";
    e.soname = std::filesystem::path(path).filename().string();
    auto elf = ReadElfDynamic(path, false);
    if (elf.ok()) {
      if (elf->soname) e.soname = *elf->soname;
      elves.push_back(std::move(*elf));
    } else if (elf.error().message.find("not an ELF file") != std::string::npos) {
      continue;  // a mapped data file (a locale archive, a font, a cache), not a shared object
    } else {
      report.errors.push_back({path, elf.error().message});
      elves.emplace_back();
    }
    report.libraries.push_back(std::move(e));
  }
  // needed_by from each object's DT_NEEDED; an object nobody needs (but the first, the
  // program) was opened by dlopen.
  for (size_t i = 0; i < report.libraries.size(); ++i) {
    for (const std::string& name : elves[i].needed) {
      for (size_t j = 0; j < report.libraries.size(); ++j) {
        const core::LibraryEntry& l = report.libraries[j];
        if (j == i || (l.soname != name && std::filesystem::path(*l.path).filename() != name)) continue;
        auto& by = report.libraries[j].needed_by;
        if (std::find(by.begin(), by.end(), *report.libraries[i].path) == by.end())
          by.push_back(*report.libraries[i].path);
      }
    }
  }
  for (size_t i = 1; i < report.libraries.size(); ++i) {
    if (report.libraries[i].needed_by.empty()) report.libraries[i].needed_by.push_back("dlopen");
  }
  Finish(report, catalog, true);
  return report;
}

core::Result<core::LibraryReport> ProcessLibraries(int pid, const catalog::LibraryTables& catalog) {
  GT_ASSIGN_OR_RETURN(ProcessObjects objects, ReadProcessObjects(pid));
  std::vector<std::string> paths;
  for (const LoadedObject& o : objects.objects) {
    if (!o.path.empty() && o.path.front() == '/') paths.push_back(o.path);
  }
  core::LibraryReport report = LoadedLibraries(paths, "pid", catalog);
  report.pid = pid;
  if (!objects.load_order)
    report.errors.push_back(
        {"/proc/" + std::to_string(pid), "listed in address order, not load order: " + objects.note});
  return report;
}

core::Result<core::LibraryReport> TraceLibraries(const std::vector<std::string>& command,
                                                 const std::string& audit_library,
                                                 const catalog::LibraryTables& catalog, int* exit_status) {
  GT_ASSIGN_OR_RETURN(TraceResult trace, TraceCommand(command, audit_library));
  if (exit_status) *exit_status = trace.exit_status;
  std::vector<std::string> paths;
  int64_t first_pid = trace.events.empty() ? 0 : trace.events.front().pid;
  for (const core::LoaderEvent& e : trace.events) {
    if (e.kind == "open" && e.pid == first_pid && !e.name.empty() && e.name.front() == '/') paths.push_back(e.name);
  }
  // The program itself is opened with an empty name: it comes first, as execvp found it.
  std::string program = command.front();
  if (auto found = core::FindProgram(program); found.ok()) program = *found;
  paths.insert(paths.begin(), program);
  core::LibraryReport report = LoadedLibraries(paths, "trace", catalog);
  report.inputs = command;
  report.trace = std::move(trace.events);
  if (trace.malformed)
    report.errors.push_back({"audit trace", std::to_string(trace.malformed) + " malformed lines skipped"});
  return report;
}

}  // namespace gputriage::libs
