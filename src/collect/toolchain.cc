#include "collect/toolchain.h"

#include <re2/re2.h>
#include <stdlib.h>

#include <future>
#include <map>
#include <memory>
#include <set>

#include "collect/version_cache.h"
#include "core/subprocess.h"
#include "core/text.h"

namespace gputriage::collect {

namespace {

using core::Json;

// Compilers in the searched directories: the plain and the versioned names ("gcc-12",
// "clang++-15"); other clang-* programs (clang-format, clang-tidy) are not compilers.
const RE2& HostCompilerName() {
  static const RE2 kPattern(R"((gcc|g\+\+|clang|clang\+\+)(-[0-9]+(\.[0-9]+)*)?)");
  return kPattern;
}

struct Candidate {
  std::string name;
  std::string path;
  bool is_tool = false;  // a build tool (cmake), not a compiler
};

// "gcc-12" -> "gcc", "clang++-15" -> "clang++".
std::string_view Family(std::string_view name) {
  size_t dash = name.rfind('-');
  if (dash != std::string_view::npos && dash + 1 < name.size() && name[dash + 1] >= '0' && name[dash + 1] <= '9') {
    return name.substr(0, dash);
  }
  return name;
}

void AddIfPresent(const core::OsView& os, const std::string& path, bool is_tool, std::vector<Candidate>& out) {
  if (!os.Exists(path)) return;
  out.push_back({path.substr(path.rfind('/') + 1), path, is_tool});
}

std::string RealPath(const std::string& path) {
  std::unique_ptr<char, decltype(&free)> real(realpath(path.c_str(), nullptr), &free);
  return real ? std::string(real.get()) : path;
}

// Directories under `base` whose name starts with `prefix` ("/usr/local", "cuda"), sorted.
std::vector<std::string> Installs(const core::OsView& os, const std::string& base, std::string_view prefix) {
  std::vector<std::string> out;
  auto entries = os.TryListDir(base);
  if (!entries.ok()) return out;
  for (const std::string& e : *entries) {
    if (e.starts_with(prefix)) out.push_back(base + "/" + e);
  }
  return out;
}

// /usr/bin, /usr/local/bin, then the absolute `extra_dirs` that exist; each directory once, by
// its real path (/bin is /usr/bin on a merged-/usr system).
std::vector<std::string> SearchDirs(const core::OsView& os, const std::vector<std::string>& extra_dirs) {
  std::vector<std::string> dirs;
  std::set<std::string> seen;
  for (const std::string& dir : {std::string("/usr/bin"), std::string("/usr/local/bin")}) {
    dirs.push_back(dir);
    seen.insert(RealPath(os.Resolve(dir)));
  }
  for (const std::string& dir : extra_dirs) {
    if (!dir.starts_with('/') || !os.IsDirectory(dir)) continue;
    if (seen.insert(RealPath(os.Resolve(dir))).second) dirs.push_back(dir);
  }
  return dirs;
}

std::vector<Candidate> FindCandidates(const core::OsView& os, const std::vector<std::string>& extra_dirs) {
  std::vector<Candidate> out;
  for (const std::string& dir : SearchDirs(os, extra_dirs)) {
    auto names = os.TryListDir(dir);
    if (!names.ok()) continue;
    for (const std::string& name : *names) {
      if (RE2::FullMatch(name, HostCompilerName())) out.push_back({name, dir + "/" + name});
    }
    for (const char* name : {"nvcc", "hipcc"}) AddIfPresent(os, dir + "/" + name, false, out);
    AddIfPresent(os, dir + "/cmake", true, out);
  }
  for (const std::string& cuda : Installs(os, "/usr/local", "cuda")) AddIfPresent(os, cuda + "/bin/nvcc", false, out);
  for (const std::string& rocm : Installs(os, "/opt", "rocm")) {
    AddIfPresent(os, rocm + "/bin/hipcc", false, out);
    AddIfPresent(os, rocm + "/bin/amdclang++", false, out);
    AddIfPresent(os, rocm + "/llvm/bin/clang", false, out);
  }
  // A directory on PATH may also be one of the installations (/usr/local/cuda/bin).
  std::set<std::string> paths;
  std::erase_if(out, [&](const Candidate& c) { return !paths.insert(c.path).second; });
  return out;
}

struct VersionRun {
  std::optional<ToolVersion> version;
  std::string problem;  // why there is no version
};

VersionRun RunVersion(const Candidate& candidate, const ToolchainOptions& options) {
  core::RunOptions run_options;
  run_options.timeout = options.timeout;
  run_options.max_stdout_bytes = 64u << 10;
  run_options.max_stderr_bytes = 4u << 10;
  auto outcome = core::RunWithTimeout({candidate.path, "--version"}, run_options);
  VersionRun run;
  if (!outcome.ok()) {
    run.problem = outcome.error().message;
    return run;
  }
  if (outcome->timed_out) {
    run.problem = fmt::format("`{} --version` {}", candidate.path, core::DescribeOutcome(*outcome, run_options));
    return run;
  }
  // hipcc prints its version on stdout even when a helper it runs fails (exit status 0 or not).
  run.version = ParseToolVersion(candidate.name, outcome->stdout_data);
  if (!run.version) run.version = ParseToolVersion(candidate.name, outcome->stderr_tail);
  if (!run.version) {
    auto lines = core::SplitLines(outcome->stdout_data);
    std::string first = lines.empty() ? "" : core::SanitizeUtf8(core::Trim(lines.front()).substr(0, 200));
    run.problem = fmt::format("`{} --version` {} and printed no version line gputriage knows{}{}", candidate.path,
                              core::DescribeOutcome(*outcome, run_options), first.empty() ? "" : ": ", first);
  }
  return run;
}

}  // namespace

std::optional<ToolVersion> ParseToolVersion(std::string_view name, std::string_view output) {
  static const RE2 kGcc(R"(^\S+ \([^)]*\) ([0-9]+(?:\.[0-9]+)*))");
  static const RE2 kClang(R"(clang version ([0-9]+(?:\.[0-9]+)*))");
  static const RE2 kNvcc(R"(release [0-9]+\.[0-9]+, V([0-9]+(?:\.[0-9]+)*))");
  static const RE2 kHipcc(R"(^HIP version: (\S+))");
  static const RE2 kCmake(R"(^cmake version (\S+))");
  std::string_view family = Family(name);
  const RE2* pattern = nullptr;
  if (family == "gcc" || family == "g++") pattern = &kGcc;
  if (family == "clang" || family == "clang++" || family == "amdclang" || family == "amdclang++") pattern = &kClang;
  if (family == "nvcc") pattern = &kNvcc;
  if (family == "hipcc") pattern = &kHipcc;
  if (family == "cmake") pattern = &kCmake;
  if (pattern == nullptr) return std::nullopt;
  for (std::string_view line : core::SplitLines(output)) {
    std::string version;
    if (RE2::PartialMatch(line, *pattern, &version)) {
      return ToolVersion{core::SanitizeUtf8(version), core::SanitizeUtf8(core::Trim(line))};
    }
  }
  return std::nullopt;
}

void CollectToolchain(const core::OsView& os, const ToolchainOptions& options, Json& software, core::Section& section) {
  std::vector<Candidate> candidates = FindCandidates(os, options.extra_dirs);
  // One run per real file: /usr/bin/gcc and /usr/bin/gcc-12 are one program. A version
  // remembered for the same file (options.version_cache) is not read again.
  std::map<std::string, std::shared_future<VersionRun>> runs;
  std::map<std::string, FileIdentity> ran;  // programs run now, to remember
  std::optional<VersionCache> cache;
  if (os.live() && options.version_cache) cache = VersionCache::Load(*options.version_cache);
  if (os.live()) {
    for (const Candidate& c : candidates) {
      std::string real = RealPath(c.path);
      if (runs.count(real) != 0) continue;
      std::optional<FileIdentity> identity = IdentityOf(real);
      std::optional<ToolVersion> known = cache && identity ? cache->Find(real, *identity) : std::nullopt;
      if (known) {
        std::promise<VersionRun> ready;
        ready.set_value(VersionRun{known, ""});
        runs[real] = ready.get_future().share();
        continue;
      }
      if (identity) ran[real] = *identity;
      runs[real] = std::async(std::launch::async, [c, options]() { return RunVersion(c, options); }).share();
    }
  }
  Json compilers = Json::array();
  Json tools = Json::array();
  for (const Candidate& c : candidates) {
    Json entry = {{"name", c.name}, {"path", c.path}};
    if (os.live()) {
      const VersionRun& run = runs[RealPath(c.path)].get();
      if (run.version) {
        entry["version"] = run.version->version;
        entry["version_line"] = run.version->line;
      } else {
        section.NoteMissing(fmt::format("software.{}[{}].version", c.is_tool ? "tools" : "compilers", c.path),
                            run.problem);
      }
    }
    (c.is_tool ? tools : compilers).push_back(std::move(entry));
  }
  if (cache) {
    for (const auto& [real, identity] : ran) {
      const VersionRun& run = runs[real].get();
      if (run.version) cache->Remember(real, identity, *run.version);
    }
    (void)cache->Save();  // a cache that cannot be written only costs the next run its time
  }
  software["compilers"] = std::move(compilers);
  software["tools"] = std::move(tools);
}

}  // namespace gputriage::collect
