#include "corefile/core_writer.h"

#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/uio.h>
#endif

#include <gtest/gtest.h>

#include "corefile/core_memory.h"
#include "corefile/core_notes.h"
#include "corefile/crash_child_testing.h"

namespace gputriage::corefile {
namespace {

using testing::CrashInChild;
using testing::Markers;
using testing::SelfExe;
using testing::TempDir;

// A traced child stopped at the delivery of its SIGSEGV, all of its threads in ptrace-stop:
// what the `run --core` supervisor sees. Killed and reaped on destruction.
class StoppedCrash {
 public:
  explicit StoppedCrash(int extra_threads) {
    int fds[2];
    if (pipe(fds) != 0) {
      error_ = "pipe failed";
      return;
    }
    pid_ = fork();
    if (pid_ == 0) {
      close(fds[0]);
      CrashInChild(dir_.path(), extra_threads, /*traceme=*/true, fds[1]);
    }
    close(fds[1]);
    RunToTheSignal();
    Markers markers;
    if (error_.empty() && read(fds[0], &markers, sizeof(markers)) == sizeof(markers)) {
      markers_ = markers;
    }
    close(fds[0]);
  }
  ~StoppedCrash() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    // The leader's death is reported only after every traced thread's: reap them all.
    for (;;) {
      int status = 0;
      int waited = waitpid(-1, &status, __WALL);
      if (waited < 0 && errno == EINTR) continue;
      if (waited < 0) break;
      if (waited == pid_ && (WIFEXITED(status) || WIFSIGNALED(status))) break;
    }
  }

  const std::string& error() const { return error_; }
  int pid() const { return pid_; }
  /// The crashed thread first.
  std::vector<int> tids() const {
    std::vector<int> tids = {crashed_};
    for (int tid : threads_) {
      if (tid != crashed_) tids.push_back(tid);
    }
    return tids;
  }
  const siginfo_t& info() const { return info_; }
  const Markers& markers() const { return markers_; }
  const std::string& dir() const { return dir_.path(); }

 private:
  void RunToTheSignal() {
    int status = 0;
    if (waitpid(pid_, &status, 0) != pid_ || !WIFSTOPPED(status)) {
      error_ = "the child did not stop";
      return;
    }
    threads_.insert(pid_);
    ptrace(PTRACE_SETOPTIONS, pid_, nullptr, PTRACE_O_TRACECLONE | PTRACE_O_EXITKILL);
    ptrace(PTRACE_CONT, pid_, nullptr, nullptr);
    for (;;) {
      int tid = waitpid(-1, &status, __WALL);
      if (tid < 0 || !WIFSTOPPED(status)) {
        error_ = "the child ended before its SIGSEGV (status " + std::to_string(status) + ")";
        return;
      }
      threads_.insert(tid);
      int signal = WSTOPSIG(status);
      if (signal == SIGSEGV) {
        crashed_ = tid;
        break;
      }
      // Clone events and the new threads' initial SIGSTOP are not delivered.
      bool deliver = signal != SIGSTOP && signal != SIGTRAP;
      ptrace(PTRACE_CONT, tid, nullptr, reinterpret_cast<void*>(deliver ? signal : 0));
    }
    // Stop the other threads, as the supervisor does, and wait for each stop.
    for (int tid : threads_) {
      if (tid == crashed_) continue;
      syscall(SYS_tgkill, pid_, tid, SIGSTOP);
      while (waitpid(tid, &status, __WALL) == tid && WIFSTOPPED(status) && WSTOPSIG(status) != SIGSTOP) {
        ptrace(PTRACE_CONT, tid, nullptr, nullptr);
      }
    }
    ptrace(PTRACE_GETSIGINFO, crashed_, nullptr, &info_);
  }

