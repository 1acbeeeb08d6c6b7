#include "recorder/lib/writer.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gputriage::recorder {
namespace {

Header* g_header = nullptr;  // set once by the constructor, before any hook can run
Record* g_records = nullptr;
AllocSlot* g_allocs = nullptr;
ErrorSlot* g_errors = nullptr;
char* g_names = nullptr;
std::atomic<bool> g_off{true};
int32_t g_pid = 0;
thread_local int32_t t_tid = 0;

// Function handle -> interned name, process-local (handles mean nothing in another process).
constexpr uint32_t kFunctionSlots = 1u << 14;
struct FunctionSlot {
  std::atomic<uint64_t> handle;
  std::atomic<uint32_t> name;
};
FunctionSlot g_functions[kFunctionSlots];

int32_t Tid() {
  if (t_tid == 0) t_tid = static_cast<int32_t>(syscall(SYS_gettid));
  return t_tid;
}

void AfterFork() {
  g_pid = static_cast<int32_t>(getpid());
  t_tid = 0;
}

void CopyText(char* out, size_t size, std::string_view text) {
  size_t n = text.size() < size - 1 ? text.size() : size - 1;
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

void Warn(std::string_view what) {
  char line[320];
  int n = std::snprintf(line, sizeof line, "gputriage recorder (pid %d): %.*s\n", static_cast<int>(getpid()),
                        static_cast<int>(what.size()), what.data());
  if (n > 0) (void)!write(2, line, static_cast<size_t>(n) < sizeof line ? static_cast<size_t>(n) : sizeof line - 1);
}

void CountError(uint16_t api, int32_t result) {
  uint64_t key = ((uint64_t{api} << 32) | static_cast<uint32_t>(result)) + 1;
  uint32_t start = static_cast<uint32_t>((key * 0x9E3779B97F4A7C15ull) >> 40) % kErrorSlots;
  for (uint32_t i = 0; i < kErrorSlots; ++i) {
    ErrorSlot& slot = g_errors[(start + i) % kErrorSlots];
    uint64_t seen = slot.key.load(std::memory_order_acquire);
    if (seen == 0) {
      uint64_t expected = 0;
      if (slot.key.compare_exchange_strong(expected, key, std::memory_order_acq_rel))
        seen = key;
      else
        seen = expected;
    }
    if (seen == key) {
      slot.count.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  g_header->errors_dropped.fetch_add(1, std::memory_order_relaxed);
}

void AddAllocation(const Event& e) {
  if (e.ptr == 0) return;
  int bucket = e.size == 0 ? 0 : 63 - __builtin_clzll(e.size);
  g_header->alloc_size_log2[bucket].fetch_add(1, std::memory_order_relaxed);
  uint32_t start = AllocHash(e.ptr, kAllocSlots);
  // The address's own slot (an address used again), else an empty one, else a freed one.
  for (int pass = 0; pass < 3; ++pass) {
    for (uint32_t i = 0; i < kAllocProbe; ++i) {
      AllocSlot& slot = g_allocs[(start + i) % kAllocSlots];
      uint64_t addr = slot.addr.load(std::memory_order_acquire);
      uint32_t state = slot.state.load(std::memory_order_acquire);
      bool take = false;
      if (pass == 0) {
        take = addr == e.ptr && state != kSlotWriting &&
               slot.state.compare_exchange_strong(state, kSlotWriting, std::memory_order_acq_rel);
      } else if (pass == 1) {
        uint32_t empty = kSlotEmpty;
        take =
            state == kSlotEmpty && slot.state.compare_exchange_strong(empty, kSlotWriting, std::memory_order_acq_rel);
      } else {
        uint32_t freed = kSlotFreed;
        take =
            state == kSlotFreed && slot.state.compare_exchange_strong(freed, kSlotWriting, std::memory_order_acq_rel);
      }
      if (!take) continue;
      slot.addr.store(e.ptr, std::memory_order_relaxed);
      slot.api = static_cast<uint16_t>(e.api);
      slot.free_api = 0;
      slot.size = e.size;
      slot.t_alloc_ns = e.t_ns;
      slot.t_free_ns = 0;
      slot.state.store(kSlotLive, std::memory_order_release);
      return;
    }
  }
  g_header->allocs_dropped.fetch_add(1, std::memory_order_relaxed);
}

void MarkFreed(const Event& e) {
  if (e.ptr == 0) return;
  uint32_t start = AllocHash(e.ptr, kAllocSlots);
  for (uint32_t i = 0; i < kAllocProbe; ++i) {
    AllocSlot& slot = g_allocs[(start + i) % kAllocSlots];
    if (slot.addr.load(std::memory_order_acquire) != e.ptr) continue;
    uint32_t live = kSlotLive;
    if (!slot.state.compare_exchange_strong(live, kSlotWriting, std::memory_order_acq_rel)) continue;
    slot.free_api = static_cast<uint16_t>(e.api);
    slot.t_free_ns = e.t_ns;
    slot.state.store(kSlotFreed, std::memory_order_release);
    return;
  }
}

// Opens this process's ring file in $GPUTRIAGE_RECORD_DIR. Runs when the library is loaded,
// before the job's own code.
void Open() {
  const char* dir = std::getenv(kEnvDir);
  if (dir == nullptr || *dir == '\0') return;  // loaded without `run --record`: stay off, silently
  g_pid = static_cast<int32_t>(getpid());
  char path[4096];
  int n = std::snprintf(path, sizeof path, "%s/%s%d%s", dir, kFilePrefix, static_cast<int>(g_pid), kFileSuffix);
  if (n <= 0 || static_cast<size_t>(n) >= sizeof path) {
    Warn("off: the record directory's path is too long");
    return;
  }
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    char why[256];
    std::snprintf(why, sizeof why, "off: cannot create %.180s: %s", path, std::strerror(errno));
    Warn(why);
    return;
  }
  size_t bytes = FileBytes(kRecordSlots, kAllocSlots, kErrorSlots, kNameBytes);
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    Warn("off: cannot size the record file (disk full?)");
    close(fd);
    return;
  }
  void* map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) {
    Warn("off: cannot map the record file");
    return;
  }
  auto* base = static_cast<char*>(map);
  auto* h = reinterpret_cast<Header*>(base);
  std::memcpy(h->magic, kMagic, sizeof kMagic);
  h->version = kFormatVersion;
  h->header_bytes = static_cast<uint32_t>(kHeaderBytes);
  h->record_bytes = sizeof(Record);
  h->record_slots = kRecordSlots;
  h->alloc_bytes = sizeof(AllocSlot);
  h->alloc_slots = kAllocSlots;
  h->error_slots = kErrorSlots;
  h->name_bytes = kNameBytes;
  h->pid = g_pid;
  h->start_ns = NowNs();
  timespec wall{};
  clock_gettime(CLOCK_REALTIME, &wall);
  h->start_epoch_ns = static_cast<uint64_t>(wall.tv_sec) * 1000000000ull + static_cast<uint64_t>(wall.tv_nsec);
  ssize_t len = readlink("/proc/self/exe", h->exe, sizeof h->exe - 1);
  h->exe[len > 0 ? len : 0] = '\0';
  h->name_used.store(1, std::memory_order_relaxed);  // offset 0 stays "no name"
  g_records = reinterpret_cast<Record*>(base + RecordsOffset());
  g_allocs = reinterpret_cast<AllocSlot*>(base + AllocsOffset(kRecordSlots));
  g_errors = reinterpret_cast<ErrorSlot*>(base + ErrorsOffset(kRecordSlots, kAllocSlots));
  g_names = base + NamesOffset(kRecordSlots, kAllocSlots, kErrorSlots);
  g_header = h;
  pthread_atfork(nullptr, nullptr, AfterFork);
  g_off.store(false, std::memory_order_release);
}

__attribute__((constructor)) void OnLoad() { Open(); }

}  // namespace

