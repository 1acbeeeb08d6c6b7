#include "libs/loader_config.h"

#include <unistd.h>

#include "core/subprocess.h"
#include "core/text.h"

namespace gputriage::libs {
namespace {

constexpr std::string_view kDefaultInterpreter = "/lib64/ld-linux-x86-64.so.2";
constexpr size_t kMaxLegacyNames = 4;
constexpr size_t kMaxListed = 64;

LoaderConfig Defaults() {
  LoaderConfig c;
  c.system_dirs = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"};
  c.source = "glibc's x86-64 defaults (the loader could not be asked)";
  return c;
}

// The legacy hwcap subdirectories glibc before 2.37 tries, most specific first: every
// combination of "tls", the platform and the supported hwcap names, as LD_DEBUG=libs lists them.
std::vector<std::string> LegacyCombinations(bool tls, const std::vector<std::string>& names) {
  std::vector<std::string> out;
  size_t n = names.size();
  for (int t = tls ? 1 : 0; t >= 0; --t) {
    for (size_t mask = (size_t{1} << n); mask-- > 0;) {
      std::string dir = t ? "tls" : "";
      for (size_t i = 0; i < n; ++i) {
        if (mask & (size_t{1} << (n - 1 - i))) dir += (dir.empty() ? "" : "/") + names[i];
      }
      if (!dir.empty()) out.push_back(dir);
    }
  }
  return out;
}

}  // namespace

core::Result<LoaderConfig> ParseLdSoHelp(std::string_view text) {
  LoaderConfig c;
  enum { kNone, kSearch, kHwcaps, kLegacy } part = kNone;
  bool tls = false;
  std::vector<std::string> legacy;
  for (std::string_view raw : core::SplitLines(text)) {
    std::string_view line = core::Trim(raw);
    if (raw.empty() || (!raw.starts_with(" ") && !raw.starts_with("\t"))) {
      part = line.starts_with("Shared library search path")       ? kSearch
             : line.starts_with("Subdirectories of glibc-hwcaps") ? kHwcaps
             : line.starts_with("Legacy HWCAP subdirectories")    ? kLegacy
                                                                  : kNone;
      continue;
    }
    if (part == kSearch && line.ends_with("(system search path)")) {
      c.system_dirs.emplace_back(core::Trim(line.substr(0, line.find(' '))));
    } else if (part == kHwcaps && line.find("searched") != std::string_view::npos) {
      c.hwcaps_subdirs.emplace_back(line.substr(0, line.find(' ')));
    } else if (part == kLegacy && line.find("searched") != std::string_view::npos) {
      std::string name(line.substr(0, line.find(' ')));
      if (line.find("AT_PLATFORM") != std::string_view::npos) c.platform = name;
      if (name == "tls") {
        tls = true;
      } else {
        legacy.push_back(name);
      }
    }
  }
  if (c.system_dirs.empty()) return core::MakeError("ld.so --help printed no system search path");
  // $LIB is the loader's own library directory: the first system directory, less the '/'.
  c.lib = c.system_dirs.front().substr(1);
  // Every subset of the legacy names is a directory: glibc has the platform and one or two
  // hwcap names; more is not a loader's answer (a fuzzed one with 80 cost 2^80 steps).
  if (legacy.size() > kMaxLegacyNames) legacy.resize(kMaxLegacyNames);
  if (c.system_dirs.size() > kMaxListed) c.system_dirs.resize(kMaxListed);
  if (c.hwcaps_subdirs.size() > kMaxListed) c.hwcaps_subdirs.resize(kMaxListed);
  if (!legacy.empty() || tls) c.legacy_subdirs = LegacyCombinations(tls, legacy);
  return c;
}

LoaderConfig DetectLoaderConfig(const std::optional<std::string>& interpreter,
                                const std::optional<std::string>& ld_library_path) {
  std::string ld = interpreter.value_or(std::string(kDefaultInterpreter));
  LoaderConfig c = Defaults();
  if (access(ld.c_str(), X_OK) == 0) {
    core::RunOptions options;
    options.timeout = std::chrono::milliseconds(3000);
    auto outcome = core::RunWithTimeout({ld, "--help"}, options);
    if (outcome.ok() && outcome->exit_code == 0) {
      if (auto parsed = ParseLdSoHelp(outcome->stdout_data); parsed.ok()) {
        c = std::move(*parsed);
        c.source = ld + " --help";
      }
    }
  }
  if (ld_library_path) {
    for (std::string_view dir : core::Split(*ld_library_path, ':')) {
      for (std::string_view d : core::Split(dir, ';')) c.ld_library_path.emplace_back(d);
    }
  }
  return c;
}

std::vector<std::string> ExpandSearchPath(std::string_view path, std::string_view origin, const LoaderConfig& config) {
  std::vector<std::string> out;
  for (std::string_view part : core::Split(path, ':')) {
    for (std::string_view element : core::Split(part, ';')) {
      std::string dir;
      bool ok = true;
      for (size_t i = 0; i < element.size() && ok;) {
        if (element[i] != '$') {
          dir += element[i++];
          continue;
        }
        std::string_view rest = element.substr(i + 1);
        bool braced = rest.starts_with("{");
        std::string_view name = braced ? rest.substr(1) : rest;
        auto take = [&](std::string_view token, std::string_view value) {
          if (!name.starts_with(token)) return false;
          if (braced && name.substr(token.size()).starts_with("}")) {
            i += 1 + 1 + token.size() + 1;
          } else if (!braced &&
                     (name.size() == token.size() ||
                      !(std::isalnum(static_cast<unsigned char>(name[token.size()])) || name[token.size()] == '_'))) {
            i += 1 + token.size();
          } else {
            return false;
          }
          dir += value;
          return true;
        };
        if (!take("ORIGIN", origin) && !take("LIB", config.lib) && !take("PLATFORM", config.platform)) ok = false;
      }
      if (!ok) continue;
      if (dir.empty()) dir = ".";
      while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
      out.push_back(std::move(dir));
    }
  }
  return out;
}

std::vector<std::string> SubdirectoriesTried(const std::string& dir, const LoaderConfig& config) {
  std::vector<std::string> out;
  for (const std::string& h : config.hwcaps_subdirs) out.push_back(dir + "/glibc-hwcaps/" + h);
  for (const std::string& l : config.legacy_subdirs) out.push_back(dir + "/" + l);
  out.push_back(dir);
  return out;
}

}  // namespace gputriage::libs
