#include "catalog/catalog.h"

#include <memory>

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
  Catalog c;
  GT_ASSIGN_OR_RETURN(const SourceFile* xid, Require(files, kXidPath));
  GT_ASSIGN_OR_RETURN(c.xid, ParseXidTable(xid->text, xid->path));
  GT_ASSIGN_OR_RETURN(const SourceFile* env, Require(files, kEnvVarsPath));
  GT_ASSIGN_OR_RETURN(c.env_vars, ParseEnvVarRules(env->text, env->path));
  GT_ASSIGN_OR_RETURN(const SourceFile* cuda, Require(files, kCudaErrorsPath));
  GT_ASSIGN_OR_RETURN(const SourceFile* hip, Require(files, kHipErrorsPath));
  GT_ASSIGN_OR_RETURN(c.errors, ParseErrorTables(*cuda, *hip));
  GT_ASSIGN_OR_RETURN(const SourceFile* general, Require(files, kGeneralSignalsPath));
  GT_ASSIGN_OR_RETURN(c.general_signals, ParseGeneralSignals(general->text, general->path, c.xid));
  // The stack's own vocabulary (kb/tables/vocab-*.yaml) joins the general classifier's signals.
  for (const SourceFile& file : files) {
    if (file.path.rfind(kVocabularyPrefix, 0) != 0 || file.path.size() < 5 ||
        file.path.compare(file.path.size() - 5, 5, ".yaml") != 0) {
      continue;
    }
    GT_ASSIGN_OR_RETURN(std::vector<GeneralSignal> rows, ParseVocabulary(file.text, file.path));
    c.vocabulary_rows += rows.size();
    for (GeneralSignal& row : rows) c.general_signals.push_back(std::move(row));
  }
  GT_ASSIGN_OR_RETURN(const SourceFile* rules, Require(files, kKernelLogRulesPath));
  GT_ASSIGN_OR_RETURN(c.kernel_log_rules, ParseKernelLogRules(rules->text, rules->path));
  GT_ASSIGN_OR_RETURN(const SourceFile* vm, Require(files, kVmFaultPath));
  GT_ASSIGN_OR_RETURN(c.vm_fault, ParseVmFaultLayout(vm->text, vm->path));
  GT_ASSIGN_OR_RETURN(const SourceFile* ras, Require(files, kAmdRasPath));
  GT_ASSIGN_OR_RETURN(c.aca, ParseAcaLayout(ras->text, ras->path));
  GT_ASSIGN_OR_RETURN(const SourceFile* limits, Require(files, kArchLimitsPath));
  GT_ASSIGN_OR_RETURN(c.arch_limits, ParseArchLimitsTable(limits->text, limits->path));
  GT_ASSIGN_OR_RETURN(c.product_peaks, ParseProductPeaks(limits->text, limits->path));
  GT_ASSIGN_OR_RETURN(c.libraries, LoadLibraryTables(files));
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