Header* Active() { return g_off.load(std::memory_order_acquire) ? nullptr : g_header; }

uint64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void Emit(const Event& e) {
  Header* h = Active();
  if (h == nullptr) return;
  uint64_t index = h->next.fetch_add(1, std::memory_order_relaxed);
  Record& r = g_records[index % kRecordSlots];
  r.seq.store(0, std::memory_order_relaxed);  // torn until the store below
  std::atomic_thread_fence(std::memory_order_release);
  r.t_ns = e.t_ns;
  r.dur_ns = e.dur_ns;
  r.pid = g_pid;
  r.tid = Tid();
  r.api = static_cast<uint16_t>(e.api);
  r.flags = e.flags;
  r.result = e.result;
  r.name = e.name;
  r.shmem = e.shmem;
  r.ptr = e.ptr;
  r.ptr2 = e.ptr2;
  r.size = e.size;
  r.stream = e.stream;
  std::memcpy(r.grid, e.grid, sizeof r.grid);
  std::memcpy(r.block, e.block, sizeof r.block);
  r.aux = e.aux;
  r.seq.store(index + 1, std::memory_order_release);
  if (e.flags & kFlagPending) return;
  h->calls.fetch_add(1, std::memory_order_relaxed);
  ApiKind kind = DescribeApi(static_cast<uint16_t>(e.api)).kind;
  if (kind == ApiKind::kLaunch) h->launches.fetch_add(1, std::memory_order_relaxed);
  if (e.result != 0) {
    h->failed_calls.fetch_add(1, std::memory_order_relaxed);
    CountError(static_cast<uint16_t>(e.api), e.result);
    return;
  }
  if (kind == ApiKind::kAlloc) AddAllocation(e);
  if (kind == ApiKind::kFree) MarkFreed(e);
}

