// Why a job's command could not be executed, said the way a user can act on it: a directory is
// named as one, a file without execute permission shows its mode, a missing #! interpreter is
// named, not just execvp's errno ("Permission denied", "No such file or directory").
#pragma once

#include <optional>
#include <string>

namespace gputriage::forensics {

/// The file execvp tries for `command`: `command` itself when it has a '/', else the first $PATH
/// entry holding something of that name (glibc's default search path when PATH is unset);
/// nullopt when there is none.
std::optional<std::string> CommandPath(const std::string& command);

/// The message for `command` (argv[0] of the job, looked up in $PATH when it has no '/', as
/// execvp does) that failed to execute with `err`. Examples:
///   "train: command not found (not in PATH)"
///   "/data/run: is a directory, not a program"
///   "/data/run.sh: Permission denied: the file has no execute permission (mode 0644)"
///   "/data/run.sh: its interpreter /opt/py/bin/python (the #! line) does not exist"
/// Reads only the file's metadata and first line; never fails.
std::string DescribeExecFailure(const std::string& command, int err);

}  // namespace gputriage::forensics
