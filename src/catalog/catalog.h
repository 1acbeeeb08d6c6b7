// The knowledge layer's reviewed tables, loaded once and handed to whoever judges: doctor's
// checks (Xid meanings, environment variables, kernel-log rules), the analyzer (error codes, the
// general classifier, Xid classes, AMD register layouts), the signature scanner. Loaded from the
// knowledge base embedded in the binary, or from a kb/ directory being edited (--kb-dir), so one
// run never mixes the two.
#pragma once

#include <string>
#include <vector>

#include "catalog/amd_layouts.h"
#include "catalog/arch_limits.h"
#include "catalog/compat.h"
#include "catalog/env_vars.h"
#include "catalog/error_codes.h"
#include "catalog/general_signals.h"
#include "catalog/gpu_libraries.h"
#include "catalog/kernel_log_rules.h"
#include "catalog/source.h"
#include "catalog/xid.h"
#include "core/result.h"

namespace gputriage::catalog {

/// Where each table lives in the knowledge base.
inline constexpr std::string_view kXidPath = "kb/tables/nvidia-xid.yaml";
inline constexpr std::string_view kEnvVarsPath = "kb/env-vars.yaml";
inline constexpr std::string_view kCudaErrorsPath = "kb/tables/cuda-errors.yaml";
inline constexpr std::string_view kHipErrorsPath = "kb/tables/hip-errors.yaml";
inline constexpr std::string_view kGeneralSignalsPath = "kb/tables/general-signals.yaml";
inline constexpr std::string_view kKernelLogRulesPath = "kb/tables/kernel-log-rules.yaml";
inline constexpr std::string_view kVmFaultPath = "kb/tables/amdgpu-vm-fault.yaml";
inline constexpr std::string_view kAmdRasPath = "kb/tables/amd-ras.yaml";
inline constexpr std::string_view kArchLimitsPath = "kb/tables/gpu-arch-limits.yaml";
inline constexpr std::string_view kGpuLibrariesPath = "kb/tables/gpu-libraries.yaml";
/// The vocabulary tables: every kb/tables/vocab-*.yaml.
inline constexpr std::string_view kVocabularyPrefix = "kb/tables/vocab-";

/// What layer 3 needs (`libs`, doctor's library checks): the GPU library table and the version
/// matrix. Loaded on their own by `libs`, which has no use for the rest (parsing every table is
/// most of a small `libs` run's time).
struct LibraryTables {
  std::vector<GpuLibraryRule> gpu_libraries;
  std::vector<CompatEntry> compat;  ///< kb/compat/*.yaml
};

struct Catalog {
  XidTable xid;
  std::vector<EnvVarRule> env_vars;
  ErrorCodes errors;
  /// general-signals.yaml's rows, then every vocabulary table's (GeneralSignal::file tells them apart).
  std::vector<GeneralSignal> general_signals;
  size_t vocabulary_rows = 0;
  std::vector<KernelLogRule> kernel_log_rules;
  VmFaultLayout vm_fault;
  AcaLayout aca;
  std::vector<ArchLimits> arch_limits;
  std::vector<ProductPeaks> product_peaks;  ///< `products:` of gpu-arch-limits.yaml
  LibraryTables libraries;                  ///< gpu-libraries.yaml and kb/compat
};

/// Every table from `files` (the knowledge base's files). Fails naming the first table that is
/// missing or broken.
core::Result<Catalog> LoadCatalog(const std::vector<SourceFile>& files);

core::Result<LibraryTables> LoadLibraryTables(const std::vector<SourceFile>& files);

/// The embedded LibraryTables alone, loaded on first use (thread-safe).
core::Result<const LibraryTables*> BuiltinLibraryTables();

/// The tables embedded in this build, loaded on first use (thread-safe). Fails only in a broken
/// build (a test loads it).
core::Result<const Catalog*> BuiltinCatalog();

}  // namespace gputriage::catalog