uint32_t InternName(std::string_view text) {
  Header* h = Active();
  if (h == nullptr) return 0;
  uint64_t need = text.size() + 1;
  uint64_t at = h->name_used.fetch_add(need, std::memory_order_relaxed);
  if (at + need > kNameBytes) {
    h->names_dropped.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  std::memcpy(g_names + at, text.data(), text.size());
  g_names[at + text.size()] = '\0';
  return static_cast<uint32_t>(at + 1);
}

uint32_t FunctionName(uint64_t handle) {
  if (handle == 0) return 0;
  uint32_t start = static_cast<uint32_t>((handle * 0x9E3779B97F4A7C15ull) >> 40) % kFunctionSlots;
  for (uint32_t i = 0; i < 32; ++i) {
    FunctionSlot& slot = g_functions[(start + i) % kFunctionSlots];
    uint64_t seen = slot.handle.load(std::memory_order_acquire);
    if (seen == 0) return 0;
    if (seen == handle) return slot.name.load(std::memory_order_acquire);
  }
  return 0;
}

void RememberFunctionName(uint64_t handle, uint32_t name) {
  if (handle == 0 || name == 0) return;
  uint32_t start = static_cast<uint32_t>((handle * 0x9E3779B97F4A7C15ull) >> 40) % kFunctionSlots;
  for (uint32_t i = 0; i < 32; ++i) {
    FunctionSlot& slot = g_functions[(start + i) % kFunctionSlots];
    uint64_t expected = 0;
    if (slot.handle.compare_exchange_strong(expected, handle, std::memory_order_acq_rel) || expected == handle) {
      slot.name.store(name, std::memory_order_release);
      return;
    }
  }
}

uint32_t InternSymbol(const char* mangled) {
  if (mangled == nullptr || Active() == nullptr) return 0;
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  uint32_t name = InternName(status == 0 && demangled ? demangled : mangled);
  std::free(demangled);
  return name;
}

void SetHook(uint32_t hook_bit) {
  if (Header* h = Active()) h->hooks.fetch_or(hook_bit, std::memory_order_relaxed);
}

void Disable(std::string_view reason) {
  Header* h = Active();
  if (h == nullptr) return;
  uint32_t expected = 0;
  if (h->disabled.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    CopyText(h->disabled_reason, sizeof h->disabled_reason, reason);
    char line[kReasonBytes + 8];
    std::snprintf(line, sizeof line, "off: %.*s", static_cast<int>(reason.size()), reason.data());
    Warn(line);
  }
  g_off.store(true, std::memory_order_release);
}

void Note(std::string_view note) {
  Header* h = Active();
  if (h == nullptr || h->note[0] != '\0') return;
  CopyText(h->note, sizeof h->note, note);
}

}  // namespace gputriage::recorder
