#include "forensics/gpu_record.h"

#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <re2/re2.h>

#include "core/fs.h"
#include "core/scoped_fd.h"
#include "forensics/exec_failure.h"
#include "forensics/torch_snapshot.h"
#include "recorder/ring_format.h"

namespace gputriage::forensics {
namespace {

namespace rec = gputriage::recorder;

constexpr uint32_t kMaxSlots = 1u << 22;
constexpr uint32_t kMaxNameBytes = 64u << 20;

std::string Hex(uint64_t v) { return fmt::format("{:#x}", v); }

std::string Vendor(std::string_view api) { return std::string(ApiVendor(api)); }

std::optional<std::string> ResultName(const catalog::ErrorCodes& errors, std::string_view api, int64_t result) {
  if (result == 0) return std::nullopt;
  std::string vendor = Vendor(api);
  const catalog::ErrorCode* code = errors.FindByValue(vendor, static_cast<int>(result));
  if (code == nullptr) return std::nullopt;
  // cu* calls return CUresult: its own name when the table has one.
  if (vendor == "cuda" && !code->driver_name.empty()) return code->driver_name;
  if (vendor == "cuda") return std::nullopt;
  return code->name;
}

// The file's bytes and its header, validated.
struct Mapped {
  const char* base = nullptr;
  size_t bytes = 0;
  const rec::Header* header = nullptr;
};

// A mapping of the file, unmapped when done.
struct Mapping {
  const char* base;
  size_t bytes;
  ~Mapping() { munmap(const_cast<char*>(base), bytes); }
};

std::string NameAt(const Mapped& m, uint32_t name) {
  const rec::Header& h = *m.header;
  if (name == 0 || name - 1 >= h.name_bytes) return "";
  const char* names = m.base + rec::NamesOffset(h.record_slots, h.alloc_slots, h.error_slots);
  size_t at = name - 1;
  const void* end = std::memchr(names + at, '\0', h.name_bytes - at);
  if (end == nullptr) return "";
  return std::string(names + at, static_cast<const char*>(end) - (names + at));
}

// A graph's kernels, stored one per line under its instantiation and launches.
std::vector<std::string> GraphKernelNames(const Mapped& m, uint32_t name) {
  std::vector<std::string> out;
  std::string all = NameAt(m, name);
  size_t at = 0;
  while (at < all.size()) {
    size_t nl = all.find('\n', at);
    out.push_back(all.substr(at, nl == std::string::npos ? std::string::npos : nl - at));
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  return out;
}

std::string GraphLabel(const std::vector<std::string>& kernels) {
  std::string label = fmt::format("CUDA graph of {} kernel{}: ", kernels.size(), kernels.size() == 1 ? "" : "s");
  for (size_t i = 0; i < kernels.size() && i < 3; ++i) label += (i ? "; " : "") + kernels[i];
  if (kernels.size() > 3) label += "; ...";
  return label;
}

std::string SizeBucket(int log2) {
  return fmt::format("{}-{}", HumanBytes(uint64_t{1} << log2), log2 >= 63 ? "" : HumanBytes(uint64_t{1} << (log2 + 1)));
}

core::GpuCall CallOf(const Mapped& m, const rec::Record& r, const catalog::ErrorCodes& errors) {
  const rec::Header& h = *m.header;
  rec::ApiInfo info = rec::DescribeApi(r.api);
  core::GpuCall c;
  c.api = info.name;
  c.result = r.result;
  c.result_name = ResultName(errors, c.api, r.result);
  c.pid = r.pid;
  c.tid = r.tid;
  c.t_ms = r.t_ns >= h.start_ns ? static_cast<double>(r.t_ns - h.start_ns) / 1e6 : 0;
  c.duration_us = static_cast<double>(r.dur_ns) / 1e3;
  switch (info.kind) {
    case rec::ApiKind::kLaunch: {
      std::string name = NameAt(m, r.name);
      c.kernel = name.empty() ? fmt::format("(function {})", Hex(r.ptr)) : name;
      c.grid = std::vector<int64_t>{r.grid[0], r.grid[1], r.grid[2]};
      c.block = std::vector<int64_t>{r.block[0], r.block[1], r.block[2]};
      c.shared_mem_bytes = r.shmem;
      c.stream = Hex(r.stream);
      break;
    }
    case rec::ApiKind::kAlloc:
    case rec::ApiKind::kFree:
      c.address = Hex(r.ptr);
      if (info.kind == rec::ApiKind::kAlloc) c.bytes = static_cast<int64_t>(r.size);
      if (r.stream != 0) c.stream = Hex(r.stream);
      break;
    case rec::ApiKind::kCopy:
      c.address = Hex(r.ptr);
      c.source = Hex(r.ptr2);
      c.bytes = static_cast<int64_t>(r.size);
      c.stream = Hex(r.stream);
      break;
    case rec::ApiKind::kSet:
      c.address = Hex(r.ptr);
      c.bytes = static_cast<int64_t>(r.size);
      c.stream = Hex(r.stream);
      break;
    case rec::ApiKind::kSync:
      c.stream = Hex(r.stream);
      break;
    case rec::ApiKind::kGraph:
      c.stream = Hex(r.stream);
      if (std::vector<std::string> kernels = GraphKernelNames(m, r.name); !kernels.empty()) {
        c.kernel = GraphLabel(kernels);
        c.graph_kernels = std::move(kernels);
      }
      break;
    case rec::ApiKind::kModule: {
      std::string name = NameAt(m, r.name);
      if (!name.empty()) c.module = name;
      break;
    }
    case rec::ApiKind::kOther:
      if (r.api == static_cast<uint16_t>(rec::Api::cuDriverCall)) {  // a failure of another entry point
        if (std::string name = NameAt(m, r.name); !name.empty()) c.api = name;
        c.result_name = ResultName(errors, c.api, r.result);
        break;
      }
      if (r.api == static_cast<uint16_t>(rec::Api::cuModuleGetFunction) ||
          r.api == static_cast<uint16_t>(rec::Api::cuLibraryGetKernel) ||
          r.api == static_cast<uint16_t>(rec::Api::cuFuncSetAttribute)) {  // the kernel of a failed lookup
        if (std::string name = NameAt(m, r.name); !name.empty()) c.kernel = name;
        break;
      }
      if (std::vector<std::string> kernels = GraphKernelNames(m, r.name); !kernels.empty()) {
        c.graph_kernels = std::move(kernels);  // a graph's instantiation
      }
      if (r.grid[0] != 0) {  // a launch's configuration (__hipPushCallConfiguration)
        c.grid = std::vector<int64_t>{r.grid[0], r.grid[1], r.grid[2]};
        c.block = std::vector<int64_t>{r.block[0], r.block[1], r.block[2]};
        c.shared_mem_bytes = r.shmem;
        c.stream = Hex(r.stream);
      }
      break;
  }
  return c;
}

// The launches in flight: since the last successful synchronisation that covers them, up to the
// first call that reported a sticky (context-killing) error — the kernels that could have
// faulted. A device/context synchronisation covers every stream; a stream's, that stream.
struct Flight {
  std::vector<core::GpuCall> launches;
  bool frozen = false;
};

void Track(Flight& flight, const core::GpuCall& c, rec::ApiKind kind, const catalog::ErrorCodes& errors) {
  if (flight.frozen) return;
  if (c.result != 0 && IsStickyError(errors, c.api, c.result)) {
    flight.frozen = true;
    return;
  }
  if ((kind == rec::ApiKind::kLaunch || kind == rec::ApiKind::kGraph) && c.result == 0) {
    flight.launches.push_back(c);
  } else if (kind == rec::ApiKind::kSync && c.result == 0) {
    bool whole_device =
        c.api == "hipDeviceSynchronize" || c.api == "cuCtxSynchronize" || c.api == "cuCtxSynchronize_v2";
    bool stream_sync = c.api.find("StreamSynchronize") != std::string::npos;
    if (whole_device) {
      flight.launches.clear();
    } else if (stream_sync) {
      std::erase_if(flight.launches, [&](const core::GpuCall& l) { return l.stream == c.stream; });
    }
  }
}

}  // namespace

RecordSession::~RecordSession() {
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void RecordSession::Start(const std::string& library, const std::string& parent, const std::string& tag) {
  if (library.empty() || ::access(library.c_str(), R_OK) != 0) {
    not_possible_ = fmt::format("the recorder library {} is missing (install gputriage with its lib/ directory)",
                                library.empty() ? "libgputriage-record.so" : library);
    return;
  }
  if (auto made = core::MakeDirectories(parent, 0700); !made.ok()) {
    not_possible_ = fmt::format("{}: cannot create the bundle directory ({})", parent, made.error().message);
    return;
  }
  std::string pattern = parent + "/.record.partial-" + tag + "_XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    not_possible_ = fmt::format("{}: cannot create the record directory: {}", parent, std::strerror(errno));
    return;
  }
  dir_ = pattern;
  env_.push_back(std::string(rec::kEnvDir) + "=" + dir_);
  const char* preload = std::getenv("LD_PRELOAD");
  env_.push_back("LD_PRELOAD=" + library + (preload && *preload ? std::string(":") + preload : ""));
  if (const char* injection = std::getenv("CUDA_INJECTION64_PATH"); injection && *injection) {
    notes_.push_back(fmt::format(
        "CUDA calls: CUDA_INJECTION64_PATH is already set ({}); the recorder did not replace it", injection));
  } else {
    env_.push_back("CUDA_INJECTION64_PATH=" + library);
    if (std::optional<std::string> cupti = FindCupti()) env_.push_back(std::string(rec::kEnvCupti) + "=" + *cupti);
  }
}

core::GpuCalls RecordSession::Read(const catalog::ErrorCodes& errors, const std::string& command) const {
  core::GpuCalls calls = ReadGpuRecordDir(dir_, errors);
  if (calls.processes.empty() && !calls.not_recorded.empty()) {
    calls.not_recorded.back().reason = WhyNothingWasRecorded(CommandPath(command).value_or(""));
  }
  for (const std::string& note : notes_) calls.not_recorded.push_back({"gpu calls", note});
  return calls;
}

bool IsStickyError(const catalog::ErrorCodes& errors, std::string_view api, int64_t result) {
  const catalog::ErrorCode* code = errors.FindByValue(ApiVendor(api), static_cast<int>(result));
  return code != nullptr && code->sticky;
}

std::string_view ApiVendor(std::string_view api) {
  while (!api.empty() && api.front() == '_') api.remove_prefix(1);
  return api.substr(0, 3) == "hip" ? "hip" : "cuda";
}

std::optional<std::string> FindCupti() {
  if (const char* set = std::getenv("GPUTRIAGE_CUPTI"); set && *set) return std::string(set);
  std::vector<std::string> roots;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* v = std::getenv(var); v && *v) roots.emplace_back(v);
  }
  roots.emplace_back("/usr/local/cuda");
  std::vector<std::string> patterns;
  for (const std::string& root : roots) {
    for (const char* sub : {"/extras/CUPTI/lib64", "/lib64", "/lib", "/targets/x86_64-linux/lib"}) {
      patterns.push_back(root + sub + "/libcupti.so*");
    }
  }
  patterns.emplace_back("/usr/lib/x86_64-linux-gnu/libcupti.so*");
  for (const std::string& pattern : patterns) {
    glob_t g{};
    if (glob(pattern.c_str(), 0, nullptr, &g) == 0 && g.gl_pathc > 0) {
      std::string found = g.gl_pathv[0];  // sorted: "libcupti.so" before its versioned names
      globfree(&g);
      return found;
    }
    globfree(&g);
  }
  return std::nullopt;
}