  TempDir dir_;
  int pid_ = -1;
  int crashed_ = -1;
  std::set<int> threads_;
  siginfo_t info_{};
  Markers markers_;
  std::string error_;
};

std::optional<uint64_t> RegisterOf(const CoreThread& thread, const std::string& name) {
  for (const auto& reg : thread.registers) {
    if (reg.name == name) return reg.value;
  }
  return std::nullopt;
}

uint64_t ReadU64(const CoreMemory& memory, uint64_t address) {
  auto bytes = memory.Read(address, 8);
  if (!bytes || bytes->size() != 8) return 0;
  uint64_t value;
  std::memcpy(&value, bytes->data(), 8);
  return value;
}

// The raw notes of a core (owner, type, descriptor), in file order.
struct RawNote {
  std::string owner;
  uint32_t type = 0;
  std::string desc;
};

std::vector<RawNote> ReadRawNotes(const std::string& path) {
  std::string bytes = testing::ReadWholeFile(path);
  std::vector<RawNote> notes;
  if (bytes.size() < sizeof(Elf64_Ehdr)) return notes;
  Elf64_Ehdr ehdr;
  std::memcpy(&ehdr, bytes.data(), sizeof(ehdr));
  for (size_t i = 0; i < ehdr.e_phnum; ++i) {
    Elf64_Phdr phdr;
    if (ehdr.e_phoff + (i + 1) * sizeof(phdr) > bytes.size()) break;
    std::memcpy(&phdr, bytes.data() + ehdr.e_phoff + i * sizeof(phdr), sizeof(phdr));
    if (phdr.p_type != PT_NOTE || phdr.p_offset + phdr.p_filesz > bytes.size()) continue;
    for (size_t at = phdr.p_offset; at + 12 <= phdr.p_offset + phdr.p_filesz;) {
      uint32_t header[3];
      std::memcpy(header, bytes.data() + at, 12);
      size_t name_at = at + 12, desc_at = name_at + (header[0] + 3) / 4 * 4;
      if (desc_at + header[1] > bytes.size()) break;
      notes.push_back({std::string(bytes.data() + name_at, header[0] ? header[0] - 1 : 0), header[2],
                       bytes.substr(desc_at, header[1])});
      at = desc_at + (header[1] + 3) / 4 * 4;
    }
  }
  return notes;
}

uint64_t AuxvValue(const CoreNotes& notes, uint64_t type) {
  for (const auto& [key, value] : notes.auxv) {
    if (key == type) return value;
  }
  return 0;
}

// What gdb's solib-svr4 does to list the shared libraries of a core, from the core's own bytes
// only (no file fallback): the executable's program headers at AT_PHDR, its PT_DYNAMIC,
// DT_DEBUG's r_debug, then the link_map chain. Returns the l_name of each node; `error` says
// where the walk stopped.
std::vector<std::string> LinkMapNamesFromCore(const std::string& path, std::string* error) {
  auto notes = ReadCoreNotesFile(path);
  if (!notes.ok()) return *error = notes.error().message, std::vector<std::string>{};
  CoreNotes only_core = *notes;
  only_core.files.clear();  // CoreMemory would read what the core lacks from the mapped files
  auto memory = CoreMemory::OpenFile(path, only_core);
  if (!memory.ok()) return *error = memory.error().message, std::vector<std::string>{};
  uint64_t phdr_at = AuxvValue(*notes, AT_PHDR), phnum = AuxvValue(*notes, AT_PHNUM);
  if (phdr_at == 0 || phnum == 0) return *error = "no AT_PHDR/AT_PHNUM in NT_AUXV", std::vector<std::string>{};
  auto phdr_bytes = memory->Read(phdr_at, phnum * sizeof(Elf64_Phdr));
  if (!phdr_bytes || phdr_bytes->size() != phnum * sizeof(Elf64_Phdr)) {
    return *error = "the program headers at AT_PHDR are not in the core", std::vector<std::string>{};
  }
  std::vector<Elf64_Phdr> phdrs(phnum);
  std::memcpy(phdrs.data(), phdr_bytes->data(), phdr_bytes->size());
  uint64_t bias = 0, dynamic = 0;
  for (const Elf64_Phdr& p : phdrs) {
    if (p.p_type == PT_PHDR) bias = phdr_at - p.p_vaddr;
  }
  for (const Elf64_Phdr& p : phdrs) {
    if (p.p_type == PT_DYNAMIC) dynamic = bias + p.p_vaddr;
  }
  uint64_t r_debug = 0;
  for (uint64_t at = dynamic; dynamic != 0 && at < dynamic + 4096; at += 16) {
    uint64_t tag = ReadU64(*memory, at), value = ReadU64(*memory, at + 8);
    if (tag == DT_NULL) break;
    if (tag == DT_DEBUG) r_debug = value;
  }
  if (r_debug == 0) return *error = "DT_DEBUG in the core's .dynamic is 0 or missing", std::vector<std::string>{};
  std::vector<std::string> names;
  for (uint64_t node = ReadU64(*memory, r_debug + 8); node != 0 && names.size() < 512;
       node = ReadU64(*memory, node + 24)) {
    auto name = memory->Read(ReadU64(*memory, node + 8), 4096);
    if (!name) return *error = fmt::format("link_map node 0x{:x}: l_name not in the core", node), names;
    names.emplace_back(reinterpret_cast<const char*>(name->data()),
                       strnlen(reinterpret_cast<const char*>(name->data()), name->size()));
  }
  return names;
}

// The shared objects /proc/PID/maps lists (ELF files mapped from offset 0, the executable aside).
std::set<std::string> MappedSharedObjects(int pid) {
  std::set<std::string> paths;
  std::string exe = std::filesystem::read_symlink(fmt::format("/proc/{}/exe", pid)).string();
  std::ifstream maps(fmt::format("/proc/{}/maps", pid));
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream fields(line);
    std::string range, perms, offset, dev, inode, path;
    fields >> range >> perms >> offset >> dev >> inode >> path;
    if (path.empty() || path[0] != '/' || path == exe || offset != "00000000") continue;
    if (testing::ReadWholeFile(path, 4) ==
        "\x7f"
        "ELF")
      paths.insert(path);
  }
  return paths;
}

