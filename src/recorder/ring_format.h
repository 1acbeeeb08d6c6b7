// The flight recorder's file (`gputriage run --record`): one memory-mapped file per process of
// the job, written by libgputriage-record.so inside the job and read by gputriage after it.
// Because the file is a shared mapping, what was written survives the job's crash or SIGKILL.
//
// Layout (all little-endian, offsets in the header):
//   Header | records[record_slots] | allocs[alloc_slots] | errors[error_slots] | names[name_bytes]
// - records: a ring of the newest calls. A writer takes index i = next++ and fills slot
//   i % record_slots, then stores seq = i + 1 (release). A reader keeps a slot only when its seq
//   is the index it expects, so a record torn by a crash is skipped, never half-read.
// - allocs: the live allocation table (open addressing by address): a slot is live, freed (kept
//   until its place is needed, for "recently freed" answers) or empty.
// - errors: calls that failed, counted by (api, result).
// - names: NUL-terminated kernel and module names, appended; a record holds offset + 1.
//
// No dependencies: the recorder library includes this header and nothing else of gputriage.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gputriage::recorder {

/// What a call does, for the reader (candidates, allocation table, counters).
enum class ApiKind : uint16_t { kOther = 0, kAlloc, kFree, kCopy, kSet, kLaunch, kSync, kModule, kGraph };

// Every API the recorder knows: its name as the vendor spells it and its kind. The index in this
// list is the record's `api`; new names go at the end of a vendor's block only with a new
// kFormatVersion.
// clang-format off
#define GT_RECORDER_APIS(X) \
  X(hipMalloc, kAlloc) \
  X(hipMallocManaged, kAlloc) \
  X(hipHostMalloc, kAlloc) \
  X(hipMallocAsync, kAlloc) \
  X(hipExtMallocWithFlags, kAlloc) \
  X(hipFree, kFree) \
  X(hipFreeAsync, kFree) \
  X(hipHostFree, kFree) \
  X(hipMemcpy, kCopy) \
  X(hipMemcpyAsync, kCopy) \
  X(hipMemcpyHtoD, kCopy) \
  X(hipMemcpyDtoH, kCopy) \
  X(hipMemcpyDtoD, kCopy) \
  X(hipMemset, kSet) \
  X(hipMemsetAsync, kSet) \
  X(hipLaunchKernel, kLaunch) \
  X(hipModuleLaunchKernel, kLaunch) \
  X(hipDeviceSynchronize, kSync) \
  X(hipStreamSynchronize, kSync) \
  X(hipEventSynchronize, kSync) \
  X(hipModuleLoad, kModule) \
  X(hipModuleLoadData, kModule) \
  X(hipModuleLoadDataEx, kModule) \
  X(hipGraphLaunch, kGraph) \
  X(__hipPushCallConfiguration, kOther) \
  X(cuMemAlloc_v2, kAlloc) \
  X(cuMemAllocManaged, kAlloc) \
  X(cuMemAllocHost_v2, kAlloc) \
  X(cuMemHostAlloc, kAlloc) \
  X(cuMemAllocAsync, kAlloc) \
  X(cuMemAllocAsync_ptsz, kAlloc) \
  X(cuMemAllocFromPoolAsync, kAlloc) \
  X(cuMemAllocFromPoolAsync_ptsz, kAlloc) \
  X(cuMemAllocPitch_v2, kAlloc) \
  X(cuMemFree_v2, kFree) \
  X(cuMemFreeHost, kFree) \
  X(cuMemFreeAsync, kFree) \
  X(cuMemFreeAsync_ptsz, kFree) \
  X(cuMemcpy, kCopy) \
  X(cuMemcpyAsync, kCopy) \
  X(cuMemcpy_ptds, kCopy) \
  X(cuMemcpyAsync_ptsz, kCopy) \
  X(cuMemcpyHtoD_v2, kCopy) \
  X(cuMemcpyDtoH_v2, kCopy) \
  X(cuMemcpyDtoD_v2, kCopy) \
  X(cuMemcpyHtoDAsync_v2, kCopy) \
  X(cuMemcpyDtoHAsync_v2, kCopy) \
  X(cuMemcpyDtoDAsync_v2, kCopy) \
  X(cuMemcpyHtoD_v2_ptds, kCopy) \
  X(cuMemcpyDtoH_v2_ptds, kCopy) \
  X(cuMemcpyDtoD_v2_ptds, kCopy) \
  X(cuMemcpyHtoDAsync_v2_ptsz, kCopy) \
  X(cuMemcpyDtoHAsync_v2_ptsz, kCopy) \
  X(cuMemcpyDtoDAsync_v2_ptsz, kCopy) \
  X(cuMemsetD8_v2, kSet) \
  X(cuMemsetD32_v2, kSet) \
  X(cuMemsetD8Async, kSet) \
  X(cuMemsetD32Async, kSet) \
  X(cuMemsetD8_v2_ptds, kSet) \
  X(cuMemsetD32_v2_ptds, kSet) \
  X(cuMemsetD8Async_ptsz, kSet) \
  X(cuMemsetD32Async_ptsz, kSet) \
  X(cuLaunchKernel, kLaunch) \
  X(cuLaunchKernel_ptsz, kLaunch) \
  X(cuLaunchKernelEx, kLaunch) \
  X(cuLaunchKernelEx_ptsz, kLaunch) \
  X(cuLaunchCooperativeKernel, kLaunch) \
  X(cuLaunchCooperativeKernel_ptsz, kLaunch) \
  X(cuCtxSynchronize, kSync) \
  X(cuStreamSynchronize, kSync) \
  X(cuStreamSynchronize_ptsz, kSync) \
  X(cuEventSynchronize, kSync) \
  X(cuModuleLoad, kModule) \
  X(cuModuleLoadData, kModule) \
  X(cuModuleLoadDataEx, kModule) \
  X(cuModuleLoadFatBinary, kModule) \
  X(cuLibraryLoadData, kModule) \
  X(cuLibraryLoadFromFile, kModule) \
  X(cuGraphLaunch, kGraph) \
  X(cuGraphLaunch_ptsz, kGraph) \
  X(cuGraphInstantiateWithFlags, kOther) \
  X(cuGraphInstantiateWithParams, kOther) \
  X(cuGraphInstantiateWithParams_ptsz, kOther) \
  X(cuGraphInstantiate_v2, kOther) \
  X(cuModuleGetFunction, kOther) \
  X(cuLibraryGetKernel, kOther) \
  X(cuLibraryGetModule, kOther) \
  X(cuKernelGetFunction, kOther) \
  X(cuFuncSetAttribute, kOther) \
  X(cuKernelSetAttribute, kOther) \
  X(cuDriverCall, kOther) \
  X(cuCtxSynchronize_v2, kSync)
