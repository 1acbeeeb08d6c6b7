#include "catalog/catalog.h"

#include <future>
#include <memory>
#include <utility>

#include <fmt/format.h>

namespace gputriage::catalog {
namespace {

core::Result<const SourceFile*> Require(const std::vector<SourceFile>& files, std::string_view path) {
  const SourceFile* file = FindSource(files, path);
  if (file == nullptr) return core::MakeError("{} is missing from the knowledge base", path);
  return file;
}

}  // namespace

core::Result<Catalog> LoadCatalog(const std::vector<SourceFile>& files) {
  // Every table is parsed on a thread of its own (yaml-cpp's scanner is most of the start-up time
  // of doctor and analyze: ~150 ms for the ~600 KB of tables on one core of the H100 machine);
  // results are then taken in the order below, so the error reported is always the same one.
  auto parse = [&files](std::string_view path, auto fn) {
    return std::async(std::launch::async, [&files, path, fn]() -> decltype(fn(std::declval<const SourceFile&>())) {
      GT_ASSIGN_OR_RETURN(const SourceFile* file, Require(files, path));
      return fn(*file);
    });
  };
  auto xid = parse(kXidPath, [](const SourceFile& f) { return ParseXidTable(f.text, f.path); });
  auto env = parse(kEnvVarsPath, [](const SourceFile& f) { return ParseEnvVarRules(f.text, f.path); });
  auto errors = std::async(std::launch::async, [&files]() -> core::Result<ErrorCodes> {
    GT_ASSIGN_OR_RETURN(const SourceFile* cuda, Require(files, kCudaErrorsPath));
    GT_ASSIGN_OR_RETURN(const SourceFile* hip, Require(files, kHipErrorsPath));
    return ParseErrorTables(*cuda, *hip);
  });
  // The stack's own vocabulary (kb/tables/vocab-*.yaml) joins the general classifier's signals.
  std::vector<std::future<core::Result<std::vector<GeneralSignal>>>> vocabularies;
  for (const SourceFile& file : files) {
    if (file.path.rfind(kVocabularyPrefix, 0) != 0 || file.path.size() < 5 ||
        file.path.compare(file.path.size() - 5, 5, ".yaml") != 0) {
      continue;
    }
    vocabularies.push_back(std::async(std::launch::async, [&file]() { return ParseVocabulary(file.text, file.path); }));
  }
  auto rules = parse(kKernelLogRulesPath, [](const SourceFile& f) { return ParseKernelLogRules(f.text, f.path); });
  auto vm = parse(kVmFaultPath, [](const SourceFile& f) { return ParseVmFaultLayout(f.text, f.path); });
  auto aca = parse(kAmdRasPath, [](const SourceFile& f) { return ParseAcaLayout(f.text, f.path); });
  auto limits = parse(kArchLimitsPath, [](const SourceFile& f) { return ParseArchLimitsTable(f.text, f.path); });
  auto peaks = parse(kArchLimitsPath, [](const SourceFile& f) { return ParseProductPeaks(f.text, f.path); });
  auto libraries = std::async(std::launch::async, [&files]() { return LoadLibraryTables(files); });

  Catalog c;
  GT_ASSIGN_OR_RETURN(c.xid, xid.get());
  GT_ASSIGN_OR_RETURN(c.env_vars, env.get());
  GT_ASSIGN_OR_RETURN(c.errors, errors.get());
  GT_ASSIGN_OR_RETURN(const SourceFile* general, Require(files, kGeneralSignalsPath));
  GT_ASSIGN_OR_RETURN(c.general_signals, ParseGeneralSignals(general->text, general->path, c.xid));
  for (auto& vocabulary : vocabularies) {
    GT_ASSIGN_OR_RETURN(std::vector<GeneralSignal> rows, vocabulary.get());
    c.vocabulary_rows += rows.size();
    for (GeneralSignal& row : rows) c.general_signals.push_back(std::move(row));
  }
  GT_ASSIGN_OR_RETURN(c.kernel_log_rules, rules.get());
  GT_ASSIGN_OR_RETURN(c.vm_fault, vm.get());
  GT_ASSIGN_OR_RETURN(c.aca, aca.get());
  GT_ASSIGN_OR_RETURN(c.arch_limits, limits.get());
  GT_ASSIGN_OR_RETURN(c.product_peaks, peaks.get());
  GT_ASSIGN_OR_RETURN(c.libraries, libraries.get());
  return c;
}

core::Result<LibraryTables> LoadLibraryTables(const std::vector<SourceFile>& files) {
  LibraryTables t;
  GT_ASSIGN_OR_RETURN(const SourceFile* libraries, Require(files, kGpuLibrariesPath));
  GT_ASSIGN_OR_RETURN(t.gpu_libraries, ParseGpuLibraries(libraries->text, libraries->path));
  GT_ASSIGN_OR_RETURN(t.compat, LoadCompatEntries(files));
  return t;
}

core::Result<const LibraryTables*> BuiltinLibraryTables() {
  static const auto* loaded = new core::Result<LibraryTables>(LoadLibraryTables(EmbeddedSources()));
  if (!loaded->ok()) return loaded->error();
  return &loaded->value();
}

core::Result<const Catalog*> BuiltinCatalog() {
  static const auto* loaded = new core::Result<Catalog>(LoadCatalog(EmbeddedSources()));
  if (!loaded->ok()) return loaded->error();
  return &loaded->value();
}

}  // namespace gputriage::catalog
