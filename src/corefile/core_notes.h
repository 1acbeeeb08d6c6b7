// The notes of a Linux ELF core file (x86_64 and aarch64): which threads there were and their
// registers, the signal that killed the process, its name and arguments, the files it had
// mapped and its auxiliary vector. The input is untrusted: a core may be truncated (the disk
// filled up, RLIMIT_CORE cut it) or damaged; damaged notes become warnings and the rest is kept.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/process.h"
#include "core/result.h"

namespace gputriage::corefile {

/// One NT_PRSTATUS note: a thread of the dead process.
struct CoreThread {
  int tid = 0;  ///< pr_pid
  /// pr_cursig; absent when 0 (the kernel writes the same signal for every thread, gputriage's
  /// writer only for the thread that took it).
  std::optional<int> signal;
  /// pr_reg by name. x86_64: rax rbx rcx rdx rsi rdi rbp rsp r8..r15 rip eflags cs ss ds es fs
  /// gs fs_base gs_base orig_rax. aarch64: x0..x30 sp pc pstate. Empty for other machines.
  std::vector<core::Register> registers;
};

/// Everything ParseCoreNotes understood. Optional members are absent when the note that holds
/// them is missing or damaged.
struct CoreNotes {
  std::string machine;              ///< "x86_64", "aarch64", or "EM_<n>" for other e_machine
  std::vector<CoreThread> threads;  ///< note order: the kernel writes the signalled thread first
  // From NT_SIGINFO (or, without one, `signal` from the first thread's pr_cursig).
  std::optional<int> signal;
  std::optional<int> si_code;
  /// si_pid, only for signals sent by a process (SI_USER, SI_QUEUE, SI_TKILL).
  std::optional<int> sender_pid;
  /// si_addr, only for SIGSEGV/SIGBUS/SIGILL/SIGFPE/SIGTRAP raised by the kernel (si_code > 0).
  std::optional<uint64_t> fault_address;
  // From NT_PRPSINFO.
  std::optional<int> pid;           ///< pr_pid
  std::optional<std::string> name;  ///< pr_fname (comm, at most 15 bytes)
  std::optional<std::string> args;  ///< pr_psargs (the first 79 bytes of the command line)
  /// NT_FILE: file-backed mappings; file_offset = page offset * the note's page size; perms
  /// empty (the note has none).
  std::vector<core::Mapping> files;
  /// NT_AUXV (a_type, a_val) pairs, without the terminating AT_NULL.
  std::vector<std::pair<uint64_t, uint64_t>> auxv;
  /// Damaged notes that were skipped, each naming the note and its file offset; de-duplicated.
  std::vector<std::string> warnings;
};

/// Parses the PT_NOTE segments of the ELF core `bytes` (copied; the view need not outlive the
/// call). `source_name` names the input in messages. Fails, with a message that starts with
/// `source_name` and gives the numbers, when the bytes are not a 64-bit little-endian ELF file,
/// not ET_CORE, truncated before the end of the program headers or of a PT_NOTE segment, or
/// hold no usable NT_PRSTATUS note. Damaged individual notes are skipped with a warning.
core::Result<CoreNotes> ParseCoreNotes(std::string_view bytes, std::string_view source_name);

/// ParseCoreNotes on the file at `path`, read lazily (only the headers and the notes, not the
/// memory segments of a multi-GB core). Messages name `path`; a missing file, a directory or a
/// file that is not a regular file is an error.
core::Result<CoreNotes> ReadCoreNotesFile(const std::string& path);

/// How many bytes of a 64-bit little-endian ELF core its headers describe (the header, the
/// program header table, every segment's bytes in the file, the section header table), from its
/// first bytes `head`; nullopt when `head` is not such a core or does not hold the whole program
/// header table (extended numbering included). What lies after that extent is no part of the
/// core: a decompressed core.zst is written only that far.
std::optional<uint64_t> CoreExtent(std::string_view head);

}  // namespace gputriage::corefile
