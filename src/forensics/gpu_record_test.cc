#include "forensics/gpu_record.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "capture_tree.h"
#include "catalog/catalog.h"
#include "core/text.h"
#include "kmsg/kmsg.h"
#include "recorder/ring_format.h"

namespace gputriage::forensics {
namespace {

namespace rec = gputriage::recorder;
namespace fs = std::filesystem;

const catalog::ErrorCodes& Errors() {
  static const catalog::Catalog* catalog = *catalog::BuiltinCatalog();
  return catalog->errors;
}

// A record file laid out as libgputriage-record.so lays it out (src/recorder/ring_format.h),
// with small tables; calls are appended as the writer appends them.
class RingFile {
 public:
  static constexpr uint32_t kRecords = 8, kAllocs = 16, kErrors = 8, kNames = 512;

  RingFile() : bytes_(rec::FileBytes(kRecords, kAllocs, kErrors, kNames), '\0') {
    rec::Header& h = header();
    std::memcpy(h.magic, rec::kMagic, sizeof rec::kMagic);
    h.version = rec::kFormatVersion;
    h.header_bytes = static_cast<uint32_t>(rec::kHeaderBytes);
    h.record_bytes = sizeof(rec::Record);
    h.record_slots = kRecords;
    h.alloc_bytes = sizeof(rec::AllocSlot);
    h.alloc_slots = kAllocs;
    h.error_slots = kErrors;
    h.name_bytes = kNames;
    h.pid = 4242;
    h.start_ns = 1'000'000;
    h.name_used = 1;
    std::strcpy(h.exe, "/opt/job/train");
    h.hooks = rec::kHookCupti;
  }

  rec::Header& header() { return *reinterpret_cast<rec::Header*>(bytes_.data()); }
  rec::Record* records() { return reinterpret_cast<rec::Record*>(bytes_.data() + rec::RecordsOffset()); }

  uint32_t Name(const std::string& text) {
    uint64_t at = header().name_used.fetch_add(text.size() + 1);
    std::memcpy(bytes_.data() + rec::NamesOffset(kRecords, kAllocs, kErrors) + at, text.c_str(), text.size() + 1);
    return static_cast<uint32_t>(at + 1);
  }

  // Appends a call; returns its index.
  uint64_t Call(rec::Api api, int32_t result, uint64_t t_ms, uint16_t flags = 0) {
    uint64_t i = header().next.fetch_add(1);
    rec::Record& r = records()[i % kRecords];
    r.t_ns = header().start_ns + t_ms * 1'000'000;
    r.pid = 4242;
    r.tid = 4243;
    r.api = static_cast<uint16_t>(api);
    r.result = result;
    r.flags = flags;
    r.seq = i + 1;
    if ((flags & rec::kFlagPending) == 0) header().calls.fetch_add(1);
    return i;
  }

  void Launch(const std::string& kernel, uint64_t stream, uint64_t t_ms) {
    uint64_t i = Call(rec::Api::cuLaunchKernel, 0, t_ms);
    rec::Record& r = records()[i % kRecords];
    r.name = Name(kernel);
    r.stream = stream;
    r.grid[0] = 128, r.grid[1] = 1, r.grid[2] = 1;
    r.block[0] = 256, r.block[1] = 1, r.block[2] = 1;
    header().launches.fetch_add(1);
  }

  void Alloc(uint32_t slot, uint64_t addr, uint64_t size, uint32_t state) {
    auto* a = reinterpret_cast<rec::AllocSlot*>(bytes_.data() + rec::AllocsOffset(kRecords)) + slot;
    a->addr = addr;
    a->size = size;
    a->api = static_cast<uint16_t>(rec::Api::cuMemAlloc_v2);
    a->t_alloc_ns = header().start_ns + 2'000'000;
    a->state = state;
  }

  void CountError(rec::Api api, int32_t result, uint64_t count) {
    auto* e = reinterpret_cast<rec::ErrorSlot*>(bytes_.data() + rec::ErrorsOffset(kRecords, kAllocs));
    e->key = ((uint64_t{static_cast<uint16_t>(api)} << 32) | static_cast<uint32_t>(result)) + 1;
    e->count = count;
    header().failed_calls.fetch_add(count);
  }