std::string HumanBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 6) value /= 1024, ++unit;
  if (unit == 0) return fmt::format("{} B", bytes);
  return value == static_cast<double>(static_cast<uint64_t>(value))
             ? fmt::format("{} {}", static_cast<uint64_t>(value), kUnits[unit])
             : fmt::format("{:.1f} {}", value, kUnits[unit]);
}

core::Result<core::GpuCalls> ReadGpuRecordFile(const std::string& path, const catalog::ErrorCodes& errors,
                                               const GpuRecordLimits& limits) {
  core::ScopedFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) return core::MakeError("{}: {}", path, std::strerror(errno));
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return core::MakeError("{}: {}", path, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return core::MakeError("{}: not a regular file", path);
  if (static_cast<size_t>(st.st_size) < rec::kHeaderBytes) {
    return core::MakeError("{}: {} bytes, shorter than a record header ({}): not a recorder file or cut short", path,
                           st.st_size, rec::kHeaderBytes);
  }
  size_t bytes = static_cast<size_t>(st.st_size);
  void* map = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (map == MAP_FAILED) return core::MakeError("{}: cannot map: {}", path, std::strerror(errno));
  Mapping mapping{static_cast<const char*>(map), bytes};
  return ParseGpuRecord(std::string_view(mapping.base, mapping.bytes), path, errors, limits);
}

