// Where gputriage keeps its state (the snapshot database): one directory per user, chosen from
// the environment the XDG way.
#pragma once

#include <optional>
#include <string>

#include "core/result.h"

namespace gputriage::store {

/// The environment variables that choose the data home; nullopt (or "") means unset.
struct DataHomeEnv {
  std::optional<std::string> gputriage_home;  // $GPUTRIAGE_HOME
  std::optional<std::string> xdg_data_home;   // $XDG_DATA_HOME
  std::optional<std::string> home;            // $HOME
};

/// The data home `env` selects, without touching the file system: $GPUTRIAGE_HOME, else
/// $XDG_DATA_HOME/gputriage (only when absolute, as the XDG spec requires), else
/// $HOME/.local/share/gputriage. nullopt when none of them is usable.
std::optional<std::string> ChooseDataHome(const DataHomeEnv& env);

/// The process's data home (ChooseDataHome over the real environment, falling back to the
/// password database's home directory when $HOME is unset), created like `mkdir -p` with mode
/// 0700 for each directory it creates; existing directories keep their mode. Fails with a
/// message naming the directory when it cannot be created or is not a directory.
core::Result<std::string> DataHome();

/// DataHome()/snapshots.db: the default snapshot database.
core::Result<std::string> DefaultDatabasePath();

/// Where the default snapshot database is, without creating anything (for commands that only
/// read it). Fails as DataHome does when no data home can be chosen.
core::Result<std::string> LocateDefaultDatabase();

}  // namespace gputriage::store
