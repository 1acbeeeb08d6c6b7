// The version matrix (kb/compat/*.yaml): component version boundaries. An entry applies when
// every `when` constraint holds for the versions known on the machine; each `requires`
// constraint whose component is known and outside its range is a violation. A component whose
// version is not known is not judged.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/source.h"
#include "core/libs.h"
#include "core/model.h"
#include "core/result.h"
#include "core/snapshot.h"

namespace gputriage::catalog {

/// One comparison of a range: ">=", ">", "<=", "<", "==" and a dotted numeric version.
struct VersionBound {
  std::string op;
  std::string version;
};

struct VersionConstraint {
  std::string component;
  std::string text;  ///< ">=13.0, <14" as written
  std::vector<VersionBound> bounds;
};

struct CompatRollback {
  std::string env;
  std::string value;
  std::string effect;
};

struct CompatReference {
  std::string url;
  std::string note;
};

struct CompatEntry {
  std::string id;
  std::string title;
  std::string vendor;
  core::Severity severity = core::Severity::kWarning;
  std::vector<VersionConstraint> when;
  std::vector<VersionConstraint> requires_;
  std::string what_changed;
  std::vector<std::string> symptoms;
  std::string mitigation;
  std::vector<CompatRollback> rollback;
  std::vector<CompatReference> references;
  std::string source;  ///< kb/compat/<id>.yaml
};

/// Whether `version` satisfies every bound.
bool Satisfies(std::string_view version, const std::vector<VersionBound>& bounds);

/// ">=13.0, <14" -> bounds; fails on an unknown operator or a non-numeric version.
core::Result<std::vector<VersionBound>> ParseVersionRange(std::string_view text);

core::Result<CompatEntry> ParseCompatEntry(std::string_view text, std::string_view source);

/// Every kb/compat/*.yaml of `files`, sorted by path (README and other files skipped).
core::Result<std::vector<CompatEntry>> LoadCompatEntries(const std::vector<SourceFile>& files);

/// A violated entry: the entry, the versions that made it apply, the requirement not met.
struct CompatViolation {
  const CompatEntry* entry = nullptr;
  std::vector<std::string> applies_because;  ///< "cuda-runtime 13.0"
  std::vector<std::string> violated;         ///< "nvidia-driver 575.57.08 is not >=580"
};

/// The entries `versions` (component -> version) violate.
std::vector<CompatViolation> EvaluateCompat(const std::vector<CompatEntry>& entries,
                                            const std::map<std::string, std::string>& versions);

/// component -> version (the component ids above) of what a snapshot records: nvidia-driver,
/// cuda-runtime (the CUDA toolkit installed), rocm, torch, torch-cuda, torch-hip, glibc,
/// libstdcxx (the highest GLIBCXX_), gcc, linux-kernel.
std::map<std::string, std::string> SnapshotVersions(const core::Snapshot& snapshot);

/// component -> version of libraries (`libs`' components: nvidia-driver from
/// libcuda.so.<driver version>, cuda-runtime, cudnn, ...; rocm from ROCm's build number).
std::map<std::string, std::string> ComponentVersions(const std::vector<core::LibraryEntry>& libraries);

/// The finding for a violation (layer 3, the entry's severity, its references and mitigation).
core::Finding CompatFinding(const CompatViolation& violation);

}  // namespace gputriage::catalog