core::Result<core::GpuCalls> ParseGpuRecord(std::string_view file, const std::string& path,
                                            const catalog::ErrorCodes& errors, const GpuRecordLimits& limits) {
  if (file.size() < rec::kHeaderBytes) {
    return core::MakeError("{}: {} bytes, shorter than a record header ({}): not a recorder file or cut short", path,
                           file.size(), rec::kHeaderBytes);
  }
  if (reinterpret_cast<uintptr_t>(file.data()) % alignof(uint64_t) != 0) {
    return core::MakeError("{}: the record is not 8-byte aligned in memory", path);
  }
  Mapped m;
  m.bytes = file.size();
  m.base = file.data();
  m.header = reinterpret_cast<const rec::Header*>(m.base);
  const rec::Header& h = *m.header;
  if (std::memcmp(h.magic, rec::kMagic, sizeof rec::kMagic) != 0)
    return core::MakeError("{}: not a gputriage record file (bad magic)", path);
  if (h.version != rec::kFormatVersion) {
    return core::MakeError("{}: record format version {}, this gputriage reads version {}", path, h.version,
                           rec::kFormatVersion);
  }
  if (h.header_bytes != rec::kHeaderBytes || h.record_bytes != sizeof(rec::Record) ||
      h.alloc_bytes != sizeof(rec::AllocSlot) || h.record_slots == 0 || h.record_slots > kMaxSlots ||
      h.alloc_slots == 0 || h.alloc_slots > kMaxSlots || h.error_slots == 0 || h.error_slots > kMaxSlots ||
      h.name_bytes > kMaxNameBytes) {
    return core::MakeError("{}: the header's sizes are not this version's: a damaged record file", path);
  }
  size_t need = rec::FileBytes(h.record_slots, h.alloc_slots, h.error_slots, h.name_bytes);
  if (m.bytes < need) return core::MakeError("{}: {} bytes, the header needs {}: cut short", path, m.bytes, need);

  core::GpuCalls out;
  core::GpuRecordedProcess proc;
  proc.pid = h.pid;
  proc.exe = std::string(h.exe, strnlen(h.exe, sizeof h.exe));
  uint32_t hooks = h.hooks.load();
  if (hooks & rec::kHookHip) proc.hooks.push_back("hip");
  if (hooks & rec::kHookCupti) proc.hooks.push_back("cupti");
  proc.calls = static_cast<int64_t>(h.calls.load());
  proc.launches = static_cast<int64_t>(h.launches.load());
  proc.failed_calls = static_cast<int64_t>(h.failed_calls.load());
  proc.allocations_not_tracked = static_cast<int64_t>(h.allocs_dropped.load());
  if (h.disabled.load() != 0)
    proc.switched_off = std::string(h.disabled_reason, strnlen(h.disabled_reason, sizeof h.disabled_reason));
  if (h.note[0] != '\0') proc.note = std::string(h.note, strnlen(h.note, sizeof h.note));

  // Calls, oldest first; pending synchronisations matched with their end by (tid, api, start).
  const auto* records = reinterpret_cast<const rec::Record*>(m.base + rec::RecordsOffset());
  uint64_t next = h.next.load();
  uint64_t first = next > h.record_slots ? next - h.record_slots : 0;
  std::vector<core::GpuCall> calls;
  std::map<std::tuple<int32_t, uint16_t, uint64_t>, core::GpuCall> pending;
  Flight flight;
  for (uint64_t i = first; i < next; ++i) {
    const rec::Record& r = records[i % h.record_slots];
    if (r.seq.load(std::memory_order_acquire) != i + 1) continue;  // torn or overwritten
    core::GpuCall c = CallOf(m, r, errors);
    if (r.flags & rec::kFlagPending) {
      c.in_progress = true;
      pending[{r.tid, r.api, r.t_ns}] = std::move(c);
      continue;
    }
    pending.erase({r.tid, r.api, r.t_ns});
    Track(flight, c, rec::DescribeApi(r.api).kind, errors);
    calls.push_back(std::move(c));
  }
  proc.calls_kept = static_cast<int64_t>(calls.size());
  for (auto& [key, c] : pending) out.in_progress.push_back(std::move(c));
  std::reverse(flight.launches.begin(), flight.launches.end());
  if (flight.launches.size() > limits.max_candidates) flight.launches.resize(limits.max_candidates);
  out.candidates = std::move(flight.launches);
  if (calls.size() > limits.max_calls) {
    out.not_recorded.push_back(
        {"calls", fmt::format("pid {}: the newest {} of the {} calls kept are written to gpu_calls.json", h.pid,
                              limits.max_calls, calls.size())});
    calls.erase(calls.begin(), calls.end() - static_cast<ptrdiff_t>(limits.max_calls));
  }
  out.calls = std::move(calls);

  // Failed calls by (api, result).
  const auto* error_slots =
      reinterpret_cast<const rec::ErrorSlot*>(m.base + rec::ErrorsOffset(h.record_slots, h.alloc_slots));
  for (uint32_t i = 0; i < h.error_slots; ++i) {
    uint64_t key = error_slots[i].key.load();
    if (key == 0) continue;
    key -= 1;
    core::GpuErrorCount e;
    e.api = rec::DescribeApi(static_cast<uint16_t>(key >> 32)).name;
    e.result = static_cast<int32_t>(static_cast<uint32_t>(key));
    e.result_name = ResultName(errors, e.api, e.result);
    e.count = static_cast<int64_t>(error_slots[i].count.load());
    out.errors.push_back(std::move(e));
  }
  std::sort(out.errors.begin(), out.errors.end(), [](const auto& a, const auto& b) { return a.count > b.count; });
  if (uint64_t lost = h.errors_dropped.load(); lost > 0) {
    out.not_recorded.push_back(
        {"error counts",
         fmt::format("{} failed calls of kinds beyond the table's {} were not counted by code", lost, h.error_slots)});
  }

  // The allocation table.
  const auto* allocs = reinterpret_cast<const rec::AllocSlot*>(m.base + rec::AllocsOffset(h.record_slots));
  std::vector<core::GpuAllocation> live, freed;
  for (uint32_t i = 0; i < h.alloc_slots; ++i) {
    const rec::AllocSlot& s = allocs[i];
    uint32_t state = s.state.load();
    if (state != rec::kSlotLive && state != rec::kSlotFreed) continue;
    core::GpuAllocation a;
    a.address = Hex(s.addr.load());
    a.bytes = static_cast<int64_t>(s.size);
    a.api = rec::DescribeApi(s.api).name;
    a.state = state == rec::kSlotLive ? "live" : "freed";
    a.pid = h.pid;
    a.allocated_ms = s.t_alloc_ns >= h.start_ns ? static_cast<double>(s.t_alloc_ns - h.start_ns) / 1e6 : 0;
    if (state == rec::kSlotFreed)
      a.freed_ms = s.t_free_ns >= h.start_ns ? static_cast<double>(s.t_free_ns - h.start_ns) / 1e6 : 0;
    (state == rec::kSlotLive ? live : freed).push_back(std::move(a));
  }
  auto by_address = [](const core::GpuAllocation& a, const core::GpuAllocation& b) {
    return std::stoull(a.address, nullptr, 16) < std::stoull(b.address, nullptr, 16);
  };
  std::sort(live.begin(), live.end(), by_address);
  std::sort(freed.begin(), freed.end(), [](const auto& a, const auto& b) { return a.freed_ms > b.freed_ms; });
  out.allocations = std::move(live);
  for (auto& f : freed) out.allocations.push_back(std::move(f));
  if (out.allocations.size() > limits.max_allocations) out.allocations.resize(limits.max_allocations);
  for (int b = 0; b < 64; ++b) {
    if (uint64_t n = h.alloc_size_log2[b].load(); n > 0) out.allocation_sizes[SizeBucket(b)] += static_cast<int64_t>(n);
  }
  if (proc.allocations_not_tracked > 0) {
    out.not_recorded.push_back(
        {"allocations", fmt::format("pid {}: {} allocations found the table full and are not in it", h.pid,
                                    proc.allocations_not_tracked)});
  }
  if (uint64_t lost = h.names_dropped.load(); lost > 0) {
    out.not_recorded.push_back(
        {"kernel names", fmt::format("pid {}: the name area was full; {} names were not kept", h.pid, lost)});
  }
  if (proc.calls > proc.calls_kept + static_cast<int64_t>(out.in_progress.size())) {
    out.not_recorded.push_back(
        {"calls", fmt::format("pid {}: {} calls, the newest {} kept", h.pid, proc.calls, proc.calls_kept)});
  }
  out.processes.push_back(std::move(proc));
  return out;
}

