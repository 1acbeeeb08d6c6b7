// `libs --pid PID`: the shared objects a running process has loaded, in load order. The order is
// the loader's own list (r_debug.r_map, found through the executable's DT_DEBUG entry and read
// from /proc/PID/mem); where it cannot be read (another architecture, no permission to read the
// process's memory) the objects are listed in address order from /proc/PID/maps, and the report
// says so.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"

namespace gputriage::libs {

struct LoadedObject {
  std::string path;
  uint64_t base = 0;  ///< l_addr, or the first mapping's start
};

struct ProcessObjects {
  std::vector<LoadedObject> objects;
  bool load_order = false;  ///< from the loader's link map; false: address order from maps
  std::string note;         ///< why the link map was not used
};

/// Fails when /proc/PID/maps cannot be read (no such process, no permission).
core::Result<ProcessObjects> ReadProcessObjects(int pid, const std::string& proc_root = "/proc");

}  // namespace gputriage::libs