// gdb finds a core's shared libraries through r_debug (DT_DEBUG in the executable's .dynamic,
// which the loader writes, in the RELRO region it then makes read-only): the core must hold
// that memory, as the kernel's does. Failed before: the written core left out the read-only
// private mappings that had been written to, so DT_DEBUG read as 0 (gdb: "No shared libraries
// loaded at this time").
TEST(CorefileWriterTest, HoldsTheLoaderDataGdbWalksToFindTheSharedLibraries) {
  StoppedCrash crash(1);
  ASSERT_EQ(crash.error(), "");
  std::string path = crash.dir() + "/written.core";
  auto stats = WriteCore(crash.pid(), crash.tids(), crash.info(), path, CoreWriteOptions{});
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  std::string error;
  std::vector<std::string> names = LinkMapNamesFromCore(path, &error);
  ASSERT_EQ(error, "");
  std::set<std::string> listed;
  for (const std::string& name : names) {
    if (!name.empty() && name[0] == '/') listed.insert(std::filesystem::canonical(name).string());
  }
  std::set<std::string> mapped = MappedSharedObjects(crash.pid());
  ASSERT_FALSE(mapped.empty());
  for (const std::string& so : mapped) {
    EXPECT_TRUE(listed.count(std::filesystem::canonical(so).string()))
        << so << " is mapped but not in the core's link_map";
  }
}

// As the kernel (fs/binfmt_elf.c): private file mappings' text is not dumped under the default
// coredump_filter, and is when the process's /proc/PID/coredump_filter asks for it (bit 2).
TEST(CorefileWriterTest, FollowsTheProcesssCoredumpFilter) {
  StoppedCrash crash(0);
  ASSERT_EQ(crash.error(), "");
  auto text_segment_dumped = [&](const std::string& path) {
    std::string bytes = testing::ReadWholeFile(path, 1u << 20);
    Elf64_Ehdr ehdr;
    std::memcpy(&ehdr, bytes.data(), sizeof(ehdr));
    uint64_t rip = 0;
    auto notes = ReadCoreNotesFile(path);
    if (notes.ok() && !notes->threads.empty()) rip = RegisterOf(notes->threads[0], "rip").value_or(0);
    for (size_t i = 0; i < ehdr.e_phnum; ++i) {
      Elf64_Phdr phdr;
      std::memcpy(&phdr, bytes.data() + ehdr.e_phoff + i * sizeof(phdr), sizeof(phdr));
      if (phdr.p_type == PT_LOAD && rip >= phdr.p_vaddr && rip < phdr.p_vaddr + phdr.p_memsz) {
        return phdr.p_filesz == phdr.p_memsz;
      }
    }
    return false;
  };
  std::string plain = crash.dir() + "/default.core";
  ASSERT_TRUE(WriteCore(crash.pid(), crash.tids(), crash.info(), plain, CoreWriteOptions{}).ok());
  EXPECT_FALSE(text_segment_dumped(plain));
  std::ofstream(fmt::format("/proc/{}/coredump_filter", crash.pid())) << "0x37";
  std::string all = crash.dir() + "/mapped-private.core";
  ASSERT_TRUE(WriteCore(crash.pid(), crash.tids(), crash.info(), all, CoreWriteOptions{}).ok());
  EXPECT_TRUE(text_segment_dumped(all));
}

