#include "forensics/unwind.h"

#include <cxxabi.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace gputriage::forensics {
using core::Frame;
namespace {

char* g_debuginfo_path = nullptr;

const Dwfl_Callbacks kProcCallbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = nullptr,
    .debuginfo_path = &g_debuginfo_path,
};

const Dwfl_Callbacks kCoreCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = nullptr,
    .debuginfo_path = &g_debuginfo_path,
};

std::string DwflError() {
  const char* msg = dwfl_errmsg(-1);
  return msg ? msg : "unknown libdwfl error";
}

// libdw would ask debuginfod servers for missing debug info when DEBUGINFOD_URLS is set: a
// crash report must not wait on the network (or leak build ids to it).
void NoNetworkLookups() { unsetenv("DEBUGINFOD_URLS"); }

std::string Demangle(const char* name) {
  if (!name) return {};
  if (name[0] == '_' && name[1] == 'Z') {
    int status = 0;
    char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    if (status == 0 && out) {
      std::string result(out);
      std::free(out);
      return result;
    }
    std::free(out);
  }
  return name;
}

struct WalkState {
  DwflSession* session;
  std::vector<Frame>* frames;
  size_t max_frames;
  bool truncated = false;
};

int OnFrame(Dwfl_Frame* state, void* arg) {
  auto* walk = static_cast<WalkState*>(arg);
  Dwarf_Addr pc = 0;
  bool activation = false;
  if (!dwfl_frame_pc(state, &pc, &activation)) return DWARF_CB_ABORT;
  if (walk->frames->size() >= walk->max_frames) {
    walk->truncated = true;
    return DWARF_CB_ABORT;
  }
  walk->frames->push_back(walk->session->Symbolize(pc, !activation));
  return DWARF_CB_OK;
}

int OnThread(Dwfl_Thread* thread, void* arg) {
  static_cast<std::vector<int>*>(arg)->push_back(static_cast<int>(dwfl_thread_tid(thread)));
  return DWARF_CB_OK;
}

}  // namespace

DwflSession::~DwflSession() {
  if (dwfl_) dwfl_end(dwfl_);
  if (core_elf_) elf_end(static_cast<Elf*>(core_elf_));
  if (core_fd_ >= 0) close(core_fd_);
}

core::Result<std::unique_ptr<DwflSession>> DwflSession::AttachLive(int pid) {
  NoNetworkLookups();
  std::unique_ptr<DwflSession> s(new DwflSession());
  s->dwfl_ = dwfl_begin(&kProcCallbacks);
  if (!s->dwfl_) return core::MakeError("pid {}: libdwfl: {}", pid, DwflError());
  dwfl_report_begin(s->dwfl_);
  int rc = dwfl_linux_proc_report(s->dwfl_, pid);
  if (rc != 0) {
    return core::MakeError("pid {}: cannot read its memory map: {}", pid, rc > 0 ? std::strerror(rc) : DwflError());
  }
  if (dwfl_report_end(s->dwfl_, nullptr, nullptr) != 0) {
    return core::MakeError("pid {}: libdwfl: {}", pid, DwflError());
  }
  rc = dwfl_linux_proc_attach(s->dwfl_, pid, /*assume_ptrace_stopped=*/true);
  if (rc != 0) {
    return core::MakeError("pid {}: cannot attach the unwinder: {}", pid, rc > 0 ? std::strerror(rc) : DwflError());
  }
  return s;
}

core::Result<std::unique_ptr<DwflSession>> DwflSession::AttachCore(const std::string& core_path,
                                                                   const std::string& executable) {
  NoNetworkLookups();
  elf_version(EV_CURRENT);
  std::unique_ptr<DwflSession> s(new DwflSession());
  s->core_fd_ = open(core_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (s->core_fd_ < 0) return core::MakeError("{}: {}", core_path, std::strerror(errno));
  Elf* elf = elf_begin(s->core_fd_, ELF_C_READ_MMAP, nullptr);
  if (!elf) return core::MakeError("{}: libelf: {}", core_path, elf_errmsg(-1));
  s->core_elf_ = elf;
  s->dwfl_ = dwfl_begin(&kCoreCallbacks);
  if (!s->dwfl_) return core::MakeError("{}: libdwfl: {}", core_path, DwflError());
  dwfl_report_begin(s->dwfl_);
  int modules = dwfl_core_file_report(s->dwfl_, elf, executable.empty() ? nullptr : executable.c_str());
  if (modules < 0) return core::MakeError("{}: elfutils cannot read it as a core file: {}", core_path, DwflError());
  if (dwfl_report_end(s->dwfl_, nullptr, nullptr) != 0) {
    return core::MakeError("{}: libdwfl: {}", core_path, DwflError());
  }
  if (dwfl_core_file_attach(s->dwfl_, elf) < 0) {
    return core::MakeError("{}: cannot unwind this core: {}", core_path, DwflError());
  }
  return s;
}

Frame DwflSession::Symbolize(uint64_t pc, bool return_address) {
  Frame frame;
  frame.pc = pc;
  Dwarf_Addr lookup = return_address && pc > 0 ? pc - 1 : pc;
  Dwfl_Module* module = dwfl_addrmodule(dwfl_, lookup);
  if (!module) return frame;
  const char* mainfile = nullptr;
  const char* name = dwfl_module_info(module, nullptr, nullptr, nullptr, nullptr, nullptr, &mainfile, nullptr);
  frame.module = mainfile ? mainfile : (name ? name : "");
  Dwarf_Addr bias = 0;
  if (dwfl_module_getelf(module, &bias)) frame.offset = pc - bias;
  GElf_Off sym_offset = 0;
  GElf_Sym sym;
  const char* sym_name = dwfl_module_addrinfo(module, lookup, &sym_offset, &sym, nullptr, nullptr, nullptr);
  if (sym_name) {
    frame.function = Demangle(sym_name);
    frame.function_offset = pc - (lookup - sym_offset);
  }
  if (Dwfl_Line* line = dwfl_module_getsrc(module, lookup)) {
    int lineno = 0;
    const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr);
    if (file) {
      frame.file = file;
      if (lineno > 0) frame.line = lineno;
    }
  }
  return frame;
}

std::optional<uint64_t> DwflSession::FunctionStart(uint64_t pc) {
  Dwfl_Module* module = dwfl_addrmodule(dwfl_, pc);
  if (!module) return std::nullopt;
  GElf_Off offset = 0;
  GElf_Sym sym;
  if (!dwfl_module_addrinfo(module, pc, &offset, &sym, nullptr, nullptr, nullptr)) return std::nullopt;
  return pc - offset;
}

std::vector<Frame> DwflSession::Unwind(int tid, const UnwindLimits& limits, bool* truncated,
                                       std::optional<std::string>* error) {
  std::vector<Frame> frames;
  WalkState walk{this, &frames, limits.max_frames};
  int rc = dwfl_getthread_frames(dwfl_, tid, OnFrame, &walk);
  if (truncated) *truncated = walk.truncated;
  if (rc == -1 && error) {
    // The outermost frame always ends the walk with "no matching address range" or similar
    // once there is no CFI left; only report an error when it ended before any frame.
    std::string message = DwflError();
    if (frames.size() <= 1) *error = message;
  }
  return frames;
}

std::vector<int> DwflSession::Threads() {
  std::vector<int> tids;
  dwfl_getthreads(dwfl_, OnThread, &tids);
  return tids;
}

}  // namespace gputriage::forensics
