#include "collect/amd/rocm_install.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "core/text.h"

namespace gputriage::amd {

namespace {

// /opt/rocm -> /etc/alternatives/rocm -> /opt/rocm-6.3.3 is two; more than this is a loop.
constexpr int kMaxLinkHops = 8;

bool IsVersion(std::string_view text) {
  if (text.empty() || text.size() > 64 || text.front() < '0' || text.front() > '9') return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '-' ||
           c == '+' || c == '_' || c == '~';
  });
}

bool IsRocmDirName(std::string_view name) { return name == "rocm" || (name.starts_with("rocm-") && name.size() > 5); }

std::string Dirname(std::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

// Follows `path` while it is a link, inside the view. Returns the final path, or nullopt
// (noted) when the chain loops.
std::optional<std::string> FollowLinks(AttributeReader& reader, const std::string& path, const std::string& item) {
  std::string current = path;
  for (int hop = 0; hop < kMaxLinkHops; ++hop) {
    core::Result<std::string> target = reader.os().TryReadLink(current);
    if (!target.ok()) return current;
    std::string next = target->starts_with('/') ? *target : Dirname(current) + "/" + *target;
    current = std::filesystem::path(next).lexically_normal().string();
  }
  reader.Note(item, path, fmt::format("{}: more than {} symbolic links in a row", path, kMaxLinkHops));
  return std::nullopt;
}

void FindVersion(AttributeReader& reader, const std::string& dir, const std::string& name, const std::string& item,
                 RocmInstallation& out) {
  std::string info = dir + "/.info/version";
  if (std::optional<std::string> text = reader.ReadString(info, item, Presence::kOptional)) {
    if (IsVersion(*text)) {
      out.version = *text;
      out.version_source = ".info/version";
      return;
    }
    reader.Note(item, info, fmt::format("{}: not a version: {}", info, QuoteForNote(*text)));
  }
  std::string header = dir + "/include/rocm-core/rocm_version.h";
  if (std::optional<std::string> text = reader.ReadText(header, item, Presence::kOptional)) {
    if (std::optional<std::string> version = ParseRocmVersionHeader(*text)) {
      out.version = *version;
      out.version_source = "include/rocm-core/rocm_version.h";
      return;
    }
    reader.Note(item, header, header + ": no ROCM_VERSION_MAJOR/MINOR/PATCH definitions");
  }
  if (name.starts_with("rocm-") && IsVersion(name.substr(5))) {
    out.version = name.substr(5);
    out.version_source = "directory name";
  }
}

}  // namespace

std::optional<std::string> ParseRocmVersionHeader(std::string_view text) {
  std::optional<uint64_t> parts[3];
  static constexpr std::string_view kNames[3] = {"ROCM_VERSION_MAJOR", "ROCM_VERSION_MINOR", "ROCM_VERSION_PATCH"};
  for (std::string_view line : core::SplitLines(text)) {
    std::vector<std::string_view> tokens = core::SplitWhitespace(line);
    if (tokens.size() < 3 || tokens[0] != "#define") continue;
    for (int i = 0; i < 3; ++i) {
      if (tokens[1] == kNames[i] && !parts[i]) parts[i] = core::ParseU64(tokens[2], 10);
    }
  }
  if (!parts[0] || !parts[1] || !parts[2]) return std::nullopt;
  return fmt::format("{}.{}.{}", *parts[0], *parts[1], *parts[2]);
}

std::vector<RocmInstallation> FindRocmInstallations(AttributeReader& reader) {
  std::vector<RocmInstallation> out;
  core::Result<std::vector<std::string>> names = reader.os().TryListDir("/opt");
  if (!names.ok()) return out;
  for (const std::string& name : *names) {
    if (!IsRocmDirName(name)) continue;
    RocmInstallation install;
    install.path = "/opt/" + name;
    std::string item = "amd.rocm.installations[" + install.path + "]";
    core::Result<std::string> link = reader.os().TryReadLink(install.path);
    if (link.ok()) install.link_target = *link;
    std::optional<std::string> real = FollowLinks(reader, install.path, item);
    if (!real) continue;
    if (link.ok()) install.resolves_to = *real;
    if (!reader.os().IsDirectory(*real)) {
      reader.Note(item, install.path, fmt::format("{}: link to {}, which is not a directory", install.path, *real));
      continue;
    }
    FindVersion(reader, *real, std::string(std::filesystem::path(*real).filename()), item, install);
    out.push_back(std::move(install));
  }
  return out;
}

core::Json RocmInstallationsToJson(const std::vector<RocmInstallation>& installations) {
  core::Json out = core::Json::array();
  for (const RocmInstallation& install : installations) {
    core::Json entry = {{"path", install.path}};
    core::SetIf(entry, "version", install.version);
    core::SetIf(entry, "version_source", install.version_source);
    core::SetIf(entry, "link_target", install.link_target);
    core::SetIf(entry, "resolves_to", install.resolves_to);
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace gputriage::amd
