// The GPU stack's libraries by component (kb/tables/gpu-libraries.yaml): which component a
// shared-library file belongs to and how its name tells the release it comes from.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace re2 {
class RE2;
}

namespace gputriage::catalog {

enum class ReleaseFrom { kNone, kCudaMajor, kRocmBuild };

struct GpuLibraryRule {
  std::string component;  ///< "cublas"
  std::string vendor;     ///< nvidia | amd | any
  std::string pattern;    ///< RE2 over the file name
  ReleaseFrom release = ReleaseFrom::kNone;
  bool versioned = true;  ///< false: the number in the name is no version (libc.so.6)
  std::shared_ptr<const re2::RE2> regex;
};

struct GpuLibraryClass {
  std::string component;
  std::string vendor;
  std::optional<std::string> version;  ///< "12.8.4.1" from "libcublas.so.12.8.4.1", "13" from "libcublas.so.13"
  std::optional<std::string> release;  ///< "cuda 12", "rocm 6.2.4"
};

core::Result<std::vector<GpuLibraryRule>> ParseGpuLibraries(std::string_view text, std::string_view source);

/// The component of a library file name (the soname or the file), nullopt when it is not one of
/// the table's; `version` is the dotted number after ".so." when there is one.
std::optional<GpuLibraryClass> ClassifyLibrary(const std::vector<GpuLibraryRule>& rules, std::string_view file_name);

/// "rocm 6.2.4" from 60204; nullopt for a number that is not a ROCm build number.
std::optional<std::string> RocmReleaseFromBuild(std::string_view number);

}  // namespace gputriage::catalog
