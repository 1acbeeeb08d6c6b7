#include "core/trust.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "core/text.h"

namespace gputriage::core {
namespace {

std::string OwnerName(uid_t uid) {
  struct passwd entry {};
  struct passwd* found = nullptr;
  char buffer[1024];
  if (::getpwuid_r(uid, &entry, buffer, sizeof(buffer), &found) == 0 && found != nullptr)
    return fmt::format("{} (uid {})", found->pw_name, uid);
  return fmt::format("uid {}", uid);
}

// One file or directory: owned by root or us, not writable by group or others (a directory may
// be, with the sticky bit). `role` names it in the error ("config file /etc/x.toml").
Result<void> CheckOne(const std::string& role, const std::string& path, const struct stat& st) {
  uid_t me = ::geteuid();
  if (st.st_uid != 0 && st.st_uid != me) {
    return MakeError(
        "{} is owned by {}, neither root nor the user gputriage runs as ({}): refusing to use it, "
        "as sudo and ssh do (its owner could make gputriage run a program of their choosing); "
        "give it to root or to yourself",
        role, OwnerName(st.st_uid), OwnerName(me));
  }
  bool others_write = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
  if (others_write && !(S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX))) {
    return MakeError(
        "{} is writable by {} (mode {:04o}): refusing to use it, as sudo and ssh do (anyone who can "
        "write it could make gputriage run a program of their choosing); chmod go-w {}",
        role, (st.st_mode & S_IWOTH) ? "anyone" : "its group", st.st_mode & 07777, path);
  }
  return {};
}

}  // namespace

Result<void> CheckTrusted(const std::string& path, const std::string& what) {
  std::error_code ec;
  std::filesystem::path real = std::filesystem::canonical(path, ec);
  if (ec) return MakeErrorCode(ErrorCodeFromErrno(ec.value()), "{} {}: {}", what, path, ec.message());
  struct stat st {};
  if (::stat(real.c_str(), &st) != 0) return ErrnoError(errno, "{} {}", what, path);
  std::string shown = real.string() == path ? path : fmt::format("{} (-> {})", path, real.string());
  GT_RETURN_IF_ERROR(CheckOne(what + " " + shown, real.string(), st));
  for (std::filesystem::path dir = real.parent_path();; dir = dir.parent_path()) {
    if (::stat(dir.c_str(), &st) != 0) return ErrnoError(errno, "{} {}: directory {}", what, path, dir.string());
    GT_RETURN_IF_ERROR(
        CheckOne(fmt::format("directory {} (above the {} {})", dir.string(), what, path), dir.string(), st));
    if (dir == dir.parent_path()) break;
  }
  return {};
}

Result<std::string> FindProgram(const std::string& name) {
  if (name.empty()) return MakeError("no program named");
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  for (std::string_view dir : Split(path ? path : "/usr/local/bin:/usr/bin:/bin", ':')) {
    std::string candidate = std::string(dir.empty() ? "." : dir) + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return MakeErrorCode(ErrorCode::kNotFound, "{}: not found in PATH", name);
}

Result<std::string> TrustedProgram(const std::string& name) {
  GT_ASSIGN_OR_RETURN(std::string path, FindProgram(name));
  if (::geteuid() != 0) return path;
  // gputriage's own helpers (gputriage-probe beside it, or itself): their directories are the
  // ones the user already trusted by running gputriage from there; the file itself is checked.
  std::error_code ec;
  std::filesystem::path real = std::filesystem::canonical(path, ec);
  std::filesystem::path self = std::filesystem::canonical("/proc/self/exe", ec);
  if (!ec && !real.empty() && real.parent_path() == self.parent_path()) {
    struct stat st {};
    if (::stat(real.c_str(), &st) != 0) return ErrnoError(errno, "program {}", path);
    GT_RETURN_IF_ERROR(CheckOne("program " + path, real.string(), st));
    return path;
  }
  GT_RETURN_IF_ERROR(CheckTrusted(path, "program"));
  return path;
}

}  // namespace gputriage::core