// clang-format on

enum class Api : uint16_t {
  kUnknown = 0,
#define GT_RECORDER_ENUM(name, kind) name,
  GT_RECORDER_APIS(GT_RECORDER_ENUM)
#undef GT_RECORDER_ENUM
      kCount
};

struct ApiInfo {
  const char* name;
  ApiKind kind;
};

/// The name and kind of `api`; {"unknown", kOther} for a value this build does not know.
inline ApiInfo DescribeApi(uint16_t api) {
  static constexpr ApiInfo kInfo[] = {{"unknown", ApiKind::kOther},
#define GT_RECORDER_INFO(name, kind) {#name, ApiKind::kind},
                                      GT_RECORDER_APIS(GT_RECORDER_INFO)
#undef GT_RECORDER_INFO
  };
  if (api >= sizeof(kInfo) / sizeof(kInfo[0])) return kInfo[0];
  return kInfo[api];
}

inline constexpr char kMagic[8] = {'G', 'T', 'R', 'E', 'C', 'O', 'R', 'D'};
inline constexpr uint32_t kFormatVersion = 2;
inline constexpr uint32_t kRecordSlots = 1u << 16;  ///< the newest 65,536 calls are kept
inline constexpr uint32_t kAllocSlots = 1u << 15;
inline constexpr uint32_t kErrorSlots = 512;
inline constexpr uint32_t kNameBytes = 4u << 20;
inline constexpr uint32_t kAllocProbe = 64;  ///< slots an address may be placed from its hash
inline constexpr uint32_t kReasonBytes = 200;

/// Header flags: which hooks are active in the process.
inline constexpr uint32_t kHookHip = 1u << 0;
inline constexpr uint32_t kHookCupti = 1u << 1;

/// Record flags.
inline constexpr uint16_t kFlagPending = 1u << 0;  ///< written on entry to a sync call; its end follows
inline constexpr uint16_t kFlagHostMemory = 1u << 1;

struct Record {
  std::atomic<uint64_t> seq;  ///< index + 1 once the record is complete
  uint64_t t_ns;              ///< CLOCK_MONOTONIC at the call's entry
  uint64_t dur_ns;            ///< how long the call took (0 for a pending record)
  int32_t pid;
  int32_t tid;
  uint16_t api;  ///< Api
  uint16_t flags;
  int32_t result;     ///< the call's return code (hipError_t, CUresult)
  uint32_t name;      ///< kernel or module name: offset + 1 into names; 0: none. A graph launch's
                      ///< (and its instantiation's) name lists the graph's kernels, one per line
  uint32_t shmem;     ///< launch: dynamic shared memory bytes
  uint64_t ptr;       ///< alloc/free: address; copy/set: destination; launch: function; module: handle
  uint64_t ptr2;      ///< copy: source
  uint64_t size;      ///< bytes (alloc, copy, set)
  uint64_t stream;    ///< stream handle (0: the default stream)
  uint32_t grid[3];   ///< launch
  uint32_t block[3];  ///< launch
  uint32_t aux;       ///< copy: the direction (hipMemcpyKind); alloc: flags
  uint8_t reserved[20];
};
static_assert(sizeof(Record) == 128);

