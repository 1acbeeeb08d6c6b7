// ROCm installations under /opt: /opt/rocm (usually a link to /opt/rocm-X.Y.Z, possibly
// through /etc/alternatives) and /opt/rocm-X.Y.Z directories, with the version rocm-core
// records in .info/version.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collect/amd/attribute_reader.h"
#include "core/model.h"

namespace gputriage::amd {

struct RocmInstallation {
  /// "/opt/rocm-6.3.3" or "/opt/rocm".
  std::string path;
  /// The link text when `path` is a symbolic link ("/etc/alternatives/rocm").
  std::optional<std::string> link_target;
  /// Where the links end ("/opt/rocm-6.3.3"), when `path` is a link.
  std::optional<std::string> resolves_to;
  /// "6.3.3-74"; nullopt when no source below names one.
  std::optional<std::string> version;
  /// ".info/version" (rocm-core), "include/rocm-core/rocm_version.h", or "directory name".
  std::optional<std::string> version_source;
};

/// The #define'd ROCM_VERSION_MAJOR.MINOR.PATCH of a rocm_version.h ("6.3.3"), nullopt when
/// one of the three is missing or not a number.
std::optional<std::string> ParseRocmVersionHeader(std::string_view text);

/// Lists /opt/rocm and /opt/rocm-* through the reader's view, following links inside the view
/// (an absolute link target in a --root tree stays in the tree). Never fails; a dangling link
/// or an unreadable version file is noted.
std::vector<RocmInstallation> FindRocmInstallations(AttributeReader& reader);

/// [{path, version, version_source, link_target, resolves_to}, ...].
core::Json RocmInstallationsToJson(const std::vector<RocmInstallation>& installations);

}  // namespace gputriage::amd