  std::string Write(const fs::path& dir, size_t keep = SIZE_MAX) const {
    std::string path = (dir / "gpu-record.4242.ring").string();
    std::ofstream(path, std::ios::binary)
        .write(bytes_.data(), static_cast<std::streamsize>(std::min(keep, bytes_.size())));
    return path;
  }

  std::string bytes_;
};

class GpuRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gt-gpu-record-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(GpuRecordTest, CandidatesAreTheLaunchesSinceTheLastSyncUpToTheStickyError) {
  RingFile f;
  f.Launch("warmup(float*)", 0, 1);
  f.Call(rec::Api::cuCtxSynchronize, 0, 2);
  f.Launch("gemm_kernel<float>(float const*, float*)", 0, 3);
  f.Launch("scatter_add(float*, long const*, int)", 0x55, 4);
  f.Call(rec::Api::cuMemcpyDtoH_v2, 700, 5);  // CUDA_ERROR_ILLEGAL_ADDRESS surfaces here
  f.Launch("after_the_fault(float*)", 0, 6);  // launched after: not a candidate
  f.CountError(rec::Api::cuMemcpyDtoH_v2, 700, 1);
  auto calls = ReadGpuRecordFile(f.Write(dir_), Errors());
  ASSERT_TRUE(calls.ok()) << calls.error().message;
  ASSERT_EQ(calls->candidates.size(), 2u);
  EXPECT_EQ(calls->candidates[0].kernel, "scatter_add(float*, long const*, int)");  // newest first
  EXPECT_EQ(calls->candidates[0].stream, "0x55");
  EXPECT_EQ(calls->candidates[1].kernel, "gemm_kernel<float>(float const*, float*)");
  EXPECT_EQ(calls->candidates[1].grid, (std::vector<int64_t>{128, 1, 1}));
  ASSERT_EQ(calls->calls.size(), 6u);
  EXPECT_EQ(calls->calls[4].api, "cuMemcpyDtoH_v2");
  EXPECT_EQ(calls->calls[4].result_name, "CUDA_ERROR_ILLEGAL_ADDRESS");
  EXPECT_DOUBLE_EQ(calls->calls[4].t_ms, 5.0);
  ASSERT_EQ(calls->errors.size(), 1u);
  EXPECT_EQ(calls->errors[0].result, 700);
  ASSERT_EQ(calls->processes.size(), 1u);
  EXPECT_EQ(calls->processes[0].exe, "/opt/job/train");
  EXPECT_EQ(calls->processes[0].hooks, std::vector<std::string>{"cupti"});
  EXPECT_EQ(calls->processes[0].launches, 4);
}

// A graph launch carries its graph's kernels (stored one per line at instantiation) and counts as
// a launch in flight.
TEST_F(GpuRecordTest, AGraphLaunchNamesTheGraphsKernels) {
  RingFile f;
  uint64_t inst = f.Call(rec::Api::cuGraphInstantiateWithFlags, 0, 1);
  uint32_t kernels =
      f.Name("gemm_kernel<float>(float const*, float*)\nrelu(float*)\nsoftmax(float*, int)\nnorm(float*)");
  f.records()[inst % RingFile::kRecords].name = kernels;
  uint64_t launch = f.Call(rec::Api::cuGraphLaunch, 0, 2);
  f.records()[launch % RingFile::kRecords].name = kernels;
  f.Call(rec::Api::cuStreamSynchronize, 700, 3);
  auto calls = ReadGpuRecordFile(f.Write(dir_), Errors());
  ASSERT_TRUE(calls.ok()) << calls.error().message;
  ASSERT_EQ(calls->calls.size(), 3u);
  ASSERT_TRUE(calls->calls[0].graph_kernels.has_value());
  EXPECT_EQ(calls->calls[0].graph_kernels->size(), 4u);
  ASSERT_EQ(calls->candidates.size(), 1u);
  EXPECT_EQ(calls->candidates[0].api, "cuGraphLaunch");
  EXPECT_EQ(
      calls->candidates[0].kernel,
      "CUDA graph of 4 kernels: gemm_kernel<float>(float const*, float*); relu(float*); softmax(float*, int); ...");
  EXPECT_EQ(calls->candidates[0].graph_kernels->back(), "norm(float*)");
}

TEST_F(GpuRecordTest, AStreamSyncClearsOnlyItsStream) {
  RingFile f;
  f.Launch("a(int)", 0x1, 1);
  f.Launch("b(int)", 0x2, 2);
  uint64_t i = f.Call(rec::Api::cuStreamSynchronize, 0, 3);
  f.records()[i % RingFile::kRecords].stream = 0x1;
  auto calls = ReadGpuRecordFile(f.Write(dir_), Errors());
  ASSERT_TRUE(calls.ok()) << calls.error().message;
  ASSERT_EQ(calls->candidates.size(), 1u);
  EXPECT_EQ(calls->candidates[0].kernel, "b(int)");
}

TEST_F(GpuRecordTest, TornAndOverwrittenRecordsAreSkippedAndTheLossSaid) {
  RingFile f;
  for (int t = 0; t < 10; ++t) f.Launch("k" + std::to_string(t) + "()", 0, t);  // 10 calls, 8 slots
  f.records()[9 % RingFile::kRecords].seq = 0;  // the newest was being written when the job died
  auto calls = ReadGpuRecordFile(f.Write(dir_), Errors());
  ASSERT_TRUE(calls.ok()) << calls.error().message;
  ASSERT_EQ(calls->calls.size(), 7u);  // 2..8 kept, 9 torn
  EXPECT_EQ(calls->calls.front().kernel, "k2()");
  EXPECT_EQ(calls->calls.back().kernel, "k8()");
  ASSERT_FALSE(calls->not_recorded.empty());
  EXPECT_EQ(calls->not_recorded.back().reason, "pid 4242: 10 calls, the newest 7 kept");
}

TEST_F(GpuRecordTest, ASyncEnteredAndNeverLeftIsInProgress) {
  RingFile f;
  f.Launch("spin_forever(int*)", 0, 1);
  f.Call(rec::Api::cuCtxSynchronize, 0, 2, rec::kFlagPending);
  // A synchronisation (of another stream) that returned is matched with its entry and is not in
  // progress.
  uint64_t entered = f.Call(rec::Api::cuStreamSynchronize, 0, 0, rec::kFlagPending);
  uint64_t left = f.Call(rec::Api::cuStreamSynchronize, 0, 0);
  f.records()[entered % RingFile::kRecords].stream = 0x9;
  f.records()[left % RingFile::kRecords].stream = 0x9;
  auto calls = ReadGpuRecordFile(f.Write(dir_), Errors());
  ASSERT_TRUE(calls.ok()) << calls.error().message;
  ASSERT_EQ(calls->in_progress.size(), 1u);
  EXPECT_EQ(calls->in_progress[0].api, "cuCtxSynchronize");
  EXPECT_TRUE(calls->in_progress[0].in_progress);
  ASSERT_EQ(calls->candidates.size(), 1u);
  EXPECT_EQ(calls->candidates[0].kernel, "spin_forever(int*)");
}

TEST_F(GpuRecordTest, DamagedFilesAreRefusedNamingTheFile) {
  RingFile f;
  std::string path = f.Write(dir_, 100);
  auto cut = ReadGpuRecordFile(path, Errors());
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.error().message.find(path + ": 100 bytes, shorter than a record header"), std::string::npos)
      << cut.error().message;

