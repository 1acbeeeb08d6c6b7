#include "libs/components.h"

#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace gputriage::libs {
namespace {

namespace fs = std::filesystem;

std::string FileName(const std::string& path) { return fs::path(path).filename().string(); }

// "libcublas" from "libcublas.so.12.8.4.1": what makes two files copies of one library.
std::string Stem(const std::string& name) { return name.substr(0, name.find(".so")); }

}  // namespace

std::optional<std::string> WheelVersion(const std::string& path) {
  // <site>/nvidia/<package>/lib/<file>
  fs::path lib = fs::path(path).parent_path();
  if (lib.filename() != "lib") return std::nullopt;
  fs::path package = lib.parent_path();
  fs::path nvidia = package.parent_path();
  if (nvidia.filename() != "nvidia") return std::nullopt;
  std::string prefix = "nvidia_" + package.filename().string() + "_cu";
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(nvidia.parent_path(), ec)) {
    std::string name = e.path().filename().string();
    if (!name.starts_with(prefix) || !name.ends_with(".dist-info")) continue;
    size_t dash = name.find('-');
    if (dash == std::string::npos) continue;
    return name.substr(dash + 1, name.size() - dash - 1 - std::string(".dist-info").size());
  }
  return std::nullopt;
}

void ClassifyLibraries(std::vector<core::LibraryEntry>& libraries, const catalog::LibraryTables& catalog) {
  for (core::LibraryEntry& l : libraries) {
    std::optional<catalog::GpuLibraryClass> best;
    // The real file's name has the longest version ("libcudart.so.12.4.127"); the path's and the
    // soname's follow.
    for (const std::optional<std::string>& p : {l.realpath, l.path, std::optional<std::string>(l.soname)}) {
      if (!p) continue;
      auto c = catalog::ClassifyLibrary(catalog.gpu_libraries, FileName(*p));
      if (c && (!best || (c->version && (!best->version || c->version->size() > best->version->size())))) best = c;
    }
    if (!best) continue;
    l.component = best->component;
    l.version = best->version;
    l.release = best->release;
    if (l.path) {
      if (auto wheel = WheelVersion(*l.path)) l.version = *wheel;
    }
  }
}

std::vector<core::Finding> LibraryFindings(const core::LibraryReport& report, const catalog::LibraryTables& catalog,
                                           bool loaded) {
  std::vector<core::Finding> out;
  std::string where = loaded ? "the process has loaded" : "the program would load";
  // Two files of one library.
  std::map<std::string, std::set<std::string>> copies;
  for (const core::LibraryEntry& l : report.libraries) {
    if (l.component && l.component != "glibc" && (l.realpath || l.path))
      copies[Stem(l.soname)].insert(l.realpath.value_or(*l.path));
  }
  for (const auto& [stem, files] : copies) {
    if (files.size() < 2) continue;
    core::Finding f;
    f.id = "libs.duplicate_library";
    f.layer = 3;
    f.severity = loaded ? core::Severity::kError : core::Severity::kWarning;
    f.title = fmt::format("Two copies of {}: {} {} files", stem, where, files.size());
    f.detail = fmt::format(
        "{}: {}. Two copies of one GPU library in one process (a pip wheel next to the system's, a framework's bundled "
        "copy next to /opt/rocm) mean two versions of its state and of its ABI: calls resolve into whichever copy "
        "bound first.",
        stem, fmt::join(files, ", "));
    for (const std::string& file : files) f.evidence.push_back({"library", file});
    f.fix =
        "Make one copy win: remove the other from LD_LIBRARY_PATH / RUNPATH, or uninstall the duplicate (pip "
        "`nvidia-*` wheels, a second CUDA or ROCm install).";
    out.push_back(std::move(f));
  }
  // Components of different CUDA or ROCm releases.
  for (const char* family : {"cuda ", "rocm "}) {
    std::map<std::string, std::vector<std::string>> releases;
    for (const core::LibraryEntry& l : report.libraries) {
      if (l.release && l.release->starts_with(family)) releases[*l.release].push_back(l.soname);
    }
    if (releases.size() < 2) continue;
    core::Finding f;
    f.id = std::string("libs.mixed_") + (family[0] == 'c' ? "cuda" : "rocm") + "_releases";
    f.layer = 3;
    f.severity = core::Severity::kError;
    std::vector<std::string> parts;
    for (const auto& [release, names] : releases)
      parts.push_back(fmt::format("{} ({})", release, fmt::join(names, ", ")));
    f.title = fmt::format("Libraries of {} different {}releases: {}", releases.size(),
                          family[0] == 'c' ? "CUDA " : "ROCm ", where);
    f.detail = fmt::format("{}", fmt::join(parts, "; "));
    for (const auto& [release, names] : releases)
      f.evidence.push_back({"release", fmt::format("{}: {}", release, fmt::join(names, ", "))});
    f.fix =
        "Load one release's libraries only: one CUDA toolkit or one set of pip `nvidia-*` wheels; one ROCm install "
        "(the framework's bundled ROCm or /opt/rocm, not both).";
    out.push_back(std::move(f));
  }
  if (!report.missing.empty()) {
    core::Finding f;
    f.id = "libs.missing_library";
    f.layer = 3;
    f.severity = core::Severity::kError;
    std::vector<std::string> names;
    for (const core::MissingLibrary& m : report.missing) names.push_back(m.soname);
    f.title = fmt::format("{} needed librar{} not found: {}", names.size(), names.size() == 1 ? "y" : "ies",
                          fmt::join(names, ", "));
    for (const core::MissingLibrary& m : report.missing)
      f.evidence.push_back(
          {"needed by " + fmt::format("{}", fmt::join(m.needed_by, ", ")), m.soname + " => not found"});
    f.fix = "Install the package that provides it, or add its directory to LD_LIBRARY_PATH / the program's RUNPATH.";
    out.push_back(std::move(f));
  }
  if (!report.undefined_symbols.empty()) {
    core::Finding f;
    f.id = "libs.undefined_symbols";
    f.layer = 3;
    f.severity = core::Severity::kError;
    f.title = fmt::format("{} undefined symbol{} (what `ldd -r` reports)", report.undefined_symbols.size(),
                          report.undefined_symbols.size() == 1 ? "" : "s");
    for (size_t i = 0; i < report.undefined_symbols.size() && i < 10; ++i) {
      const core::UndefinedSymbol& u = report.undefined_symbols[i];
      f.evidence.push_back({u.needed_by, fmt::format("{}{}", u.demangled.value_or(u.symbol),
                                                     u.version ? " (version " + *u.version + ")" : "")});
    }
    f.fix =
        "The library that should define them is missing or of another version: compare with `gputriage libs diff OLD "
        "NEW`; a missing GLIBCXX_/GLIBC_ version means the program was built against a newer libstdc++/glibc than the "
        "one loaded.";
    out.push_back(std::move(f));
  }
  for (const catalog::CompatViolation& v :
       catalog::EvaluateCompat(catalog.compat, catalog::ComponentVersions(report.libraries))) {
    out.push_back(catalog::CompatFinding(v));
  }
  return out;
}

}  // namespace gputriage::libs
