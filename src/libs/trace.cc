#include "libs/trace.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "core/file.h"
#include "core/text.h"

extern char** environ;

namespace gputriage::libs {

std::vector<core::LoaderEvent> ParseAuditTrace(std::string_view text, size_t* malformed) {
  std::vector<core::LoaderEvent> out;
  size_t bad = 0;
  for (std::string_view line : core::SplitLines(text)) {
    if (line.empty()) continue;
    std::vector<std::string_view> f = core::Split(line, '\t');
    int64_t pid = 0;
    bool pid_ok = !f.empty() && !f[0].empty() && f[0].size() < 12 &&
                  f[0].find_first_not_of("0123456789") == std::string_view::npos;
    if (pid_ok) pid = std::stoll(std::string(f[0]));
    if (pid_ok && f.size() == 5 && f[1] == "S") {
      core::LoaderEvent e{pid, "search", std::string(f[3]), std::string(f[2]), std::nullopt, std::nullopt};
      if (!f[4].empty()) e.requester = std::string(f[4]);
      out.push_back(std::move(e));
    } else if (pid_ok && f.size() == 4 && f[1] == "O" && !f[2].empty() && f[2].size() < 20 &&
               f[2].find_first_not_of("-0123456789") == std::string_view::npos) {
      core::LoaderEvent e{pid, "open", std::string(f[3]), std::nullopt, std::nullopt, std::nullopt};
      try {
        e.namespace_id = std::stoll(std::string(f[2]));
      } catch (const std::exception&) {
        ++bad;
        continue;
      }
      out.push_back(std::move(e));
    } else {
      ++bad;
    }
  }
  if (malformed) *malformed = bad;
  return out;
}

core::Result<TraceResult> TraceCommand(const std::vector<std::string>& command, const std::string& audit_library,
                                       size_t max_trace_bytes) {
  if (command.empty()) return core::MakeErrorCode(core::ErrorCode::kInvalidArgument, "no command to trace");
  if (access(audit_library.c_str(), R_OK) != 0)
    return core::ErrnoError(errno, "{}: the audit library cannot be read", audit_library);
  char dir_template[] = "/tmp/gputriage-audit-XXXXXX";
  if (!mkdtemp(dir_template)) return core::ErrnoError(errno, "cannot create a directory under /tmp for the trace");
  std::string dir = dir_template;
  std::string out_file = dir + "/trace.tsv";
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string_view v = *e;
    if (v.starts_with("LD_AUDIT=") || v.starts_with("GPUTRIAGE_AUDIT_OUT=")) continue;
    env_strings.emplace_back(v);
  }
  const char* existing = std::getenv("LD_AUDIT");
  env_strings.push_back("LD_AUDIT=" + audit_library + (existing && *existing ? ":" + std::string(existing) : ""));
  env_strings.push_back("GPUTRIAGE_AUDIT_OUT=" + out_file);
  std::vector<char*> argv, envp;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data());
  if (rc != 0) {
    std::filesystem::remove_all(dir);
    return core::ErrnoError(rc, "{}: cannot start", command[0]);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  TraceResult result;
  result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  auto text = core::ReadFile(out_file, max_trace_bytes);
  std::filesystem::remove_all(dir);
  if (!text.ok()) {
    // Only a trace that is not there says the loader never audited the program; a trace too
    // large or unreadable says so itself (issue 32: a large trace was blamed on a static program).
    if (text.error().code == core::ErrorCode::kNotFound) {
      return core::MakeError(
          "the loader wrote no audit trace ({}): a static or setuid program, or a loader without LD_AUDIT support",
          text.error().message);
    }
    return core::MakeError("the loader's audit trace could not be read: {}", text.error().message);
  }
  result.events = ParseAuditTrace(*text, &result.malformed);
  return result;
}

}  // namespace gputriage::libs
