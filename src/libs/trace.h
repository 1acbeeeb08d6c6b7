// `libs --trace -- CMD`: runs the command with LD_AUDIT=libgputriage-audit.so and reads what the
// loader reported: every name it searched for and every path it tried (la_objsearch, with where
// the path came from: LD_LIBRARY_PATH, RUNPATH/RPATH, ld.so.cache, the default directories), and
// every object it opened (la_objopen), those opened later by dlopen included. Child processes
// inherit LD_AUDIT and are traced too.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/libs.h"
#include "core/result.h"

namespace gputriage::libs {

/// Parses the audit library's lines; malformed lines are counted in `*malformed`, not fatal.
std::vector<core::LoaderEvent> ParseAuditTrace(std::string_view text, size_t* malformed = nullptr);

struct TraceResult {
  std::vector<core::LoaderEvent> events;
  int exit_status = 0;  ///< the command's (128 + signal when killed)
  size_t malformed = 0;
};

/// Runs `command` (stdio inherited) with the audit library and waits for it.
/// A trace larger than `max_trace_bytes` is an error that says so.
core::Result<TraceResult> TraceCommand(const std::vector<std::string>& command, const std::string& audit_library,
                                       size_t max_trace_bytes = 256u << 20);

}  // namespace gputriage::libs
