#include "forensics/trace_effects.h"

#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "core/file.h"
#include "core/text.h"

namespace gputriage::forensics {
namespace {

constexpr size_t kMaxProcStatusBytes = 64u << 10;
constexpr size_t kMaxLineBytes = 4096;

constexpr const char* kNoTraceFix = "rerun with --no-trace (exit status, output and kernel log are still kept)";

// The "Name:" line's whitespace-separated values from a /proc/PID/status text.
std::vector<std::string> StatusField(const std::string& status, std::string_view name) {
  for (std::string_view line : core::SplitLines(status)) {
    if (!core::StartsWith(line, name)) continue;
    std::vector<std::string> values;
    for (std::string_view v : core::Split(line.substr(name.size()), '\t')) {
      std::string value(core::Trim(v));
      if (!value.empty()) values.push_back(value);
    }
    return values;
  }
  return {};
}

std::string UserName(uid_t uid) {
  passwd pw{};
  passwd* found = nullptr;
  char buffer[4096];
  if (getpwuid_r(uid, &pw, buffer, sizeof buffer, &found) == 0 && found) return pw.pw_name;
  return fmt::format("uid {}", uid);
}

std::string GroupName(gid_t gid) {
  group gr{};
  group* found = nullptr;
  char buffer[4096];
  if (getgrgid_r(gid, &gr, buffer, sizeof buffer, &found) == 0 && found) return gr.gr_name;
  return fmt::format("gid {}", gid);
}

// What privilege the file would give the process (empty: none it lacks).
std::string LostPrivilege(const std::string& path, const struct stat& st, long euid, long egid) {
  if ((st.st_mode & S_ISUID) && static_cast<long>(st.st_uid) != euid) {
    return fmt::format("set-user-ID {}", UserName(st.st_uid));
  }
  // Without group execute permission the bit means mandatory locking, not set-group-ID.
  if ((st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP) && static_cast<long>(st.st_gid) != egid) {
    return fmt::format("set-group-ID {}", GroupName(st.st_gid));
  }
  if (euid != 0 && getxattr(path.c_str(), "security.capability", nullptr, 0) > 0) {
    return "given file capabilities (security.capability)";
  }
  return {};
}

}  // namespace

bool TracerHasCapSysPtrace() {
  std::string status = core::ReadFile("/proc/self/status", kMaxProcStatusBytes).value_or("");
  std::vector<std::string> eff = StatusField(status, "CapEff:");
  if (eff.empty()) return false;
  uint64_t caps = std::strtoull(eff[0].c_str(), nullptr, 16);
  return (caps >> CAP_SYS_PTRACE) & 1;
}

std::optional<TraceEffect> PrivilegeLostUnderTrace(int pid, bool tracer_capable) {
  if (tracer_capable) return std::nullopt;
  const std::string proc = fmt::format("/proc/{}", pid);
  char exe[4096];
  ssize_t n = readlink((proc + "/exe").c_str(), exe, sizeof exe - 1);
  struct stat st {};
  if (n <= 0 || stat((proc + "/exe").c_str(), &st) != 0) return std::nullopt;
  std::string path(exe, static_cast<size_t>(n));
  if (!(st.st_mode & (S_ISUID | S_ISGID)) && getxattr(path.c_str(), "security.capability", nullptr, 0) <= 0) {
    return std::nullopt;
  }
  // Uid:/Gid: are "real effective saved filesystem"; the effective ids say what it got.
  std::string status = core::ReadFile(proc + "/status", kMaxProcStatusBytes).value_or("");
  std::vector<std::string> uids = StatusField(status, "Uid:"), gids = StatusField(status, "Gid:");
  if (uids.size() < 2 || gids.size() < 2) return std::nullopt;
  std::string lost = LostPrivilege(path, st, std::atol(uids[1].c_str()), std::atol(gids[1].c_str()));
  if (lost.empty()) return std::nullopt;
  TraceEffect effect;
  effect.kind = "privilege-dropped";
  effect.pid = pid;
  effect.note = fmt::format(
      "{} is {}, but a traced program runs without that privilege (the kernel ignores it under "
      "ptrace unless the tracer has CAP_SYS_PTRACE), so it may fail or behave differently: {}",
      path, lost, kNoTraceFix);
  effect.evidence = fmt::format("{}: mode {:04o}, owner {}, group {}; pid {} runs with effective uid {}, gid {}", path,
                                st.st_mode & 07777, UserName(st.st_uid), GroupName(st.st_gid), pid, uids[1], gids[1]);
  return effect;
}

void OutputEffectScanner::Feed(int stream, std::string_view bytes) {
  std::string& partial = partial_[stream == 0 ? 0 : 1];
  while (!bytes.empty()) {
    size_t nl = bytes.find('\n');
    std::string_view piece = bytes.substr(0, nl);
    if (partial.size() < kMaxLineBytes) partial.append(piece.substr(0, kMaxLineBytes - partial.size()));
    if (nl == std::string_view::npos) return;
    Line(partial);
    partial.clear();
    bytes.remove_prefix(nl + 1);
  }
}

std::vector<TraceEffect> OutputEffectScanner::Finish() {
  for (std::string& partial : partial_) {
    if (!partial.empty()) Line(partial);
    partial.clear();
  }
  return found_;
}

void OutputEffectScanner::Line(std::string_view raw) {
  std::string_view line = core::Trim(raw);
  auto seen = [&](std::string_view kind) {
    return std::any_of(found_.begin(), found_.end(), [&](const TraceEffect& e) { return e.kind == kind; });
  };
  auto has = [&](std::string_view text) { return line.find(text) != std::string_view::npos; };
  if ((has("LeakSanitizer has encountered a fatal error") || has("LeakSanitizer does not work under ptrace")) &&
      !seen("lsan-under-ptrace")) {
    found_.push_back({"lsan-under-ptrace", 0,
                      fmt::format("LeakSanitizer cannot work while gputriage traces the job (its leak check "
                                  "stops the process's threads with ptrace, and a process has only one "
                                  "tracer): {}, or turn the check off with ASAN_OPTIONS=detect_leaks=0",
                                  kNoTraceFix),
                      std::string(line)});
    return;
  }
  std::string lower = core::ToLower(line);
  if (lower.find("ptrace") != std::string::npos && has("Operation not permitted") && !seen("tracer-in-job")) {
    found_.push_back({"tracer-in-job", 0,
                      fmt::format("a debugger or tracer inside the job could not use ptrace (strace, gdb, a crash "
                                  "handler): a process has only one tracer, and gputriage is tracing the job: {}",
                                  kNoTraceFix),
                      std::string(line)});
  }
}

std::string TraceEffectsText(const std::vector<TraceEffect>& effects) {
  std::string text;
  for (const TraceEffect& e : effects) {
    text += fmt::format("gputriage: note: {}\n", e.note);
    if (!e.evidence.empty()) text += fmt::format("  ({})\n", e.evidence);
  }
  return text;
}

}  // namespace gputriage::forensics
