#include "collect/c_runtime.h"

#include <re2/re2.h>
#include <unistd.h>

#include "collect/elf_versions.h"
#include "core/text.h"

namespace gputriage::collect {

namespace {

using core::Json;

constexpr size_t kLibraryMaxBytes = 64u << 20;

// The first `name` in `dirs` ("/lib/x86_64-linux-gnu/libc.so.6"), or nullopt.
std::optional<std::string> FindOnLoaderPath(const core::OsView& os, const std::vector<std::string>& dirs,
                                            std::string_view name) {
  for (const std::string& dir : dirs) {
    std::string path = dir + "/" + std::string(name);
    if (os.Exists(path)) return path;
  }
  return std::nullopt;
}

std::optional<std::string> LiveGlibcVersion() {
  char buffer[128] = {};
  size_t n = confstr(_CS_GNU_LIBC_VERSION, buffer, sizeof(buffer));
  if (n == 0 || n > sizeof(buffer)) return std::nullopt;
  std::string_view text(buffer);  // "glibc 2.36"
  if (!text.starts_with("glibc ")) return std::nullopt;
  return std::string(text.substr(6));
}

std::string DirList(const std::vector<std::string>& dirs) {
  std::string out;
  for (const std::string& d : dirs) out += (out.empty() ? "" : ", ") + d;
  return out;
}

void CollectGlibc(const core::OsView& os, const std::vector<std::string>& dirs, Json& software,
                  core::Section& section) {
  Json glibc = Json::object();
  if (os.live()) {
    if (auto version = LiveGlibcVersion()) {
      glibc["version"] = *version;
      glibc["version_source"] = "confstr";
    }
  }
  std::optional<std::string> path = FindOnLoaderPath(os, dirs, "libc.so.6");
  if (!path) {
    section.NoteMissing("software.glibc", "no libc.so.6 in the loader directories (" + DirList(dirs) + ")");
  } else {
    glibc["path"] = *path;
    auto link = os.TryReadLink(*path);
    auto from_name = link.ok() ? GlibcVersionFromFileName(link->substr(link->rfind('/') + 1)) : std::nullopt;
    if (!glibc.contains("version") && from_name) {
      glibc["version"] = *from_name;
      glibc["version_source"] = "file_name";
    }
    auto bytes = os.TryReadFile(*path, kLibraryMaxBytes);
    if (!bytes.ok()) {
      section.NoteMissing("software.glibc", bytes.error().message);
    } else {
      if (auto banner = ParseGlibcBanner(*bytes); banner && !glibc.contains("version")) {
        glibc["version"] = *banner;
        glibc["version_source"] = "banner";
      }
      auto names = ReadElfVersionDefinitions(std::move(*bytes), os.Resolve(*path));
      if (!names.ok()) {
        section.NoteMissing("software.glibc.max_symbol_version", names.error().message);
      } else if (auto highest = HighestVersion(*names, "GLIBC_")) {
        glibc["max_symbol_version"] = *highest;
      }
    }
  }
  if (!glibc.empty()) software["glibc"] = std::move(glibc);
}

void CollectLibstdcxx(const core::OsView& os, const std::vector<std::string>& dirs, Json& software,
                      core::Section& section) {
  std::optional<std::string> path = FindOnLoaderPath(os, dirs, "libstdc++.so.6");
  if (!path) {
    section.NoteMissing("software.libstdcxx", "no libstdc++.so.6 in the loader directories (" + DirList(dirs) + ")");
    return;
  }
  Json libstdcxx = {{"path", *path}};
  if (auto link = os.TryReadLink(*path); link.ok()) libstdcxx["file"] = link->substr(link->rfind('/') + 1);
  auto bytes = os.TryReadFile(*path, kLibraryMaxBytes);
  auto names = bytes.ok() ? ReadElfVersionDefinitions(std::move(*bytes), os.Resolve(*path))
                          : core::Result<std::vector<std::string>>(bytes.error());
  if (!names.ok()) {
    section.NoteMissing("software.libstdcxx", names.error().message);
  } else {
    if (auto v = HighestVersion(*names, "GLIBCXX_")) libstdcxx["glibcxx"] = *v;
    if (auto v = HighestVersion(*names, "CXXABI_")) libstdcxx["cxxabi"] = *v;
  }
  software["libstdcxx"] = std::move(libstdcxx);
}

}  // namespace

std::optional<std::string> ParseGlibcBanner(std::string_view bytes) {
  static const RE2 kBanner(R"(^GNU C Library [^\n]{0,200}? release version ([0-9]+\.[0-9]+(?:\.[0-9]+)?))");
  constexpr std::string_view kStart = "GNU C Library ";
  for (size_t at = bytes.find(kStart); at != std::string_view::npos; at = bytes.find(kStart, at + 1)) {
    std::string version;
    if (RE2::PartialMatch(bytes.substr(at, 300), kBanner, &version)) return version;
  }
  return std::nullopt;
}

std::optional<std::string> GlibcVersionFromFileName(std::string_view name) {
  static const RE2 kName(R"(libc-([0-9]+\.[0-9]+(?:\.[0-9]+)?)\.so)");
  std::string version;
  if (RE2::FullMatch(name, kName, &version)) return version;
  return std::nullopt;
}

void CollectCRuntime(const core::OsView& os, const std::vector<std::string>& loader_dirs, Json& software,
                     core::Section& section) {
  CollectGlibc(os, loader_dirs, software, section);
  CollectLibstdcxx(os, loader_dirs, software, section);
}

}  // namespace gputriage::collect