std::string WhyNothingWasRecorded(const std::string& executable) {
  const std::string generic =
      "no process of the job loaded the recorder: a static or 32-bit executable, a job that clears "
      "LD_PRELOAD, or a job that never started";
  if (executable.empty()) return generic;
  core::ScopedFd fd(::open(executable.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return generic;
  unsigned char ident[64] = {};
  ssize_t n = ::pread(fd.get(), ident, sizeof ident, 0);
  if (n < 64 || std::memcmp(ident,
                            "\x7f"
                            "ELF",
                            4) != 0)
    return generic;
  if (ident[4] == 1) {
    return fmt::format("{} is a 32-bit program: the recorder is a 64-bit library and cannot be loaded into it",
                       executable);
  }
  if (ident[4] != 2) return generic;
  // A 64-bit ELF: dynamic when one of its program headers is PT_INTERP (the loader).
  uint64_t phoff = 0;
  uint16_t phentsize = 0, phnum = 0;
  std::memcpy(&phoff, ident + 32, 8);
  std::memcpy(&phentsize, ident + 54, 2);
  std::memcpy(&phnum, ident + 56, 2);
  if (phentsize < 4 || phnum == 0 || phnum > 512) return generic;
  for (uint16_t i = 0; i < phnum; ++i) {
    uint32_t type = 0;
    if (::pread(fd.get(), &type, 4, static_cast<off_t>(phoff + uint64_t{i} * phentsize)) != 4) return generic;
    if (type == 3) return generic;  // PT_INTERP: dynamic, so something else kept the recorder out
  }
  return fmt::format(
      "{} is statically linked: the dynamic loader never runs, so LD_PRELOAD cannot load the "
      "recorder into it",
      executable);
}

core::GpuCalls ReadGpuRecordDir(const std::string& dir, const catalog::ErrorCodes& errors,
                                const GpuRecordLimits& limits) {
  core::GpuCalls out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    out.not_recorded.push_back({"gpu calls", fmt::format("{}: {}", dir, std::strerror(errno))});
    return out;
  }
  std::vector<std::string> files;
  while (dirent* e = readdir(d)) {
    std::string_view name = e->d_name;
    if (name.starts_with(rec::kFilePrefix) && name.ends_with(rec::kFileSuffix))
      files.push_back(dir + "/" + std::string(name));
  }
  closedir(d);
  std::sort(files.begin(), files.end());
  for (const std::string& file : files) {
    auto one = ReadGpuRecordFile(file, errors, limits);
    if (!one.ok()) {
      out.not_recorded.push_back({"gpu calls", one.error().message});
      continue;
    }
    auto append = [](auto& to, auto& from) { to.insert(to.end(), from.begin(), from.end()); };
    append(out.processes, one->processes);
    append(out.calls, one->calls);
    append(out.candidates, one->candidates);
    append(out.in_progress, one->in_progress);
    append(out.errors, one->errors);
    append(out.allocations, one->allocations);
    for (const auto& [bucket, n] : one->allocation_sizes) out.allocation_sizes[bucket] += n;
    append(out.not_recorded, one->not_recorded);
  }
  if (files.empty()) {
    out.not_recorded.push_back({"gpu calls", WhyNothingWasRecorded("")});
  }
  if (files.size() > 1) {
    // Across processes, time is each process's own; keep each process's order, newest last.
    std::stable_sort(out.calls.begin(), out.calls.end(), [](const auto& a, const auto& b) { return a.pid < b.pid; });
  }
  return out;
}

std::vector<uint64_t> FaultAddresses(const std::vector<CorrelatedRecord>& records) {
  // NVIDIA: "MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f2a_3c000000."; amdgpu: "in
  // page starting at address 0x00007f2a3c000000 from client".
  static const re2::RE2 kNvidia(R"(faulted @ 0x([0-9a-fA-F_]+))");
  static const re2::RE2 kAmd(R"(at address 0x([0-9a-fA-F]+))");
  std::vector<uint64_t> out;
  for (const CorrelatedRecord& r : records) {
    if (r.other_process) continue;
    std::string hex;
    if (!re2::RE2::PartialMatch(r.record.message, kNvidia, &hex) &&
        !re2::RE2::PartialMatch(r.record.message, kAmd, &hex))
      continue;
    std::erase(hex, '_');
    if (hex.empty() || hex.size() > 16) continue;
    uint64_t address = std::stoull(hex, nullptr, 16);
    if (std::find(out.begin(), out.end(), address) == out.end()) out.push_back(address);
  }
  return out;
}

core::GpuAddressAttribution AttributeAddress(const core::GpuCalls& calls, uint64_t address) {
  constexpr uint64_t kNear = 1u << 20;
  core::GpuAddressAttribution out;
  out.address = Hex(address);
  const core::GpuAllocation* inside_live = nullptr;
  const core::GpuAllocation* inside_freed = nullptr;
  const core::GpuAllocation* below = nullptr;  // the nearest ending at or before the address
  const core::GpuAllocation* above = nullptr;  // the nearest starting after it
  uint64_t below_gap = UINT64_MAX, above_gap = UINT64_MAX;
  for (const core::GpuAllocation& a : calls.allocations) {
    uint64_t start = std::stoull(a.address, nullptr, 16);
    uint64_t end = start + static_cast<uint64_t>(a.bytes);
    if (address >= start && address < end) {
      if (a.state == "live" && inside_live == nullptr) inside_live = &a;
      if (a.state != "live" && inside_freed == nullptr) inside_freed = &a;
      continue;
    }
    if (a.state != "live") continue;
    if (end <= address && address - end < below_gap) below_gap = address - end, below = &a;
    if (start > address && start - address < above_gap) above_gap = start - address, above = &a;
  }
  auto describe = [](const core::GpuAllocation& a) {
    return fmt::format("{} buffer allocated by {} at {} (pid {}, {:.1f} ms after start)",
                       HumanBytes(static_cast<uint64_t>(a.bytes)), a.api, a.address, a.pid, a.allocated_ms);
  };
  if (inside_live != nullptr) {
    uint64_t offset = address - std::stoull(inside_live->address, nullptr, 16);
    out.relation = "inside", out.allocation = *inside_live, out.offset = static_cast<int64_t>(offset);
    out.summary = fmt::format("{} bytes into a live {}", offset, describe(*inside_live));
    // A caching allocator (PyTorch's takes segments of 2 MiB and more from the driver and places
    // tensors inside them) hides an overrun of one tensor into its neighbour.
    if (inside_live->bytes >= (2 << 20)) {
      out.summary +=
          "; if the job uses PyTorch, this may be a caching-allocator segment holding many tensors — an "
          "access inside it can still be outside its own tensor: rerun with "
          "PYTORCH_NO_CUDA_MEMORY_CACHING=1 so each tensor is its own allocation";
    }
  } else if (inside_freed != nullptr) {
    uint64_t offset = address - std::stoull(inside_freed->address, nullptr, 16);
    out.relation = "inside-freed", out.allocation = *inside_freed, out.offset = static_cast<int64_t>(offset);
    out.summary = fmt::format("{} bytes into a {} freed by then (use after free)", offset, describe(*inside_freed));
  } else if (below != nullptr && below_gap < kNear && below_gap <= above_gap) {
    out.relation = "past-end", out.allocation = *below, out.offset = static_cast<int64_t>(below_gap);
    out.summary = fmt::format("{} past the end of a {}", HumanBytes(below_gap), describe(*below));
  } else if (above != nullptr && above_gap <= kNear) {
    out.relation = "before-start", out.allocation = *above, out.offset = -static_cast<int64_t>(above_gap);
    out.summary = fmt::format("{} before the start of a {}", HumanBytes(above_gap), describe(*above));
  } else {
    out.relation = "none";
    std::string nearest;
    if (below != nullptr && below_gap <= above_gap) {
      nearest = fmt::format("; the nearest live one, a {}, ends {} below it", describe(*below), HumanBytes(below_gap));
    } else if (above != nullptr) {
      nearest =
          fmt::format("; the nearest live one, a {}, starts {} above it", describe(*above), HumanBytes(above_gap));
    }
    out.summary = calls.allocations.empty()
                      ? "no allocation was recorded to compare with"
                      : fmt::format(
                            "in no recorded allocation (none within {} of it): an index far out of range, a stray "
                            "or corrupted pointer, or memory the recorder did not see allocated{}",
                            HumanBytes(kNear), nearest);
  }
  if (calls.torch_memory) {
    if (std::optional<TensorPlace> place = PlaceInTensors(*calls.torch_memory, address)) {
      out.summary += "; in PyTorch's allocator snapshot: " + place->summary;
      out.tensor = std::move(place->block);
      out.tensor_summary = std::move(place->summary);
    }
  }
  return out;
}

}  // namespace gputriage::forensics