// A private mapping of a /dev/shm file (tmpfs, where NCCL and POSIX shared memory live) that
// was written to is dumped like any written private file mapping: /dev/shm is not a device.
// Failed before: it was skipped as a "device mapping".
TEST(CorefileWriterTest, DumpsWrittenPrivateDevShmMappings) {
  std::string name = fmt::format("/dev/shm/gt-corefile-{}", getpid());
  int fd = open(name.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) GTEST_SKIP() << "no /dev/shm here: " << std::strerror(errno);
  unlink(name.c_str());
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  void* map = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  close(fd);
  ASSERT_NE(map, MAP_FAILED);
  std::memcpy(map, &testing::kMarkerValue, 8);  // the child inherits the written page
  uint64_t address = reinterpret_cast<uint64_t>(map);
  {
    StoppedCrash crash(0);
    ASSERT_EQ(crash.error(), "");
    std::string path = crash.dir() + "/shm.core";
    auto stats = WriteCore(crash.pid(), crash.tids(), crash.info(), path, CoreWriteOptions{});
    ASSERT_TRUE(stats.ok()) << stats.error().message;
    auto notes = ReadCoreNotesFile(path);
    ASSERT_TRUE(notes.ok());
    CoreNotes only_core = *notes;
    only_core.files.clear();
    auto memory = CoreMemory::OpenFile(path, only_core);
    ASSERT_TRUE(memory.ok());
    EXPECT_EQ(ReadU64(*memory, address), testing::kMarkerValue);
  }
  munmap(map, 4096);
}

#if defined(__x86_64__)
// NT_X86_XSTATE holds the XSAVE area at the kernel's size (PTRACE_GETREGSET's), and
// NT_X86_XSAVE_LAYOUT, after every thread's notes, says where each component is (CPUID leaf
// 0xD), as the kernel writes them: gdb checks the area's size against the layout. Failed
// before: there was no layout note (gdb warned "Unexpected size of section `.reg-xstate'").
TEST(CorefileWriterTest, WritesTheXsaveAreaAndItsLayoutAsTheKernelDoes) {
  StoppedCrash crash(1);
  ASSERT_EQ(crash.error(), "");
  std::string xstate(64u << 10, '\0');
  struct iovec iov = {xstate.data(), xstate.size()};
  if (ptrace(PTRACE_GETREGSET, crash.tids()[0], reinterpret_cast<void*>(NT_X86_XSTATE), &iov) != 0) {
    GTEST_SKIP() << "no XSAVE on this CPU";
  }
  std::string path = crash.dir() + "/xstate.core";
  ASSERT_TRUE(WriteCore(crash.pid(), crash.tids(), crash.info(), path, CoreWriteOptions{}).ok());
  std::vector<RawNote> notes = ReadRawNotes(path);
  ASSERT_FALSE(notes.empty());
  size_t xstates = 0;
  for (const RawNote& note : notes) {
    if (note.type != NT_X86_XSTATE) continue;
    ++xstates;
    EXPECT_EQ(note.owner, "LINUX");
    EXPECT_EQ(note.desc.size(), iov.iov_len);
  }
  EXPECT_EQ(xstates, 2u);
  const RawNote& last = notes.back();
  ASSERT_EQ(last.type, 0x205u) << "NT_X86_XSAVE_LAYOUT is not the last note";
  EXPECT_EQ(last.owner, "LINUX");
  uint64_t xcr0 = 0;
  std::memcpy(&xcr0, xstate.data() + 464, 8);
  std::string expected;
  uint32_t end = 0;
  for (uint32_t feature = 2; feature < 64; ++feature) {
    if (!(xcr0 & (1ull << feature))) continue;
    unsigned size = 0, offset = 0, ecx = 0, edx = 0;
    ASSERT_TRUE(__get_cpuid_count(0xd, feature, &size, &offset, &ecx, &edx));
    uint32_t record[4] = {feature, size, offset, 0};
    expected.append(reinterpret_cast<const char*>(record), sizeof(record));
    end = std::max(end, offset + size);
  }
  EXPECT_EQ(last.desc, expected);
  if (end != 0) {
    EXPECT_EQ(end, iov.iov_len);  // the layout covers the area exactly
  }
}
#endif