enum AllocState : uint32_t { kSlotEmpty = 0, kSlotWriting = 1, kSlotLive = 2, kSlotFreed = 3 };

struct AllocSlot {
  std::atomic<uint64_t> addr;
  std::atomic<uint32_t> state;  ///< AllocState
  uint16_t api;                 ///< the call that allocated
  uint16_t free_api;
  uint64_t size;
  uint64_t t_alloc_ns;
  uint64_t t_free_ns;
  uint64_t reserved;
};
static_assert(sizeof(AllocSlot) == 48);

struct ErrorSlot {
  std::atomic<uint64_t> key;  ///< (api << 32 | uint32 result) + 1; 0: empty
  std::atomic<uint64_t> count;
};

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t header_bytes;
  uint32_t record_bytes;
  uint32_t record_slots;
  uint32_t alloc_bytes;
  uint32_t alloc_slots;
  uint32_t error_slots;
  uint32_t name_bytes;
  int32_t pid;
  uint32_t reserved0;
  uint64_t start_ns;               ///< CLOCK_MONOTONIC when the recorder started
  uint64_t start_epoch_ns;         ///< wall clock at the same moment
  std::atomic<uint32_t> hooks;     ///< kHook* bits
  std::atomic<uint32_t> disabled;  ///< nonzero: the recorder switched itself off (reason below)
  std::atomic<uint64_t> next;      ///< records taken so far (the ring holds the newest)
  std::atomic<uint64_t> name_used;
  std::atomic<uint64_t> names_dropped;
  std::atomic<uint64_t> calls;
  std::atomic<uint64_t> launches;
  std::atomic<uint64_t> failed_calls;
  std::atomic<uint64_t> allocs_dropped;  ///< allocations the table had no place for
  std::atomic<uint64_t> errors_dropped;
  std::atomic<uint64_t> alloc_size_log2[64];  ///< allocations by floor(log2(size))
  char disabled_reason[kReasonBytes];
  char note[kReasonBytes];  ///< what the recorder wants said (e.g. the CUPTI library it loaded)
  char exe[256];            ///< /proc/self/exe at start
};

inline constexpr size_t kHeaderBytes = (sizeof(Header) + 4095) & ~size_t{4095};

inline constexpr size_t RecordsOffset() { return kHeaderBytes; }
inline constexpr size_t AllocsOffset(uint32_t record_slots) {
  return RecordsOffset() + size_t{record_slots} * sizeof(Record);
}
inline constexpr size_t ErrorsOffset(uint32_t record_slots, uint32_t alloc_slots) {
  return AllocsOffset(record_slots) + size_t{alloc_slots} * sizeof(AllocSlot);
}
inline constexpr size_t NamesOffset(uint32_t record_slots, uint32_t alloc_slots, uint32_t error_slots) {
  return ErrorsOffset(record_slots, alloc_slots) + size_t{error_slots} * sizeof(ErrorSlot);
}
inline constexpr size_t FileBytes(uint32_t record_slots, uint32_t alloc_slots, uint32_t error_slots,
                                  uint32_t name_bytes) {
  return NamesOffset(record_slots, alloc_slots, error_slots) + name_bytes;
}

/// The hash slot an address starts probing from.
inline uint32_t AllocHash(uint64_t addr, uint32_t slots) {
  uint64_t h = (addr >> 4) * 0x9E3779B97F4A7C15ull;
  return static_cast<uint32_t>(h >> 32) % slots;
}

/// The file name of one process's record in the record directory.
inline constexpr const char* kFilePrefix = "gpu-record.";
inline constexpr const char* kFileSuffix = ".ring";

/// Environment variables the recorder reads (set by `gputriage run --record`).
inline constexpr const char* kEnvDir = "GPUTRIAGE_RECORD_DIR";
inline constexpr const char* kEnvCupti = "GPUTRIAGE_RECORD_CUPTI";  ///< path of libcupti.so
/// "1": also subscribe to every other driver entry point and record the ones that fail (as
/// cuDriverCall, the record's name holding the function's name); costs a callback per call.
inline constexpr const char* kEnvDriverAll = "GPUTRIAGE_RECORD_DRIVER_ALL";
/// "cupti-only": subscribe and enable the callbacks but record nothing — measures CUPTI's own
/// cost against the recorder's (bench/, scripts/device/verify-record.sh). Not for users.
inline constexpr const char* kEnvBench = "GPUTRIAGE_RECORD_BENCH";

}  // namespace gputriage::recorder
