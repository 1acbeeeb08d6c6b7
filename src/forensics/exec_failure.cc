#include "forensics/exec_failure.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "core/file.h"
#include "core/text.h"

namespace gputriage::forensics {
namespace {}  // namespace

std::optional<std::string> CommandPath(const std::string& command) {
  if (command.find('/') != std::string::npos) return command;
  const char* env = std::getenv("PATH");
  std::string path = env ? env : "/bin:/usr/bin";
  for (std::string_view dir : core::Split(path, ':')) {
    std::string file = (dir.empty() ? std::string(".") : std::string(dir)) + "/" + command;
    struct stat st {};
    if (stat(file.c_str(), &st) == 0) return file;
  }
  return std::nullopt;
}

namespace {

// The interpreter named by a "#!" first line, "" when there is none.
std::string ShebangInterpreter(const std::string& path) {
  std::string head = core::ReadFile(path, 512).value_or("");
  if (!core::StartsWith(head, "#!")) return {};
  std::string_view line = core::Trim(std::string_view(head).substr(2, head.find('\n') - 2));
  return std::string(line.substr(0, line.find_first_of(" \t")));
}

std::string NotFound(const std::string& path) {
  std::string interpreter = ShebangInterpreter(path);
  struct stat st {};
  if (!interpreter.empty() && stat(interpreter.c_str(), &st) != 0) {
    return fmt::format("{}: its interpreter {} (the #! line) does not exist", path, interpreter);
  }
  if (core::ReadFile(path, 4).value_or("") ==
      "\x7f"
      "ELF") {
    return fmt::format(
        "{}: {}: the file exists, so its ELF interpreter (the dynamic loader) is missing: "
        "a program built for another system",
        path, std::strerror(ENOENT));
  }
  return fmt::format("{}: {}", path, std::strerror(ENOENT));
}

std::string Denied(const std::string& path, const struct stat& st) {
  if (S_ISDIR(st.st_mode)) return fmt::format("{}: is a directory, not a program", path);
  if (!S_ISREG(st.st_mode)) return fmt::format("{}: {}: not a regular file", path, std::strerror(EACCES));
  if ((st.st_mode & 0111) == 0) {
    return fmt::format("{}: {}: the file has no execute permission (mode {:04o})", path, std::strerror(EACCES),
                       st.st_mode & 07777);
  }
  struct statvfs fs {};
  if (statvfs(path.c_str(), &fs) == 0 && (fs.f_flag & ST_NOEXEC)) {
    return fmt::format("{}: {}: its filesystem is mounted noexec", path, std::strerror(EACCES));
  }
  if (access(path.c_str(), X_OK) != 0) {
    return fmt::format("{}: {}: no execute permission for this user (mode {:04o}, owner uid {})", path,
                       std::strerror(EACCES), st.st_mode & 07777, st.st_uid);
  }
  return fmt::format("{}: {}", path, std::strerror(EACCES));
}

}  // namespace

std::string DescribeExecFailure(const std::string& command, int err) {
  std::optional<std::string> path = CommandPath(command);
  if (!path) return fmt::format("{}: command not found (not in PATH)", command);
  struct stat st {};
  if (stat(path->c_str(), &st) != 0) return fmt::format("{}: {}", *path, std::strerror(errno));
  if (err == ENOENT) return NotFound(*path);
  if (err == EACCES) return Denied(*path, st);
  if (err == ENOEXEC) {
    return fmt::format("{}: {}: not a program this system can run (no #! line, not an ELF file for this machine)",
                       *path, std::strerror(err));
  }
  return fmt::format("{}: {}", *path, std::strerror(err));
}

}  // namespace gputriage::forensics