TEST(CorefileWriterTest, WritesACoreThatWeAndLibdwflRead) {
  StoppedCrash crash(2);
  ASSERT_EQ(crash.error(), "");
  ASSERT_EQ(crash.tids().size(), 3u);
  std::string path = crash.dir() + "/written.core";
  CoreWriteOptions options;
  options.size_cap_bytes = 1ull << 30;  // an ASan child maps much; the test needs little
  auto stats = WriteCore(crash.pid(), crash.tids(), crash.info(), path, options);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_GT(stats->segments, 5u);
  EXPECT_EQ(stats->bytes_written, std::filesystem::file_size(path));
  EXPECT_NE(std::find(stats->skipped.begin(), stats->skipped.end(), "[vvar]"), stats->skipped.end());
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // No temporary file left beside it.
  size_t entries = std::distance(std::filesystem::directory_iterator(crash.dir()), {});
  EXPECT_EQ(entries, 1u);

  auto notes = ReadCoreNotesFile(path);
  ASSERT_TRUE(notes.ok()) << notes.error().message;
  EXPECT_TRUE(notes->warnings.empty()) << notes->warnings.front();
  EXPECT_EQ(notes->machine, "x86_64");
  EXPECT_EQ(notes->signal, SIGSEGV);
  EXPECT_EQ(notes->si_code, SEGV_MAPERR);
  EXPECT_EQ(notes->fault_address, 0u);
  EXPECT_EQ(notes->pid, crash.pid());
  ASSERT_EQ(notes->threads.size(), 3u);
  EXPECT_EQ(notes->threads[0].tid, crash.tids()[0]);
  EXPECT_EQ(notes->threads[0].signal, SIGSEGV);
  EXPECT_EQ(notes->threads[1].signal, std::nullopt);
  ASSERT_TRUE(notes->args.has_value());
  EXPECT_NE(notes->args->find("gt_corefile_test"), std::string::npos);
  uint64_t rip = RegisterOf(notes->threads[0], "rip").value_or(0);
  auto crash_function = reinterpret_cast<uint64_t>(&gt_corefile_test_crash);
  EXPECT_GE(rip, crash_function);
  EXPECT_LT(rip, crash_function + 64);
  bool lists_binary = std::any_of(notes->files.begin(), notes->files.end(),
                                  [&](const auto& f) { return f.path == SelfExe() && rip >= f.start && rip < f.end; });
  EXPECT_TRUE(lists_binary);
  EXPECT_FALSE(notes->auxv.empty());

  auto memory = CoreMemory::OpenFile(path, *notes);
  ASSERT_TRUE(memory.ok()) << memory.error().message;
  EXPECT_EQ(ReadU64(*memory, crash.markers().stack_address), testing::kMarkerValue);
  EXPECT_EQ(ReadU64(*memory, crash.markers().heap_address), testing::kMarkerValue);
  auto code = memory->Read(rip, 16);  // text is not dumped: read from the binary
  ASSERT_TRUE(code.has_value());
  ASSERT_EQ(code->size(), 16u);
  EXPECT_EQ(std::memcmp(code->data(), reinterpret_cast<const void*>(rip), 16), 0);

  std::string error;
  auto threads = testing::UnwindWithDwfl(path, &error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(threads.size(), 3u);
  auto crashed = std::find_if(threads.begin(), threads.end(), [&](const auto& t) { return t.tid == crash.tids()[0]; });
  ASSERT_NE(crashed, threads.end());
  ASSERT_FALSE(crashed->functions.empty());
  EXPECT_EQ(crashed->functions[0], "gt_corefile_test_crash");
  // The caller is found too: the unwind went past the crashing frame.
  EXPECT_GE(crashed->functions.size(), 2u);
}

TEST(CorefileWriterTest, ASmallCapTruncatesSegmentsButKeepsAValidCore) {
  StoppedCrash crash(0);
  ASSERT_EQ(crash.error(), "");
  std::string path = crash.dir() + "/capped.core";
  CoreWriteOptions options;
  options.size_cap_bytes = 256u << 10;
  auto stats = WriteCore(crash.pid(), crash.tids(), crash.info(), path, options);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_GT(stats->segments_truncated, 0u);
  EXPECT_LE(stats->bytes_written, options.size_cap_bytes);
  auto notes = ReadCoreNotesFile(path);
  ASSERT_TRUE(notes.ok()) << notes.error().message;
  EXPECT_EQ(notes->signal, SIGSEGV);
  ASSERT_EQ(notes->threads.size(), 1u);
  // The crashed thread's stack goes first under a cap.
  auto memory = CoreMemory::OpenFile(path, *notes);
  ASSERT_TRUE(memory.ok());
  EXPECT_EQ(ReadU64(*memory, crash.markers().stack_address), testing::kMarkerValue);
  std::string error;
  auto threads = testing::UnwindWithDwfl(path, &error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(threads.size(), 1u);
  ASSERT_FALSE(threads[0].functions.empty());
  EXPECT_EQ(threads[0].functions[0], "gt_corefile_test_crash");

  // Cap 0: notes only; still a core.
  std::string notes_only = crash.dir() + "/notes-only.core";
  options.size_cap_bytes = 0;
  stats = WriteCore(crash.pid(), crash.tids(), crash.info(), notes_only, options);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_LT(stats->bytes_written, 64u << 10);
  notes = ReadCoreNotesFile(notes_only);
  ASSERT_TRUE(notes.ok()) << notes.error().message;
  EXPECT_EQ(notes->fault_address, 0u);
}

TEST(CorefileWriterTest, AThreadNotStoppedByUsIsAnError) {
  TempDir dir;
  pid_t child = fork();
  if (child == 0) {
    for (;;) pause();
  }
  siginfo_t info{};
  info.si_signo = SIGSEGV;
  std::string path = dir.path() + "/x.core";
  auto stats = WriteCore(child, {child}, info, path, CoreWriteOptions{});
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.error().message, fmt::format("pid {0} thread {0}: PTRACE_GETREGSET NT_PRSTATUS: ESRCH (is the thread "
                                               "ptrace-stopped by this thread?)",
                                               child));
  EXPECT_FALSE(std::filesystem::exists(path));
  auto none = WriteCore(child, {}, info, path, CoreWriteOptions{});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message, fmt::format("{}: no thread of pid {} to write", path, child));
}

// Writes the fuzz seed corpus (notes-only cores). Run by hand, from the source root:
//   GT_CORE_CORPUS_DIR=fuzz/corpus/core_notes build/gt_corefile_test
//     --gtest_also_run_disabled_tests --gtest_filter='*WriteFuzzSeedCorpus'
TEST(CorefileWriterTest, DISABLED_WriteFuzzSeedCorpus) {
  const char* out = std::getenv("GT_CORE_CORPUS_DIR");
  ASSERT_NE(out, nullptr) << "set GT_CORE_CORPUS_DIR";
  for (int threads : {0, 2}) {
    StoppedCrash crash(threads);
    ASSERT_EQ(crash.error(), "");
    std::string path = std::string(out) + "/written-" + std::to_string(threads + 1) + "-thread.core";
    CoreWriteOptions options;
    options.size_cap_bytes = 0;
    auto stats = WriteCore(crash.pid(), crash.tids(), crash.info(), path, options);
    ASSERT_TRUE(stats.ok()) << stats.error().message;
  }
}

}  // namespace
}  // namespace gputriage::corefile
