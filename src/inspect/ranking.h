// Which of `inspect`'s findings a user can act on, and in what order to read them. A live
// PyTorch process maps a dozen vendor libraries (cuDNN, cuBLAS, rocSPARSE) whose kernels carry
// stack frames, spills or arch-specific variants: facts about the vendor's own code that nobody
// but the vendor can change. Those are ranked last and folded into one line per library in the
// text output; what the user can change (their own code and libraries, which build of a library
// they installed, their environment) comes first. Whether a file is a vendor library is read
// from the catalog's table of GPU libraries (kb/tables/gpu-libraries.yaml), not from names in
// code.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/gpu_libraries.h"
#include "core/model.h"

namespace gputriage::inspect {

/// What a finding is about, which decides who can act on it.
enum class Scope {
  kCode,            ///< a file that is no known GPU library: the user's own code or libraries
  kEnvironment,     ///< a setting of the user's (HSA_OVERRIDE_GFX_VERSION)
  kInstall,         ///< a GPU library's coverage or readability: which build of it is installed
  kVendorInternal,  ///< a GPU library's own kernels: only its vendor can change them
};

/// "code", "environment", "install", "vendor-internal".
std::string_view ScopeName(Scope scope);

/// A file that is one of the known GPU libraries.
struct VendorLibrary {
  std::string component;  ///< "cudnn", "rocsparse"
  std::string vendor;     ///< "nvidia", "amd", "any"
};

/// The known GPU library `path` is, by the table's soname patterns (catalog::ClassifyLibrary)
/// over the file's name and its DT_SONAME (`soname`, when it has one); nullopt when neither
/// matches: then the file counts as the user's own.
std::optional<VendorLibrary> ClassifyVendorLibrary(const std::vector<catalog::GpuLibraryRule>& rules,
                                                   std::string_view path, const std::optional<std::string>& soname);

/// One file's findings, as FileFindings::Finish made them, and what the file is.
struct FileFindingsOf {
  std::string path;
  std::optional<VendorLibrary> library;  ///< set when the file is a known GPU library
  std::vector<core::Finding> findings;
};

/// A finding with its place in the reading order.
struct RankedFinding {
  core::Finding finding;
  std::string path;                      ///< the file it is about
  std::optional<std::string> component;  ///< the GPU library's component, when the file is one
  Scope scope = Scope::kCode;
  bool actionable = true;  ///< the user can change what it is about (every scope but vendor-internal)
  /// The text output folds it into its library's one line (vendor-internal and below error
  /// level; --verbose shows it in full). An error is never folded.
  bool folded = false;
  size_t rank = 0;  ///< 1 for the finding to read first
  std::string why;  ///< one phrase: why it is worth reading
};

/// Every finding of `files`, in reading order, ranks 1..n: actionable before vendor-internal;
/// within each, the more severe first; among actionable findings of one severity, code before
/// environment before install; then file order, then the order FileFindings made them. An id
/// FileFindings does not make counts as being about the whole file.
std::vector<RankedFinding> RankFindings(const std::vector<FileFindingsOf>& files);

/// A library's folded findings, for its one line in the text output.
struct FoldedLibrary {
  std::string path;
  std::string component;
  size_t count = 0;                ///< folded findings
  std::vector<std::string> kinds;  ///< their kinds, in rank order, each once: "stack frames"
};

/// The libraries with folded findings, in the order of their first folded finding.
std::vector<FoldedLibrary> FoldedLibraries(const std::vector<RankedFinding>& ranked);

/// The finding's members (core::Finding's JSON, names unchanged) and rank, actionable, scope
/// (ScopeName), folded, why, file and component (null when the file is no known GPU library).
core::Json ToJson(const RankedFinding& finding);

}  // namespace gputriage::inspect
