#include "forensics/capture.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <map>

#include <fmt/format.h>

#include "core/file.h"
#include "core/maps.h"
#include "core/signals.h"
#include "core/text.h"

namespace gputriage::forensics {
using core::HasFaultAddress;
using core::IsSentByProcess;
using core::LocateFault;
using core::ParseMaps;
using core::ProcessReport;
using core::Register;
using core::ThreadState;
namespace {

// /proc/PID/maps of a large process (PyTorch with CUDA: ~10k mappings) stays far below this.
constexpr size_t kMaxProcFileBytes = 64u << 20;

// A /proc file of the captured process; nullopt when it cannot be read (the process is gone)
// or is larger than kMaxProcFileBytes.
std::optional<std::string> ReadSmallFile(const std::string& path) {
  core::Result<std::string> text = core::ReadFile(path, kMaxProcFileBytes);
  if (!text.ok()) return std::nullopt;
  return std::move(text).value();
}

std::string Chomp(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
  return s;
}

#if defined(__x86_64__)
std::vector<Register> NameRegisters(const user_regs_struct& r) {
  return {{"rax", r.rax},         {"rbx", r.rbx},         {"rcx", r.rcx},          {"rdx", r.rdx}, {"rsi", r.rsi},
          {"rdi", r.rdi},         {"rbp", r.rbp},         {"rsp", r.rsp},          {"r8", r.r8},   {"r9", r.r9},
          {"r10", r.r10},         {"r11", r.r11},         {"r12", r.r12},          {"r13", r.r13}, {"r14", r.r14},
          {"r15", r.r15},         {"rip", r.rip},         {"eflags", r.eflags},    {"cs", r.cs},   {"ss", r.ss},
          {"fs_base", r.fs_base}, {"gs_base", r.gs_base}, {"orig_rax", r.orig_rax}};
}
#elif defined(__aarch64__)
std::vector<Register> NameRegisters(const user_regs_struct& r) {
  std::vector<Register> regs;
  for (int i = 0; i < 31; ++i) regs.push_back({fmt::format("x{}", i), r.regs[i]});
  regs.push_back({"sp", r.sp});
  regs.push_back({"pc", r.pc});
  regs.push_back({"pstate", r.pstate});
  return regs;
}
#endif

std::optional<uint64_t> FindRegister(const std::vector<Register>& regs, const char* a, const char* b) {
  for (const Register& r : regs) {
    if (r.name == a || r.name == b) return r.value;
  }
  return std::nullopt;
}

}  // namespace

core::Result<std::vector<Register>> ReadRegisters(int tid) {
#if defined(__x86_64__) || defined(__aarch64__)
  user_regs_struct regs{};
  iovec iov{&regs, sizeof regs};
  if (ptrace(PTRACE_GETREGSET, tid, reinterpret_cast<void*>(NT_PRSTATUS), &iov) != 0) {
    return core::MakeError("thread {}: PTRACE_GETREGSET: {}", tid, std::strerror(errno));
  }
  return NameRegisters(regs);
#else
  return core::MakeError("thread {}: registers are not supported on this architecture", tid);
#endif
}

std::optional<uint64_t> ProgramCounter(const std::vector<Register>& registers) {
  return FindRegister(registers, "rip", "pc");
}

std::optional<uint64_t> StackPointer(const std::vector<Register>& registers) {
  return FindRegister(registers, "rsp", "sp");
}

MemoryReader LiveMemoryReader(int pid) {
  return [pid](uint64_t address, size_t length) {
    std::vector<uint8_t> out;
    const uint64_t kPage = 4096;
    uint64_t cursor = address;
    uint64_t end = address + length;
    if (end < address) return out;  // wraps
    while (cursor < end) {
      uint64_t chunk_end = std::min(end, (cursor / kPage + 1) * kPage);
      size_t n = static_cast<size_t>(chunk_end - cursor);
      std::vector<uint8_t> chunk(n);
      iovec local{chunk.data(), n};
      iovec remote{reinterpret_cast<void*>(cursor), n};
      ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
      if (got <= 0) {
        // Not allowed by policy, or a page only the tracer may peek: /proc/PID/mem.
        int fd = open(fmt::format("/proc/{}/mem", pid).c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
          got = pread(fd, chunk.data(), n, static_cast<off_t>(cursor));
          close(fd);
        }
      }
      if (got <= 0) break;
      out.insert(out.end(), chunk.begin(), chunk.begin() + got);
      if (static_cast<size_t>(got) < n) break;
      cursor = chunk_end;
    }
    return out;
  };
}

DistributedRank RankFromEnviron(std::string_view environ_block) {
  std::map<std::string_view, std::string_view> values;
  for (std::string_view entry : core::Split(environ_block, '\0')) {
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    values.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  auto first = [&](std::initializer_list<std::string_view> names) -> std::optional<int> {
    for (std::string_view name : names) {
      auto it = values.find(name);
      if (it == values.end()) continue;
      auto n = core::ParseU64(it->second, 10);
      if (n && *n <= static_cast<uint64_t>(INT32_MAX)) return static_cast<int>(*n);
    }
    return std::nullopt;
  };
  DistributedRank place;
  place.rank = first({"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"});
  place.local_rank = first({"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"});
  return place;
}

ProcessReport CaptureLive(const LiveCaptureRequest& request) {
  ProcessReport report;
  report.pid = request.tgid;
  const std::string proc = fmt::format("/proc/{}", request.tgid);
  if (auto cmdline = ReadSmallFile(proc + "/cmdline")) {
    std::string joined = Chomp(*cmdline);
    std::replace(joined.begin(), joined.end(), '\0', ' ');
    report.command = joined;
  }
  char exe[4096];
  ssize_t n = readlink((proc + "/exe").c_str(), exe, sizeof exe - 1);
  if (n > 0) report.executable.assign(exe, static_cast<size_t>(n));

  // Under ptrace the environment is readable whoever owns the process; a job that is not
  // distributed has none of the names, and the report then says nothing about ranks.
  if (auto environ_block = ReadSmallFile(proc + "/environ")) {
    DistributedRank place = RankFromEnviron(*environ_block);
    report.rank = place.rank;
    report.local_rank = place.local_rank;
  }

  if (request.info) {
    const siginfo_t& info = *request.info;
    report.signal = info.si_signo;
    report.si_code = info.si_code;
    report.crashed_thread = request.crashed_tid;
    if (HasFaultAddress(info.si_signo, info.si_code)) {
      report.fault_address = reinterpret_cast<uint64_t>(info.si_addr);
    }
    if (IsSentByProcess(info.si_code)) report.sender_pid = info.si_pid;
  }

  if (auto maps_text = ReadSmallFile(proc + "/maps")) {
    report.maps = ParseMaps(*maps_text);
  } else {
    report.not_collected.push_back({"maps", fmt::format("{}/maps: {}", proc, std::strerror(errno))});
  }

  auto session = DwflSession::AttachLive(request.tgid);
  if (!session.ok()) report.not_collected.push_back({"stacks", session.error().message});

  std::vector<int> tids = request.stopped_tids;
  auto crashed = std::find(tids.begin(), tids.end(), request.crashed_tid);
  if (crashed != tids.end()) std::rotate(tids.begin(), crashed, crashed + 1);
  for (int tid : tids) {
    ThreadState thread;
    thread.tid = tid;
    if (auto comm = ReadSmallFile(fmt::format("{}/task/{}/comm", proc, tid))) thread.name = Chomp(*comm);
    if (auto regs = ReadRegisters(tid); regs.ok()) {
      thread.registers = std::move(*regs);
    } else {
      report.not_collected.push_back({fmt::format("registers of thread {}", tid), regs.error().message});
    }
    if (session.ok()) {
      thread.frames = (*session)->Unwind(tid, request.limits, &thread.frames_truncated, &thread.unwind_error);
    }
    report.threads.push_back(std::move(thread));
  }

  if (!report.threads.empty() && request.info) {
    const ThreadState& first = report.threads.front();
    std::optional<uint64_t> pc = ProgramCounter(first.registers);
    // x86 reports an int3 trap with the PC after the one-byte instruction: show the int3.
    if (pc && *pc > 0 && HostArch() == "x86_64" && request.info->si_signo == SIGTRAP &&
        (request.info->si_code == SI_KERNEL || request.info->si_code == TRAP_BRKPT)) {
      --*pc;
    }
    if (pc) {
      std::optional<uint64_t> start = session.ok() ? (*session)->FunctionStart(*pc) : std::nullopt;
      report.disassembly = DisassembleAround(LiveMemoryReader(request.tgid), HostArch(), *pc, start, request.cpu_flags);
    }
    int sig = request.info->si_signo;
    if (report.fault_address && (sig == SIGSEGV || sig == SIGBUS)) {
      report.fault_location = LocateFault(*report.fault_address, report.maps, StackPointer(first.registers));
    }
  }
  return report;
}

}  // namespace gputriage::forensics
