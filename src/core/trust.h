// What gputriage trusts when it reads a file that decides what it does (a config file) or runs a
// program it picked itself (a Python interpreter, a compiler's --version, the loader's --help):
// as sudo and ssh do, a file is trusted only when it, and every directory above it, is owned by
// root or by the user gputriage runs as, and writable by nobody else (a directory writable by
// others counts only with the sticky bit, which stops them from replacing what they do not own).
// Otherwise anyone who can write it chooses what root runs. The job given to `run` is the user's
// own choice and is not checked.
#pragma once

#include <string>

#include "core/result.h"

namespace gputriage::core {

/// OK when `path` (followed through symbolic links: the file they end at, and each directory on
/// the way to it) is owned by root or the effective user and not writable by group or others,
/// every directory above it likewise (or sticky). The error says which file or directory, its
/// owner and mode, and why that matters; `what` names the role ("config file", "program").
Result<void> CheckTrusted(const std::string& path, const std::string& what);

/// Where `name` is run from: itself when it has a '/', else the first executable regular file
/// named so in the directories of PATH (as execvp searches; an empty PATH entry is the current
/// directory). Fails naming `name` when there is none.
Result<std::string> FindProgram(const std::string& name);

/// For a program gputriage picked itself: its path (FindProgram), and, when gputriage runs as
/// root (effective uid 0), CheckTrusted of it; for a program in gputriage's own directory
/// (gputriage-probe) only the file is checked, its directories being those the user ran
/// gputriage from. A non-root user can only run what they could run anyway, so nothing is
/// refused for them.
Result<std::string> TrustedProgram(const std::string& name);

}  // namespace gputriage::core