  path = f.Write(dir_, rec::kHeaderBytes + 10);
  auto short_body = ReadGpuRecordFile(path, Errors());
  ASSERT_FALSE(short_body.ok());
  EXPECT_NE(short_body.error().message.find("cut short"), std::string::npos) << short_body.error().message;

  f.header().magic[0] = 'X';
  auto magic = ReadGpuRecordFile(f.Write(dir_), Errors());
  ASSERT_FALSE(magic.ok());
  EXPECT_NE(magic.error().message.find("not a gputriage record file"), std::string::npos);

  RingFile g;
  g.header().record_slots = 0xFFFFFFFF;
  auto sizes = ReadGpuRecordFile(g.Write(dir_), Errors());
  ASSERT_FALSE(sizes.ok());
  EXPECT_NE(sizes.error().message.find("a damaged record file"), std::string::npos);

  RingFile v;
  v.header().version = 99;
  auto version = ReadGpuRecordFile(v.Write(dir_), Errors());
  ASSERT_FALSE(version.ok());
  EXPECT_NE(version.error().message.find("record format version 99"), std::string::npos);
}

TEST_F(GpuRecordTest, ADirectoryWithoutFilesSaysNothingLoadedTheRecorder) {
  core::GpuCalls calls = ReadGpuRecordDir(dir_.string(), Errors());
  EXPECT_TRUE(calls.processes.empty());
  ASSERT_EQ(calls.not_recorded.size(), 1u);
  EXPECT_NE(calls.not_recorded[0].reason.find("no process of the job loaded the recorder"), std::string::npos);
  // A damaged file next to a good one: the good one is read, the damage said.
  RingFile good;
  good.Launch("k()", 0, 1);
  good.Write(dir_);
  std::ofstream(dir_ / "gpu-record.77.ring") << "garbage";
  calls = ReadGpuRecordDir(dir_.string(), Errors());
  ASSERT_EQ(calls.processes.size(), 1u);
  ASSERT_EQ(calls.not_recorded.size(), 1u);
  EXPECT_NE(calls.not_recorded[0].reason.find("gpu-record.77.ring: 7 bytes"), std::string::npos)
      << calls.not_recorded[0].reason;
}

TEST_F(GpuRecordTest, AllocationsAndTheirAttribution) {
  RingFile f;
  f.Alloc(0, 0x7f0000000000, 512 << 10, rec::kSlotLive);
  f.Alloc(1, 0x7f0000200000, 1 << 20, rec::kSlotFreed);
  auto calls = ReadGpuRecordFile(f.Write(dir_), Errors());
  ASSERT_TRUE(calls.ok()) << calls.error().message;
  ASSERT_EQ(calls->allocations.size(), 2u);
  EXPECT_EQ(calls->allocations[0].state, "live");
  EXPECT_EQ(calls->allocations[1].state, "freed");

  core::GpuAddressAttribution past = AttributeAddress(*calls, 0x7f0000000000 + (512 << 10) + 4096);
  EXPECT_EQ(past.relation, "past-end");
  EXPECT_EQ(past.offset, 4096);
  EXPECT_EQ(
      past.summary.rfind("4 KiB past the end of a 512 KiB buffer allocated by cuMemAlloc_v2 at 0x7f0000000000", 0), 0u)
      << past.summary;

  core::GpuAddressAttribution inside = AttributeAddress(*calls, 0x7f0000000100);
  EXPECT_EQ(inside.relation, "inside");
  EXPECT_EQ(inside.offset, 0x100);

  core::GpuAddressAttribution freed = AttributeAddress(*calls, 0x7f0000200010);
  EXPECT_EQ(freed.relation, "inside-freed");
  EXPECT_NE(freed.summary.find("use after free"), std::string::npos);

  RingFile big;
  big.Alloc(0, 0x7f1000000000, 20 << 20, rec::kSlotLive);
  auto segment = ReadGpuRecordFile(big.Write(dir_), Errors());
  ASSERT_TRUE(segment.ok());
  core::GpuAddressAttribution in_segment = AttributeAddress(*segment, 0x7f1000000000 + (3 << 20));
  EXPECT_EQ(in_segment.relation, "inside");
  EXPECT_NE(in_segment.summary.find("PYTORCH_NO_CUDA_MEMORY_CACHING=1"), std::string::npos) << in_segment.summary;
  EXPECT_EQ(inside.summary.find("PYTORCH"), std::string::npos);  // 512 KiB: not a segment

  core::GpuAddressAttribution stray = AttributeAddress(*calls, 0x10);
  EXPECT_EQ(stray.relation, "none");
  EXPECT_FALSE(stray.allocation.has_value());
  // The nearest live allocation is still said (on the H200, Triton's store 76 MiB past a 2 MiB
  // segment): how far off the pointer is tells an index bug from a garbage pointer.
  EXPECT_NE(stray.summary.find("; the nearest live one, a 512 KiB buffer allocated by cuMemAlloc_v2 at 0x7f0000000000 "
                               "(pid 4242, 2.0 ms after start), starts 127.0 TiB above it"),
            std::string::npos)
      << stray.summary;
  core::GpuAddressAttribution far = AttributeAddress(*calls, 0x7f0000000000 + (76 << 20));
  EXPECT_EQ(far.relation, "none");
  EXPECT_NE(far.summary.find("ends 75.5 MiB below it"), std::string::npos) << far.summary;
}

// A module without code for this GPU fails where the runtime looks its kernel up (seen on the
// H200: an sm_80-only program's cudaLaunchKernel returned the error without reaching the driver's
// launch): the lookup names the kernel; a failure of another entry point (recorded only with
// GPUTRIAGE_RECORD_DRIVER_ALL) carries the entry point's own name.
TEST_F(GpuRecordTest, FailedLookupsNameTheKernelAndOtherDriverCallsTheirFunction) {
  RingFile f;
  f.Call(rec::Api::cuLibraryLoadData, 0, 1);
  uint64_t lookup = f.Call(rec::Api::cuLibraryGetKernel, 209, 2);
  f.records()[lookup % RingFile::kRecords].name = f.Name("fill(float*, int, float)");
  uint64_t other = f.Call(rec::Api::cuDriverCall, 1, 3);
  f.records()[other % RingFile::kRecords].name = f.Name("cuMemPrefetchAsync_v2");
  f.CountError(rec::Api::cuLibraryGetKernel, 209, 1);
  auto calls = ReadGpuRecordFile(f.Write(dir_), Errors());
  ASSERT_TRUE(calls.ok()) << calls.error().message;
  ASSERT_EQ(calls->calls.size(), 3u);
  EXPECT_EQ(calls->calls[1].api, "cuLibraryGetKernel");
  EXPECT_EQ(calls->calls[1].kernel, "fill(float*, int, float)");
  EXPECT_EQ(calls->calls[1].result_name, "CUDA_ERROR_NO_BINARY_FOR_GPU");
  EXPECT_FALSE(calls->calls[1].graph_kernels.has_value());
  EXPECT_EQ(calls->calls[2].api, "cuMemPrefetchAsync_v2");
  EXPECT_EQ(calls->calls[2].result_name, "CUDA_ERROR_INVALID_VALUE");
  EXPECT_TRUE(calls->candidates.empty());  // a lookup is not a launch
}

// The faulting addresses of real kernel-log records: an Xid 31 from the H200 run of
// tests/gpu/cuda_oob (address with the driver's "_" separator) and an amdgpu VM fault.
TEST(GpuFaultAddress, FromRealXid31AndAmdgpuRecords) {
  std::vector<kmsg::Record> records;
  const std::string nvidia = testing::ReadCapture("kernel_log/h200-run-kmsg-cuda-oob-xid13-xid31-torch-xid43.txt");
  for (std::string_view line : core::SplitLines(nvidia)) {
    if (auto r = kmsg::ParseKmsgRecord(line)) records.push_back(*r);
  }
  const std::string amd = testing::ReadCapture(
      "kernel_log/amdgpu-mmhub0-no-retry-pagefault-old-format-no-amdgpu-prefix-vega64-journalctl.txt");
  for (std::string_view line : core::SplitLines(amd)) {
    if (line.find("in page starting at address") != std::string_view::npos) {
      kmsg::Record r;
      r.message = std::string(line);
      records.push_back(r);
    }
  }
  std::vector<CorrelatedRecord> correlated = Correlate(records, {452});
  std::vector<uint64_t> addresses = FaultAddresses(correlated);
  ASSERT_FALSE(addresses.empty());
  EXPECT_EQ(addresses.front(), 0x7f9264c00000u);
  EXPECT_NE(std::find(addresses.begin(), addresses.end(), 0x0000800109862000u), addresses.end());
}

// Writes the seed corpus of fuzz/gpu_record_fuzz.cc: record files as the writer lays them out.
// Run with --gtest_also_run_disabled_tests --gtest_filter='*WriteFuzzSeedCorpus' from the source tree.
TEST_F(GpuRecordTest, DISABLED_WriteFuzzSeedCorpus) {
  fs::path out = fs::path(GT_SOURCE_DIR) / "fuzz/corpus/gpu_record";
  fs::create_directories(out);
  auto save = [&](const RingFile& f, const std::string& name) {
    fs::copy_file(f.Write(dir_), out / name, fs::copy_options::overwrite_existing);
  };
  RingFile fault;
  fault.Launch("warmup(float*)", 0, 1);
  fault.Call(rec::Api::cuCtxSynchronize, 0, 2);
  fault.Launch("gemm_kernel<float>(float const*, float*)", 0, 3);
  fault.Launch("scatter_add(float*, long const*, int)", 0x55, 4);
  fault.Call(rec::Api::cuMemcpyDtoH_v2, 700, 5);
  fault.CountError(rec::Api::cuMemcpyDtoH_v2, 700, 1);
  fault.Alloc(0, 0x7f0000000000, 512 << 10, rec::kSlotLive);
  fault.Alloc(1, 0x7f0000200000, 1 << 20, rec::kSlotFreed);
  save(fault, "sticky-fault-with-candidates-and-allocations.ring");
  RingFile hang;
  hang.Launch("spin_forever(int*)", 0, 1);
  hang.Call(rec::Api::hipDeviceSynchronize, 0, 2, rec::kFlagPending);
  save(hang, "hang-in-device-synchronize.ring");
  RingFile wrapped;
  for (int t = 0; t < 10; ++t) wrapped.Launch("k" + std::to_string(t) + "()", 0, t);
  wrapped.records()[9 % RingFile::kRecords].seq = 0;
  save(wrapped, "wrapped-ring-with-a-torn-record.ring");
}

TEST(GpuRecordText, WhyNothingWasRecorded) {
  EXPECT_EQ(WhyNothingWasRecorded(""),
            "no process of the job loaded the recorder: a static or 32-bit executable, a job that clears LD_PRELOAD, "
            "or a job that never started");
  // This test binary is a dynamic 64-bit program: the general reasons stand.
  EXPECT_EQ(WhyNothingWasRecorded("/proc/self/exe").rfind("no process of the job loaded the recorder", 0), 0u);
  // An ELF header of class 1 (32-bit), as `gcc -m32` writes one.
  std::string elf32(64, '\0');
  elf32.replace(0, 5,
                "\x7f"
                "ELF\x01");
  std::string path = (fs::temp_directory_path() / ("gt-elf32-" + std::to_string(getpid()))).string();
  std::ofstream(path, std::ios::binary) << elf32;
  EXPECT_EQ(WhyNothingWasRecorded(path),
            path + " is a 32-bit program: the recorder is a 64-bit library and cannot be loaded into it");
  fs::remove(path);
}

TEST(GpuRecordText, HumanBytesAndVendor) {
  EXPECT_EQ(HumanBytes(512), "512 B");
  EXPECT_EQ(HumanBytes(4096), "4 KiB");
  EXPECT_EQ(HumanBytes(1536 << 10), "1.5 MiB");
  EXPECT_EQ(ApiVendor("__hipPushCallConfiguration"), "hip");
  EXPECT_EQ(ApiVendor("hipMalloc"), "hip");
  EXPECT_EQ(ApiVendor("cuLaunchKernel"), "cuda");
}

}  // namespace
}  // namespace gputriage::forensics
