// Private to src/recorder/lib
// The recorder's writing side, inside the job (libgputriage-record.so): the process's ring file,
// opened when the library loads, and the lock-free operations the hooks use. Nothing here takes
// a lock or allocates on the path of a call; the first failure switches the recorder off with
// one warning on stderr and the job goes on unchanged.
#pragma once

#include <cstdint>
#include <string_view>

#include "recorder/ring_format.h"

namespace gputriage::recorder {

/// A call as a hook saw it (Record without its sequence number).
struct Event {
  Api api = Api::kUnknown;
  uint16_t flags = 0;
  int32_t result = 0;
  uint64_t t_ns = 0;
  uint64_t dur_ns = 0;
  uint32_t name = 0;
  uint32_t shmem = 0;
  uint64_t ptr = 0, ptr2 = 0, size = 0, stream = 0;
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
  uint32_t aux = 0;
};

/// The mapped header, or null when the recorder is off (not asked for, or switched off).
Header* Active();

/// CLOCK_MONOTONIC in nanoseconds.
uint64_t NowNs();

/// Appends one call; counts failures by (api, result) and keeps the allocation table current
/// (an alloc that succeeded adds `ptr`/`size`, a free that succeeded marks `ptr` freed).
void Emit(const Event& event);

/// Interns `text` in the name area; 0 when the area is full (counted) or the recorder is off.
uint32_t InternName(std::string_view text);

/// The name of a function handle or kernel stub seen before (0: unknown), and remembering one.
/// A fixed lock-free table: when it is full, names are interned again on each use.
uint32_t FunctionName(uint64_t handle);
void RememberFunctionName(uint64_t handle, uint32_t name);

/// Demangles a C++ symbol (as written in the code object) and interns the result; the mangled
/// text itself when it does not demangle. Allocates: not for signal context.
uint32_t InternSymbol(const char* mangled);

/// Marks a hook family active in the header.
void SetHook(uint32_t hook_bit);

/// Switches the recorder off for this process with one line on stderr; later calls pass
/// straight through.
void Disable(std::string_view reason);

/// Adds a note for the reader (e.g. which CUPTI library was loaded). Keeps the first one.
void Note(std::string_view note);

}  // namespace gputriage::recorder
