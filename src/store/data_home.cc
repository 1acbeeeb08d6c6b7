#include "store/data_home.h"

#include "core/fs.h"
#include "core/trust.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace gputriage::store {
namespace {

std::optional<std::string> EnvVar(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

bool Usable(const std::optional<std::string>& value) { return value && !value->empty(); }

std::string JoinPath(std::string base, std::string_view tail) {
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  if (base != "/") base += '/';
  base += tail;
  return base;
}

std::optional<std::string> PasswdHome() {
  long size = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buffer(size > 0 ? static_cast<size_t>(size) : 16384);
  passwd entry{};
  passwd* found = nullptr;
  if (::getpwuid_r(::getuid(), &entry, buffer.data(), buffer.size(), &found) != 0 || found == nullptr ||
      found->pw_dir == nullptr || *found->pw_dir == '\0') {
    return std::nullopt;
  }
  return std::string(found->pw_dir);
}

}  // namespace

std::optional<std::string> ChooseDataHome(const DataHomeEnv& env) {
  if (Usable(env.gputriage_home)) return *env.gputriage_home;
  // The XDG base-directory spec says a relative $XDG_DATA_HOME is invalid and must be ignored.
  if (Usable(env.xdg_data_home) && env.xdg_data_home->front() == '/') {
    return JoinPath(*env.xdg_data_home, "gputriage");
  }
  if (Usable(env.home)) return JoinPath(*env.home, ".local/share/gputriage");
  return std::nullopt;
}

namespace {

// The process's data home, not created.
core::Result<std::string> ChosenDataHome() {
  DataHomeEnv env{EnvVar("GPUTRIAGE_HOME"), EnvVar("XDG_DATA_HOME"), EnvVar("HOME")};
  if (!Usable(env.home)) env.home = PasswdHome();
  std::optional<std::string> chosen = ChooseDataHome(env);
  if (!chosen) {
    return core::MakeError(
        "cannot choose a data directory: GPUTRIAGE_HOME, XDG_DATA_HOME and HOME are unset and "
        "uid {} has no home directory",
        ::getuid());
  }
  return *chosen;
}

}  // namespace

core::Result<std::string> DataHome() {
  GT_ASSIGN_OR_RETURN(std::string chosen, ChosenDataHome());
  core::Result<void> made = core::MakeDirectories(chosen, 0700);
  if (!made.ok()) return core::MakeError("data directory: {}", made.error().message);
  // As root, a data home that another user owns or can write (GPUTRIAGE_HOME=/home/alice/x, a
  // directory under a world-writable one) could hold planted files and links that root would
  // then write through: refused, as sudo and ssh refuse such files.
  if (::geteuid() == 0) GT_RETURN_IF_ERROR(core::CheckTrusted(chosen, "data home"));
  return chosen;
}

core::Result<std::string> DefaultDatabasePath() {
  GT_ASSIGN_OR_RETURN(std::string home, DataHome());
  return JoinPath(std::move(home), "snapshots.db");
}

core::Result<std::string> LocateDefaultDatabase() {
  GT_ASSIGN_OR_RETURN(std::string home, ChosenDataHome());
  return JoinPath(std::move(home), "snapshots.db");
}

}  // namespace gputriage::store
