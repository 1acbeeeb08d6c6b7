#include "corefile/core_writer.h"

#include <elf.h>
#include <fcntl.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>

#include "core/maps.h"
#include "core/scoped_fd.h"
#include "core/text.h"
#include "corefile/elf_image.h"

namespace gputriage::corefile {
namespace {

using core::ScopedFd;

#if defined(__x86_64__)
constexpr uint16_t kMachine = EM_X86_64;
constexpr size_t kRegsBytes = 27 * 8;  // struct user_regs_struct
#elif defined(__aarch64__)
constexpr uint16_t kMachine = EM_AARCH64;
constexpr size_t kRegsBytes = 34 * 8;                // struct user_pt_regs
#else
constexpr uint16_t kMachine = EM_NONE;
constexpr size_t kRegsBytes = 0;
#endif

// struct elf_prstatus (64-bit): the common part is 112 bytes, then pr_reg, then pr_fpvalid.
constexpr size_t kPrstatusCommon = 112;
constexpr size_t kPrstatusBytes = (kPrstatusCommon + kRegsBytes + 4 + 7) / 8 * 8;
constexpr size_t kPrpsinfoBytes = 136;
constexpr size_t kSiginfoBytes = 128;
#ifndef NT_X86_XSTATE
constexpr uint32_t NT_X86_XSTATE = 0x202;
#endif
#ifndef NT_386_IOPERM
constexpr uint32_t NT_386_IOPERM = 0x201;
#endif
#ifndef NT_X86_SHSTK
constexpr uint32_t NT_X86_SHSTK = 0x204;
#endif
#ifndef NT_X86_XSAVE_LAYOUT
constexpr uint32_t NT_X86_XSAVE_LAYOUT = 0x205;
#endif
// The XSAVE area is 11008 bytes with AMX today; the kernel caps the read at the real size.
constexpr size_t kMaxXstateBytes = 64u << 10;
// Where the XSAVE area of NT_X86_XSTATE has the kernel's user feature mask (XCR0): the first
// 8 bytes of the software-reserved bytes 464..511 of the legacy region.
constexpr size_t kXstateXcr0Offset = 464;
// Bytes read from the tracee per process_vm_readv call: bounds our buffer.
constexpr size_t kChunkBytes = 1u << 20;
// The ELF program header count field is 16 bits; PN_XNUM (0xffff) would need a section header.
constexpr size_t kMaxPhdrs = PN_XNUM - 1;

std::string Errno(int error) {
  switch (error) {
    case ESRCH:
      return "ESRCH";
    case EPERM:
      return "EPERM";
    case EIO:
      return "EIO";
    case EFAULT:
      return "EFAULT";
    case EINVAL:
      return "EINVAL";
    case EACCES:
      return "EACCES";
    default:
      return std::strerror(error);
  }
}

// Reads a /proc file whole (they report size 0, so read until EOF), at most `max_bytes`.
core::Result<std::string> ReadProcFile(const std::string& path, size_t max_bytes = 256u << 20) {
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return core::MakeError("{}: cannot open: {}", path, std::strerror(errno));
  std::string text;
  char buffer[65536];
  while (text.size() < max_bytes) {
    ssize_t got = read(fd.get(), buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return core::MakeError("{}: read failed: {}", path, std::strerror(errno));
    if (got == 0) break;
    text.append(buffer, static_cast<size_t>(got));
  }
  return text;
}

// One map line of /proc/PID/smaps (or maps), with what the kernel's vma_dump_size() looks at.
struct MapEntry : core::Mapping {
  bool dont_dump = false;  // VmFlags "dd" (MADV_DONTDUMP)
  bool io = false;         // VmFlags "io" or "pf": device memory, never read it
  bool hugetlb = false;    // VmFlags "ht"
  /// Whether the mapping holds anonymous pages (smaps "Anonymous:" or "Swap:" above 0 kB): a
  /// private file mapping that was written to (the relocated GOT and .dynamic of a RELRO
  /// region, now read-only, are), the kernel's "vma->anon_vma". nullopt without smaps.
  std::optional<bool> anon_pages;
};

// smaps "Anonymous:   12 kB" / "Swap:   0 kB": true when the size is above 0.
bool NonZeroKb(std::string_view line, std::string_view key) {
  if (!core::StartsWith(line, key)) return false;
  auto words = core::SplitWhitespace(line.substr(key.size()));
  return !words.empty() && core::ParseU64(words.front()).value_or(0) > 0;
}

// /proc/PID/smaps gives VmFlags; /proc/PID/maps is the fallback when smaps is not built in.
core::Result<std::vector<MapEntry>> ReadMaps(int pid) {
  auto smaps = ReadProcFile(fmt::format("/proc/{}/smaps", pid));
  bool have_flags = smaps.ok();
  std::string text;
  if (have_flags) {
    text = std::move(smaps).value();
  } else {
    GT_ASSIGN_OR_RETURN(text, ReadProcFile(fmt::format("/proc/{}/maps", pid)));
  }
  std::vector<MapEntry> maps;
  for (std::string_view line : core::SplitLines(text)) {
    if (have_flags && !maps.empty() && (core::StartsWith(line, "Anonymous:") || core::StartsWith(line, "Swap:"))) {
      bool more = NonZeroKb(line, "Anonymous:") || NonZeroKb(line, "Swap:");
      maps.back().anon_pages = maps.back().anon_pages.value_or(false) || more;
      continue;
    }
    if (have_flags && core::StartsWith(line, "VmFlags:")) {
      if (maps.empty()) continue;
      for (std::string_view flag : core::SplitWhitespace(line.substr(8))) {
        if (flag == "dd") maps.back().dont_dump = true;
        if (flag == "io" || flag == "pf") maps.back().io = true;
        if (flag == "ht") maps.back().hugetlb = true;
      }
      continue;
    }
    // smaps detail lines ("Rss:   4 kB") have a ':' in the first field; map lines do not.
    auto first_space = line.find(' ');
    if (line.substr(0, first_space).find(':') != std::string_view::npos) continue;
    if (auto mapping = core::ParseMapsLine(line)) maps.push_back(MapEntry{std::move(*mapping)});
  }
  if (maps.empty()) return core::MakeError("/proc/{}/maps: no mappings (process gone?)", pid);
  return maps;
}

// Fields of /proc/PID/stat after the ")" that ends comm: index 0 is field 3 (state).
std::vector<std::string_view> StatFields(const std::string& stat) {
  auto paren = stat.rfind(')');
  if (paren == std::string::npos) return {};
  return core::SplitWhitespace(std::string_view(stat).substr(paren + 1));
}

uint64_t StatField(const std::vector<std::string_view>& fields, size_t field_number) {
  size_t index = field_number - 3;
  if (index >= fields.size()) return 0;
  if (auto value = core::ParseI64(fields[index])) return static_cast<uint64_t>(*value);
  return 0;
}

// A "Key:\tvalue" line of /proc/PID/status, first whitespace-separated word of the value.
std::string_view StatusWord(std::string_view status, std::string_view key) {
  for (std::string_view line : core::SplitLines(status)) {
    if (!core::StartsWith(line, key) || line.size() <= key.size() || line[key.size()] != ':') {
      continue;
    }
    auto words = core::SplitWhitespace(line.substr(key.size() + 1));
    return words.empty() ? std::string_view() : words.front();
  }
  return {};
}

// Little-endian field writers into a fixed descriptor we own (sizes are ours, not untrusted).
template <typename T>
void Put(std::string& buffer, size_t offset, T value) {
  std::memcpy(buffer.data() + offset, &value, sizeof(T));
}

void AppendNote(std::string& out, std::string_view owner, uint32_t type, std::string_view desc) {
  auto pad4 = [&out] { out.append((4 - out.size() % 4) % 4, '\0'); };
  uint32_t header[3] = {static_cast<uint32_t>(owner.size() + 1), static_cast<uint32_t>(desc.size()), type};
  out.append(reinterpret_cast<const char*>(header), sizeof(header));
  out.append(owner);
  out.push_back('\0');
  pad4();
  out.append(desc);
  pad4();
}

struct ThreadRegs {
  int tid = 0;
  std::string regs;                   // pr_reg
  std::optional<std::string> fpregs;  // NT_PRFPREG
  // x86_64, when the kernel has them for this thread (as its regsets' active() says).
  std::optional<std::string> ioperm;  // NT_386_IOPERM: only after ioperm(2)
  std::optional<std::string> xstate;  // NT_X86_XSTATE: the XSAVE area, at the size the kernel uses
  std::optional<std::string> shstk;   // NT_X86_SHSTK: only with user shadow stacks enabled
  std::string stat, status;           // /proc/PID/task/TID/{stat,status}
};

// PTRACE_GETREGSET `type`, up to `max_bytes`; the errno on failure.
std::optional<std::string> GetRegset(int tid, int type, size_t max_bytes, int* error) {
  std::string buffer(max_bytes, '\0');
  struct iovec iov = {buffer.data(), buffer.size()};
  if (ptrace(PTRACE_GETREGSET, tid, reinterpret_cast<void*>(static_cast<uintptr_t>(type)), &iov) != 0) {
    *error = errno;
    return std::nullopt;
  }
  buffer.resize(iov.iov_len);
  return buffer;
}

core::Result<ThreadRegs> ReadThread(int pid, int tid) {
  int error = 0;
  auto regs = GetRegset(tid, NT_PRSTATUS, 4096, &error);
  if (!regs) {
    return core::MakeError(
        "pid {} thread {}: PTRACE_GETREGSET NT_PRSTATUS: {} (is the thread ptrace-stopped by "
        "this thread?)",
        pid, tid, Errno(error));
  }
  if (regs->size() != kRegsBytes) {
    return core::MakeError(
        "pid {} thread {}: PTRACE_GETREGSET NT_PRSTATUS gave {} bytes of registers, expected {}: "
        "a 32-bit process? Only 64-bit processes are supported",
        pid, tid, regs->size(), kRegsBytes);
  }
  ThreadRegs thread;
  thread.tid = tid;
  thread.regs = std::move(*regs);
  thread.fpregs = GetRegset(tid, NT_PRFPREG, 4096, &error);
#if defined(__x86_64__)
  // The kernel shortens iov_len to the regset's size: the XSAVE area's size for this CPU and
  // kernel (CPUID leaf 0xD; 11008 bytes with AMX), which is what its own cores hold.
  thread.ioperm = GetRegset(tid, NT_386_IOPERM, 8192, &error);
  thread.xstate = GetRegset(tid, NT_X86_XSTATE, kMaxXstateBytes, &error);
  thread.shstk = GetRegset(tid, NT_X86_SHSTK, 64, &error);
#endif
  thread.stat = ReadProcFile(fmt::format("/proc/{}/task/{}/stat", pid, tid)).value_or("");
  thread.status = ReadProcFile(fmt::format("/proc/{}/task/{}/status", pid, tid)).value_or("");
  return thread;
}

uint64_t StackPointer(const ThreadRegs& thread) {
  uint64_t sp = 0;
#if defined(__x86_64__)
  std::memcpy(&sp, thread.regs.data() + 19 * 8, 8);  // user_regs_struct.rsp
#elif defined(__aarch64__)
  std::memcpy(&sp, thread.regs.data() + 31 * 8, 8);  // user_pt_regs.sp
#endif
  return sp;
}

std::string Prstatus(const ThreadRegs& thread, int signal) {
  std::string desc(kPrstatusBytes, '\0');
  auto fields = StatFields(thread.stat);
  Put<int32_t>(desc, 0, signal);                         // pr_info.si_signo
  Put<int16_t>(desc, 12, static_cast<int16_t>(signal));  // pr_cursig
  Put<uint64_t>(desc, 16, core::ParseU64(StatusWord(thread.status, "SigPnd"), 16).value_or(0));
  Put<uint64_t>(desc, 24, core::ParseU64(StatusWord(thread.status, "SigBlk"), 16).value_or(0));
  Put<int32_t>(desc, 32, thread.tid);
  Put<int32_t>(desc, 36, static_cast<int32_t>(StatField(fields, 4)));  // ppid
  Put<int32_t>(desc, 40, static_cast<int32_t>(StatField(fields, 5)));  // pgrp
  Put<int32_t>(desc, 44, static_cast<int32_t>(StatField(fields, 6)));  // session
  long ticks = sysconf(_SC_CLK_TCK);
  if (ticks <= 0) ticks = 100;
  for (size_t i = 0; i < 4; ++i) {  // utime, stime, cutime, cstime: timevals at 48, 64, 80, 96
    uint64_t value = StatField(fields, 14 + i);
    Put<int64_t>(desc, 48 + i * 16, static_cast<int64_t>(value / ticks));
    Put<int64_t>(desc, 56 + i * 16, static_cast<int64_t>(value % ticks * (1000000 / ticks)));
  }
  std::memcpy(desc.data() + kPrstatusCommon, thread.regs.data(), kRegsBytes);
  Put<int32_t>(desc, kPrstatusCommon + kRegsBytes, thread.fpregs ? 1 : 0);  // pr_fpvalid
  return desc;
}

std::string Prpsinfo(int pid) {
  std::string desc(kPrpsinfoBytes, '\0');
  std::string stat = ReadProcFile(fmt::format("/proc/{}/stat", pid)).value_or("");
  std::string status = ReadProcFile(fmt::format("/proc/{}/status", pid)).value_or("");
  std::string comm = ReadProcFile(fmt::format("/proc/{}/comm", pid)).value_or("");
  std::string cmdline = ReadProcFile(fmt::format("/proc/{}/cmdline", pid), 4096).value_or("");
  auto fields = StatFields(stat);
  char state = fields.empty() || fields[0].empty() ? '.' : fields[0][0];
  const char* states = "RSDTZW";
  const char* found = std::strchr(states, state);
  desc[0] = static_cast<char>(found != nullptr && state != '\0' ? found - states : 0);  // pr_state
  desc[1] = state;                                                                      // pr_sname
  desc[2] = state == 'Z' ? 1 : 0;                                                       // pr_zomb
  desc[3] = static_cast<char>(static_cast<int64_t>(StatField(fields, 19)));             // pr_nice
  Put<uint64_t>(desc, 8, StatField(fields, 9));                                         // pr_flag
  Put<uint32_t>(desc, 16, static_cast<uint32_t>(core::ParseU64(StatusWord(status, "Uid")).value_or(0)));
  Put<uint32_t>(desc, 20, static_cast<uint32_t>(core::ParseU64(StatusWord(status, "Gid")).value_or(0)));
  Put<int32_t>(desc, 24, pid);
  Put<int32_t>(desc, 28, static_cast<int32_t>(StatField(fields, 4)));
  Put<int32_t>(desc, 32, static_cast<int32_t>(StatField(fields, 5)));
  Put<int32_t>(desc, 36, static_cast<int32_t>(StatField(fields, 6)));
  std::string_view name = core::Trim(comm);
  std::memcpy(desc.data() + 40, name.data(), std::min<size_t>(name.size(), 15));
  // As the kernel does: the first 79 bytes of the command line, NULs as spaces.
  size_t args = std::min<size_t>(cmdline.size(), 79);
  for (size_t i = 0; i < args; ++i) desc[56 + i] = cmdline[i] == '\0' ? ' ' : cmdline[i];
  return desc;
}

bool IsAnonymousLike(const MapEntry& map) {
  // Shared anonymous memory and SysV/memfd shm are files only in name: dump them like anon.
  return map.inode == 0 || core::StartsWith(map.path, "/dev/zero") || core::StartsWith(map.path, "/SYSV") ||
         core::StartsWith(map.path, "/memfd:");
}

// NT_X86_XSAVE_LAYOUT's records (struct x86_xfeat_component {u32 type, size, offset, flags}),
// one per extended feature (bit 2 and up) of the XSAVE area's XCR0, with the size and offset
// CPUID leaf 0xD gives for it, as the kernel's dump_xsave_layout_desc(). "" off x86_64 or when
// the area is too short to hold XCR0.
std::string XsaveLayout(std::string_view xstate) {
  std::string records;
#if defined(__x86_64__)
  if (xstate.size() < kXstateXcr0Offset + 8) return records;
  uint64_t xcr0 = 0;
  std::memcpy(&xcr0, xstate.data() + kXstateXcr0Offset, 8);
  for (uint32_t feature = 2; feature < 64; ++feature) {
    if (!(xcr0 & (1ull << feature))) continue;
    unsigned size = 0, offset = 0, ecx = 0, edx = 0;
    if (!__get_cpuid_count(0xd, feature, &size, &offset, &ecx, &edx)) return "";
    uint32_t record[4] = {feature, size, offset, 0};
    records.append(reinterpret_cast<const char*>(record), sizeof(record));
  }
#else
  (void)xstate;
#endif
  return records;
}

std::string NtFile(const std::vector<MapEntry>& maps, uint64_t page_size) {
  std::string table, names;
  uint64_t count = 0;
  for (const MapEntry& map : maps) {
    // As the kernel's fill_files_note(): every mapping of a file, shm and memfd ones too.
    if (map.path.empty() || map.path.front() != '/') continue;
    uint64_t entry[3] = {map.start, map.end, map.file_offset / page_size};
    table.append(reinterpret_cast<const char*>(entry), sizeof(entry));
    names.append(map.path);
    names.push_back('\0');
    ++count;
  }
  uint64_t header[2] = {count, page_size};
  return std::string(reinterpret_cast<const char*>(header), sizeof(header)) + table + names;
}

// What to write of one mapping.
struct SegmentPlan {
  uint64_t want_bytes = 0;          // contents we would like in the core
  std::string skip_reason;          // why nothing is written, for CoreWriteStats::skipped
  uint64_t offset = 0, filesz = 0;  // decided while writing
};

class CoreFileWriter {
 public:
  CoreFileWriter(int pid, ScopedFd fd, std::string temp_path)
      : pid_(pid), fd_(std::move(fd)), temp_path_(std::move(temp_path)) {}
  ~CoreFileWriter() {
    if (!committed_) unlink(temp_path_.c_str());
  }

  core::Result<void> WriteAt(uint64_t offset, const void* data, size_t size) {
    const char* bytes = static_cast<const char*>(data);
    size_t done = 0;
    while (done < size) {
      ssize_t wrote = pwrite(fd_.get(), bytes + done, size - done, static_cast<off_t>(offset + done));
      if (wrote < 0 && errno == EINTR) continue;
      if (wrote <= 0) {
        return core::MakeError("{}: write of {} bytes at offset 0x{:x} failed: {}", temp_path_, size - done,
                               offset + done, std::strerror(errno));
      }
      done += static_cast<size_t>(wrote);
    }
    return {};
  }

  // Copies [start, start + length) of the tracee to file offset `offset`; unreadable pages
  // stay holes (zeros). Returns the bytes that were readable; all-zero pages are not written.
  core::Result<uint64_t> CopyMemory(uint64_t start, uint64_t length, uint64_t offset) {
    uint64_t readable = 0;
    for (uint64_t done = 0; done < length;) {
      size_t chunk = static_cast<size_t>(std::min<uint64_t>(kChunkBytes, length - done));
      size_t got = ReadTracee(start + done, chunk);
      if (got == 0) {  // skip one page
        done += std::min<uint64_t>(page_size_, length - done);
        continue;
      }
      for (size_t page = 0; page < got; page += page_size_) {
        size_t n = std::min<size_t>(page_size_, got - page);
        const char* p = buffer_.data() + page;
        bool zero = p[0] == 0 && std::memcmp(p, p + 1, n - 1) == 0;
        if (!zero) {
          auto written = WriteAt(offset + done + page, p, n);
          if (!written.ok()) return written.error();
        }
      }
      readable += got;
      done += got;
    }
    return readable;
  }

  core::Result<void> Commit(const std::string& path, uint64_t size) {
    if (ftruncate(fd_.get(), static_cast<off_t>(size)) != 0) {
      return core::MakeError("{}: cannot set the size to {} bytes: {}", temp_path_, size, std::strerror(errno));
    }
    if (fchmod(fd_.get(), 0600) != 0 || close(fd_.release()) != 0) {
      return core::MakeError("{}: cannot finish: {}", temp_path_, std::strerror(errno));
    }
    if (rename(temp_path_.c_str(), path.c_str()) != 0) {
      return core::MakeError("{}: cannot rename to {}: {}", temp_path_, path, std::strerror(errno));
    }
    committed_ = true;
    return {};
  }

  uint64_t page_size() const { return page_size_; }

  // True when the tracee's memory at `address` starts with the ELF magic.
  bool LooksLikeElf(uint64_t address) {
    return ReadTracee(address, SELFMAG) == SELFMAG && std::memcmp(buffer_.data(), ELFMAG, SELFMAG) == 0;
  }

  // Reads up to `length` (<= kChunkBytes) bytes at `address` into buffer_; returns the count.
  size_t ReadTracee(uint64_t address, size_t length) {
    buffer_.resize(kChunkBytes);
    struct iovec local = {buffer_.data(), length};
    struct iovec remote = {reinterpret_cast<void*>(address), length};
    ssize_t got = process_vm_readv(pid_, &local, 1, &remote, 1, 0);
    if (got > 0) return static_cast<size_t>(got);
    // process_vm_readv can be refused (seccomp, older kernels); /proc/PID/mem works for the
    // tracer.
    if (!mem_.valid() && !mem_tried_) {
      mem_tried_ = true;
      mem_ = ScopedFd(open(fmt::format("/proc/{}/mem", pid_).c_str(), O_RDONLY | O_CLOEXEC));
    }
    if (!mem_.valid()) return 0;
    ssize_t read = pread(mem_.get(), buffer_.data(), length, static_cast<off_t>(address));
    return read > 0 ? static_cast<size_t>(read) : 0;
  }

 private:
  int pid_;
  ScopedFd fd_;
  std::string temp_path_;
  ScopedFd mem_;
  bool mem_tried_ = false;
  bool committed_ = false;
  std::vector<char> buffer_;
  uint64_t page_size_ = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
};

uint32_t SegmentFlags(const std::string& perms) {
  uint32_t flags = 0;
  if (perms[0] == 'r') flags |= PF_R;
  if (perms[1] == 'w') flags |= PF_W;
  if (perms[2] == 'x') flags |= PF_X;
  return flags;
}

// The bits of /proc/PID/coredump_filter (core(5)), which the kernel's vma_dump_size() applies.
enum DumpFilterBit : uint32_t {
  kAnonPrivate = 1u << 0,
  kAnonShared = 1u << 1,
  kMappedPrivate = 1u << 2,
  kMappedShared = 1u << 3,
  kElfHeaders = 1u << 4,
  kHugetlbPrivate = 1u << 5,
  kHugetlbShared = 1u << 6,
};
// The kernel's default (MMF_DUMP_FILTER_DEFAULT) when the file cannot be read.
constexpr uint32_t kDefaultDumpFilter = kAnonPrivate | kAnonShared | kElfHeaders | kHugetlbPrivate;

uint32_t ReadDumpFilter(int pid) {
  auto text = ReadProcFile(fmt::format("/proc/{}/coredump_filter", pid), 64);
  if (!text.ok()) return kDefaultDumpFilter;
  auto value = core::ParseU64(core::Trim(*text), 16);
  return value ? static_cast<uint32_t>(*value) : kDefaultDumpFilter;
}

std::string Range(const MapEntry& map) {
  return fmt::format("0x{:x}-0x{:x} {}", map.start, map.end, map.path.empty() ? "" : map.path + " ");
}

// What the kernel's vma_dump_size() dumps of a private file mapping or a private anonymous one:
// all of it once written to (it holds anonymous pages: data, the relocated RELRO region with
// .dynamic and the GOT, the heap), all of a file mapping when the filter asks for them, else
// only an ELF file's first page (its build id and program headers, for debuggers to find it).
uint64_t PrivateDumpBytes(const MapEntry& map, uint32_t filter, CoreFileWriter& writer) {
  uint64_t size = map.end - map.start;
  bool file_backed = !IsAnonymousLike(map);
  // Without smaps: anonymous memory and writable file mappings may have been written to.
  bool written = map.anon_pages.value_or(!file_backed || map.perms[1] == 'w');
  if (written && (filter & kAnonPrivate)) return size;
  if (!file_backed) return 0;
  if (filter & kMappedPrivate) return size;
  if ((filter & kElfHeaders) && map.file_offset == 0 && map.perms[0] == 'r' && writer.LooksLikeElf(map.start)) {
    return std::min(size, writer.page_size());
  }
  return 0;
}

// Decides, without reading memory, what a mapping's PT_LOAD should hold: the kernel's
// vma_dump_size() (fs/binfmt_elf.c) under `filter`.
SegmentPlan PlanSegment(const MapEntry& map, uint32_t filter, CoreFileWriter& writer) {
  SegmentPlan plan;
  uint64_t size = map.end - map.start;
  if (map.path == "[vvar]" || map.path == "[vvar_vclock]" || map.path == "[vsyscall]") {
    plan.skip_reason = map.path;
    return plan;
  }
  if (map.path == "[vdso]") {
    plan.want_bytes = size;  // always dumped
    return plan;
  }
  if (map.dont_dump) {
    plan.skip_reason = Range(map) + "(MADV_DONTDUMP)";
    return plan;
  }
  bool shared = map.perms[3] == 's';
  if (map.hugetlb) {
    plan.want_bytes = (filter & (shared ? kHugetlbShared : kHugetlbPrivate)) ? size : 0;
    return plan;
  }
  // /dev/shm is tmpfs (POSIX shared memory, NCCL's buffers): files, not devices.
  bool device = map.io || (core::StartsWith(map.path, "/dev/") && !core::StartsWith(map.path, "/dev/shm/") &&
                           !IsAnonymousLike(map));
  if (device) {
    plan.skip_reason =
        (map.path.empty() ? fmt::format("0x{:x}-0x{:x}", map.start, map.end) : map.path) + " (device mapping)";
    return plan;
  }
  if (shared) {
    // Shared anonymous memory, SysV shm and memfd are files without a name on disk.
    bool anon = IsAnonymousLike(map) || core::EndsWith(map.path, " (deleted)");
    plan.want_bytes = (filter & (anon ? kAnonShared : kMappedShared)) && map.perms[0] == 'r' ? size : 0;
    return plan;
  }
  // Never-written PROT_NONE reservations (guard pages, allocator arenas) have no pages to dump.
  if (map.perms[0] != 'r' && !map.anon_pages.value_or(false)) return plan;
  plan.want_bytes = PrivateDumpBytes(map, filter, writer);
  return plan;
}

// Registers first: the first thread (the one that took the signal) must be readable, else the
// core fails before anything touches the disk; a later thread that cannot be read is listed in
// stats->skipped.
core::Result<std::vector<ThreadRegs>> ReadThreads(int pid, const std::vector<int>& tids, CoreWriteStats* stats) {
  std::vector<ThreadRegs> threads;
  for (size_t i = 0; i < tids.size(); ++i) {
    auto thread = ReadThread(pid, tids[i]);
    if (!thread.ok()) {
      if (i == 0) return thread.error();
      stats->skipped.push_back(fmt::format("thread {} ({})", tids[i], thread.error().message));
      continue;
    }
    threads.push_back(std::move(thread).value());
  }
  return threads;
}

// The mappings of /proc/PID/maps, at most as many as the 16-bit program header count leaves
// for PT_LOADs next to the PT_NOTE; the ones cut are counted in stats->skipped.
core::Result<std::vector<MapEntry>> ReadDumpedMaps(int pid, CoreWriteStats* stats) {
  GT_ASSIGN_OR_RETURN(std::vector<MapEntry> maps, ReadMaps(pid));
  if (maps.size() > kMaxPhdrs - 1) {
    stats->skipped.push_back(fmt::format("{} mappings above the first {} (ELF program header limit)",
                                         maps.size() - (kMaxPhdrs - 1), kMaxPhdrs - 1));
    maps.resize(kMaxPhdrs - 1);
  }
  return maps;
}

// The PT_NOTE contents, in the kernel's order: the signalled thread's prstatus, then the
// process-wide notes (prpsinfo, siginfo, auxv, file table), then its other register sets; then
// each further thread's.
std::string BuildNotes(int pid, const std::vector<ThreadRegs>& threads, const siginfo_t& info,
                       const std::vector<MapEntry>& maps, uint64_t page_size) {
  std::string notes;
  std::string auxv = ReadProcFile(fmt::format("/proc/{}/auxv", pid), 1u << 20).value_or("");
  for (size_t i = 0; i < threads.size(); ++i) {
    const ThreadRegs& thread = threads[i];
    AppendNote(notes, "CORE", NT_PRSTATUS, Prstatus(thread, i == 0 ? info.si_signo : 0));
    if (i == 0) {
      AppendNote(notes, "CORE", NT_PRPSINFO, Prpsinfo(pid));
      AppendNote(notes, "CORE", NT_SIGINFO, std::string_view(reinterpret_cast<const char*>(&info), kSiginfoBytes));
      if (!auxv.empty()) AppendNote(notes, "CORE", NT_AUXV, auxv);
      AppendNote(notes, "CORE", NT_FILE, NtFile(maps, page_size));
    }
    if (thread.fpregs) AppendNote(notes, "CORE", NT_PRFPREG, *thread.fpregs);
    if (thread.ioperm) AppendNote(notes, "LINUX", NT_386_IOPERM, *thread.ioperm);
    if (thread.xstate) AppendNote(notes, "LINUX", NT_X86_XSTATE, *thread.xstate);
    if (thread.shstk) AppendNote(notes, "LINUX", NT_X86_SHSTK, *thread.shstk);
  }
  // After every thread, as elf_coredump_extra_notes_write() does: where each XSAVE component
  // is. gdb 15+ reads the XSAVE area through it; without it, it guesses from the area's size and
  // warns "Unexpected size of section `.reg-xstate'" on a size it does not know (AMX).
  if (!threads.empty() && threads.front().xstate) {
    std::string layout = XsaveLayout(*threads.front().xstate);
    if (!layout.empty()) AppendNote(notes, "LINUX", NT_X86_XSAVE_LAYOUT, layout);
  }
  return notes;
}

// What to write of each mapping (PlanSegment, in map order); skip reasons go to stats->skipped.
std::vector<SegmentPlan> PlanSegments(const std::vector<MapEntry>& maps, uint32_t filter, CoreFileWriter& writer,
                                      CoreWriteStats* stats) {
  std::vector<SegmentPlan> plans;
  plans.reserve(maps.size());
  for (const MapEntry& map : maps) {
    SegmentPlan plan = PlanSegment(map, filter, writer);
    if (!plan.skip_reason.empty()) stats->skipped.push_back(plan.skip_reason);
    plans.push_back(std::move(plan));
  }
  return plans;
}

// The indices of `maps` in writing order: the mappings that hold a thread's stack pointer first
// (most valuable under a size cap), then the rest in address order.
std::vector<size_t> WriteOrder(const std::vector<MapEntry>& maps, const std::vector<ThreadRegs>& threads) {
  std::vector<size_t> order;
  for (size_t i = 0; i < maps.size(); ++i) {
    bool is_stack = std::any_of(threads.begin(), threads.end(), [&](const ThreadRegs& t) {
      uint64_t sp = StackPointer(t);
      return sp >= maps[i].start && sp < maps[i].end;
    });
    if (is_stack) order.push_back(i);
  }
  for (size_t i = 0; i < maps.size(); ++i) {
    if (std::find(order.begin(), order.end(), i) == order.end()) order.push_back(i);
  }
  return order;
}

// Copies the wanted contents of each mapping, in `order`, page-aligned from `data_offset` on,
// and records each one's offset and file size in `plans`. A mapping over the size cap or
// unreadable keeps p_filesz 0 and is counted in stats. Returns the end of the last segment
// written; fails only when the file cannot be written.
core::Result<uint64_t> WriteSegments(CoreFileWriter& writer, const std::vector<MapEntry>& maps,
                                     const std::vector<size_t>& order, uint64_t data_offset,
                                     const CoreWriteOptions& options, std::vector<SegmentPlan>* plans,
                                     CoreWriteStats* stats) {
  uint64_t page_size = writer.page_size();
  uint64_t end_offset = data_offset;
  for (size_t i : order) {
    SegmentPlan& plan = (*plans)[i];
    plan.offset = end_offset;
    if (plan.want_bytes == 0) continue;
    if (end_offset + plan.want_bytes > options.size_cap_bytes) {
      ++stats->segments_truncated;
      stats->skipped.push_back(Range(maps[i]) + "(over the size cap)");
      continue;
    }
    GT_ASSIGN_OR_RETURN(uint64_t readable, writer.CopyMemory(maps[i].start, plan.want_bytes, end_offset));
    if (readable == 0) {
      ++stats->segments_truncated;
      stats->skipped.push_back(Range(maps[i]) + "(unreadable)");
      continue;
    }
    plan.filesz = plan.want_bytes;
    end_offset += (plan.want_bytes + page_size - 1) / page_size * page_size;
  }
  return end_offset;
}

// Writes the ELF header, the program headers (the PT_NOTE, then one PT_LOAD per mapping as
// `plans` placed it) and the notes at `notes_offset`; last, now that every segment's place is
// known.
core::Result<void> WriteHeaders(CoreFileWriter& writer, const std::vector<MapEntry>& maps,
                                const std::vector<SegmentPlan>& plans, const std::string& notes,
                                uint64_t notes_offset) {
  size_t phnum = maps.size() + 1;
  Elf64_Ehdr ehdr = {};
  std::memcpy(ehdr.e_ident, ELFMAG, SELFMAG);
  ehdr.e_ident[EI_CLASS] = ELFCLASS64;
  ehdr.e_ident[EI_DATA] = ELFDATA2LSB;
  ehdr.e_ident[EI_VERSION] = EV_CURRENT;
  ehdr.e_ident[EI_OSABI] = ELFOSABI_NONE;
  ehdr.e_type = ET_CORE;
  ehdr.e_machine = kMachine;
  ehdr.e_version = EV_CURRENT;
  ehdr.e_phoff = sizeof(Elf64_Ehdr);
  ehdr.e_ehsize = sizeof(Elf64_Ehdr);
  ehdr.e_phentsize = sizeof(Elf64_Phdr);
  ehdr.e_phnum = static_cast<uint16_t>(phnum);
  std::vector<Elf64_Phdr> phdrs(phnum);
  phdrs[0].p_type = PT_NOTE;
  phdrs[0].p_offset = notes_offset;
  phdrs[0].p_filesz = notes.size();
  phdrs[0].p_align = 4;
  for (size_t i = 0; i < maps.size(); ++i) {
    Elf64_Phdr& phdr = phdrs[i + 1];
    phdr.p_type = PT_LOAD;
    phdr.p_flags = SegmentFlags(maps[i].perms);
    phdr.p_offset = plans[i].offset;
    phdr.p_vaddr = maps[i].start;
    phdr.p_filesz = plans[i].filesz;
    phdr.p_memsz = maps[i].end - maps[i].start;
    phdr.p_align = writer.page_size();
  }
  GT_RETURN_IF_ERROR(writer.WriteAt(0, &ehdr, sizeof(ehdr)));
  GT_RETURN_IF_ERROR(writer.WriteAt(sizeof(ehdr), phdrs.data(), phdrs.size() * sizeof(Elf64_Phdr)));
  GT_RETURN_IF_ERROR(writer.WriteAt(notes_offset, notes.data(), notes.size()));
  return {};
}

}  // namespace

core::Result<CoreWriteStats> WriteCore(int pid, const std::vector<int>& tids, const siginfo_t& info,
                                       const std::string& path, const CoreWriteOptions& options) {
  if (kMachine == EM_NONE) {
    return core::MakeError("{}: writing cores is supported on x86_64 and aarch64 only", path);
  }
  if (tids.empty()) return core::MakeError("{}: no thread of pid {} to write", path, pid);
  CoreWriteStats stats;
  GT_ASSIGN_OR_RETURN(std::vector<ThreadRegs> threads, ReadThreads(pid, tids, &stats));
  GT_ASSIGN_OR_RETURN(std::vector<MapEntry> maps, ReadDumpedMaps(pid, &stats));

  std::string directory = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  std::string temp_template = path + ".tmp.XXXXXX";
  ScopedFd temp_fd(mkostemp(temp_template.data(), O_CLOEXEC));
  if (!temp_fd.valid()) {
    return core::MakeError("{}: cannot create a temporary file in {}: {}", path, directory, std::strerror(errno));
  }
  CoreFileWriter writer(pid, std::move(temp_fd), temp_template);
  uint64_t page_size = writer.page_size();

  // Layout: ELF header, program headers, notes, then the page-aligned segment contents.
  std::string notes = BuildNotes(pid, threads, info, maps, page_size);
  size_t phnum = maps.size() + 1;
  uint64_t notes_offset = sizeof(Elf64_Ehdr) + phnum * sizeof(Elf64_Phdr);
  uint64_t data_offset = (notes_offset + notes.size() + page_size - 1) / page_size * page_size;

  std::vector<SegmentPlan> plans = PlanSegments(maps, ReadDumpFilter(pid), writer, &stats);
  GT_ASSIGN_OR_RETURN(uint64_t end_offset,
                      WriteSegments(writer, maps, WriteOrder(maps, threads), data_offset, options, &plans, &stats));
  GT_RETURN_IF_ERROR(WriteHeaders(writer, maps, plans, notes, notes_offset));
  uint64_t file_size = std::max(end_offset, notes_offset + notes.size());
  GT_RETURN_IF_ERROR(writer.Commit(path, file_size));

  stats.bytes_written = file_size;
  stats.segments = maps.size();
  return stats;
}

}  // namespace gputriage::corefile
