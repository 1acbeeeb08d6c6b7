#include "corefile/core_notes.h"

#include <elf.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>

#include <gtest/gtest.h>

#include "corefile/core_memory.h"
#include "corefile/crash_child_testing.h"

namespace gputriage::corefile {
namespace {

using testing::CrashInChild;
using testing::Markers;
using testing::ReadWholeFile;
using testing::SelfExe;
using testing::TempDir;

// A core the kernel wrote for a child of this test that dereferenced null.
struct KernelCore {
  std::unique_ptr<TempDir> dir;
  std::string path;  // empty when skipped
  std::string skip_reason;
  int pid = 0;
  Markers markers;
};

KernelCore MakeKernelCore(int extra_threads) {
  KernelCore core;
  std::string pattern = ReadWholeFile("/proc/sys/kernel/core_pattern");
  if (!pattern.empty() && pattern[0] == '|') {
    core.skip_reason = "kernel.core_pattern is a pipe (" + pattern.substr(0, pattern.find('\n')) +
                       "): the kernel does not write core files here";
    return core;
  }
  core.dir = std::make_unique<TempDir>();
  int fds[2];
  if (pipe(fds) != 0) {
    core.skip_reason = "pipe failed";
    return core;
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    CrashInChild(core.dir->path(), extra_threads, /*traceme=*/false, fds[1]);
  }
  close(fds[1]);
  core.pid = pid;
  Markers markers;
  if (read(fds[0], &markers, sizeof(markers)) == sizeof(markers)) core.markers = markers;
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSEGV) {
    core.skip_reason = "the crashing child did not die of SIGSEGV (status " + std::to_string(status) + ")";
    return core;
  }
  for (const auto& entry : std::filesystem::directory_iterator(core.dir->path())) {
    if (entry.path().filename().string().rfind("core", 0) == 0) core.path = entry.path().string();
  }
  if (core.path.empty()) {
    core.skip_reason = "no core file appeared in " + core.dir->path() + " (core_pattern '" +
                       pattern.substr(0, pattern.find('\n')) + "', WCOREDUMP " + std::to_string(WCOREDUMP(status)) +
                       ")";
  }
  return core;
}

// One single-threaded kernel core shared by the tests that only read it.
const KernelCore& SharedKernelCore() {
  static KernelCore core = MakeKernelCore(0);
  return core;
}

#define SKIP_WITHOUT_CORE(core) \
  if ((core).path.empty()) GTEST_SKIP() << (core).skip_reason

std::optional<uint64_t> Reg(const CoreThread& thread, const std::string& name) {
  for (const auto& reg : thread.registers) {
    if (reg.name == name) return reg.value;
  }
  return std::nullopt;
}

const core::Mapping* FindFile(const CoreNotes& notes, uint64_t address) {
  for (const auto& file : notes.files) {
    if (address >= file.start && address < file.end) return &file;
  }
  return nullptr;
}

TEST(CorefileKernelCoreTest, NotesOfASegfaultingChild) {
  const KernelCore& core = SharedKernelCore();
  SKIP_WITHOUT_CORE(core);
  auto notes = ReadCoreNotesFile(core.path);
  ASSERT_TRUE(notes.ok()) << notes.error().message;
  EXPECT_EQ(notes->machine, "x86_64");
  EXPECT_EQ(notes->signal, SIGSEGV);
  EXPECT_EQ(notes->si_code, SEGV_MAPERR);
  EXPECT_EQ(notes->fault_address, 0u);
  EXPECT_EQ(notes->sender_pid, std::nullopt);
  EXPECT_EQ(notes->pid, core.pid);
  EXPECT_EQ(notes->name, SelfExe().substr(SelfExe().rfind('/') + 1).substr(0, 15));
  ASSERT_TRUE(notes->args.has_value());
  EXPECT_NE(notes->args->find("gt_corefile_test"), std::string::npos) << *notes->args;
  EXPECT_TRUE(notes->warnings.empty()) << notes->warnings.front();
  ASSERT_EQ(notes->threads.size(), 1u);
  EXPECT_EQ(notes->threads[0].tid, core.pid);
  EXPECT_EQ(notes->threads[0].signal, SIGSEGV);
  auto rip = Reg(notes->threads[0], "rip");
  ASSERT_TRUE(rip.has_value());
  EXPECT_TRUE(Reg(notes->threads[0], "rsp").has_value());
  EXPECT_TRUE(Reg(notes->threads[0], "rbp").has_value());
  EXPECT_EQ(notes->threads[0].registers.front().name, "rax");
  // The child crashed in gt_corefile_test_crash, which is this binary's code at this address.
  const core::Mapping* text = FindFile(*notes, *rip);
  ASSERT_NE(text, nullptr) << "rip " << std::hex << *rip << " is in no NT_FILE mapping";
  EXPECT_EQ(text->path, SelfExe());
  EXPECT_TRUE(text->perms.empty());
  auto crash = reinterpret_cast<uint64_t>(&gt_corefile_test_crash);
  EXPECT_GE(*rip, crash);
  EXPECT_LT(*rip, crash + 64);
  EXPECT_FALSE(notes->auxv.empty());
  bool has_entry =
      std::any_of(notes->auxv.begin(), notes->auxv.end(), [](const auto& entry) { return entry.first == AT_ENTRY; });
  EXPECT_TRUE(has_entry);
}

TEST(CorefileKernelCoreTest, ThreadCountOfAMultiThreadedChild) {
  KernelCore core = MakeKernelCore(3);
  SKIP_WITHOUT_CORE(core);
  auto notes = ReadCoreNotesFile(core.path);
  ASSERT_TRUE(notes.ok()) << notes.error().message;
  ASSERT_EQ(notes->threads.size(), 4u);
  EXPECT_EQ(notes->threads[0].tid, core.pid);  // the thread that took the signal comes first
  for (const auto& thread : notes->threads) EXPECT_EQ(thread.registers.size(), 27u);
}

TEST(CorefileKernelCoreTest, ParsesTheSameFromMemoryAsFromTheFile) {
  const KernelCore& core = SharedKernelCore();
  SKIP_WITHOUT_CORE(core);
  auto from_file = ReadCoreNotesFile(core.path);
  auto from_memory = ParseCoreNotes(ReadWholeFile(core.path), "mem");
  ASSERT_TRUE(from_file.ok() && from_memory.ok());
  EXPECT_EQ(from_memory->threads.size(), from_file->threads.size());
  EXPECT_EQ(from_memory->files.size(), from_file->files.size());
  EXPECT_EQ(from_memory->auxv, from_file->auxv);
  EXPECT_EQ(from_memory->args, from_file->args);
}

TEST(CorefileKernelCoreTest, MemoryReadsInstructionsFromTheMappedFileAndDataFromTheCore) {
  const KernelCore& core = SharedKernelCore();
  SKIP_WITHOUT_CORE(core);
  auto notes = ReadCoreNotesFile(core.path);
  ASSERT_TRUE(notes.ok()) << notes.error().message;
  auto memory = CoreMemory::OpenFile(core.path, *notes);
  ASSERT_TRUE(memory.ok()) << memory.error().message;
  uint64_t rip = *Reg(notes->threads[0], "rip");
  auto code = memory->Read(rip, 16);
  ASSERT_TRUE(code.has_value());
  ASSERT_EQ(code->size(), 16u);
  // Equal to the test binary's bytes at that place, and to this process's (fork, no exec).
  const core::Mapping* text = FindFile(*notes, rip);
  ASSERT_NE(text, nullptr);
  uint64_t at = text->file_offset + (rip - text->start);
  std::string binary = ReadWholeFile(SelfExe(), at + 16);
  ASSERT_EQ(binary.size(), at + 16);
  EXPECT_EQ(std::string(code->begin(), code->end()), binary.substr(at, 16));
  EXPECT_EQ(std::memcmp(code->data(), reinterpret_cast<const void*>(rip), 16), 0);
  // The stack and the heap are in the core itself.
  ASSERT_NE(core.markers.stack_address, 0u);
  for (uint64_t address : {core.markers.stack_address, core.markers.heap_address}) {
    auto bytes = memory->Read(address, 8);
    ASSERT_TRUE(bytes.has_value()) << std::hex << address;
    ASSERT_EQ(bytes->size(), 8u);
    uint64_t value;
    std::memcpy(&value, bytes->data(), 8);
    EXPECT_EQ(value, testing::kMarkerValue);
  }
  // Nothing is mapped at 0; a read crossing the end of the stack is cut there.
  EXPECT_EQ(memory->Read(0, 16), std::nullopt);
  auto from_bytes = CoreMemory::FromBytes(ReadWholeFile(core.path), *notes, "mem");
  ASSERT_TRUE(from_bytes.ok());
  EXPECT_EQ(from_bytes->Read(rip, 16), code);
}

TEST(CorefileKernelCoreTest, DwflUnwindsToTheCrashingFunction) {
  const KernelCore& core = SharedKernelCore();
  SKIP_WITHOUT_CORE(core);
  std::string error;
  auto threads = testing::UnwindWithDwfl(core.path, &error);
  ASSERT_EQ(error, "");
  ASSERT_FALSE(threads.empty());
  ASSERT_FALSE(threads[0].functions.empty());
  EXPECT_EQ(threads[0].functions[0], "gt_corefile_test_crash");
}

// --- Bad input: each message is the user interface. ---

TEST(CorefileBadInputTest, EmptyFile) {
  auto notes = ParseCoreNotes("", "empty.core");
  ASSERT_FALSE(notes.ok());
  EXPECT_EQ(notes.error().message, "empty.core: empty file (0 bytes), not an ELF core file");
}

TEST(CorefileBadInputTest, Garbage) {
  std::string garbage(100, '\0');
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>(i * 37 + 11);
  auto notes = ParseCoreNotes(garbage, "garbage");
  ASSERT_FALSE(notes.ok());
  EXPECT_EQ(notes.error().message, "garbage: not an ELF file (100 bytes, no \\x7fELF magic at offset 0)");
}

TEST(CorefileBadInputTest, AnExecutableIsNotACore) {
  std::string exe = SelfExe();
  std::string bytes = ReadWholeFile(exe, 4096);  // the headers are enough to tell
  ASSERT_GE(bytes.size(), sizeof(Elf64_Ehdr));
  Elf64_Ehdr ehdr;
  std::memcpy(&ehdr, bytes.data(), sizeof(ehdr));
  std::string type = ehdr.e_type == ET_DYN ? "ET_DYN" : "ET_EXEC";
  auto notes = ReadCoreNotesFile(exe);
  ASSERT_FALSE(notes.ok());
  EXPECT_EQ(notes.error().message, exe + ": ELF type " + type + ", not a core file");
  auto from_memory = ParseCoreNotes(bytes, "test-binary");
  ASSERT_FALSE(from_memory.ok());
  EXPECT_EQ(from_memory.error().message, "test-binary: ELF type " + type + ", not a core file");
}

TEST(CorefileBadInputTest, MissingPathAndDirectory) {
  auto missing = ReadCoreNotesFile("/nonexistent/dir/core");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "/nonexistent/dir/core: cannot open: No such file or directory");
  TempDir dir;
  auto directory = ReadCoreNotesFile(dir.path());
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.error().message, dir.path() + ": is a directory, not a core file");
  auto memory = CoreMemory::OpenFile(dir.path(), CoreNotes{});
  ASSERT_FALSE(memory.ok());
  EXPECT_EQ(memory.error().message, dir.path() + ": is a directory, not a core file");
}

// Offsets in a real core, read with <elf.h> (the test trusts the kernel's core).
struct Layout {
  Elf64_Ehdr ehdr;
  Elf64_Phdr note;
};

Layout LayoutOf(const std::string& bytes) {
  Layout layout;
  std::memcpy(&layout.ehdr, bytes.data(), sizeof(layout.ehdr));
  std::memcpy(&layout.note, bytes.data() + layout.ehdr.e_phoff, sizeof(layout.note));
  return layout;
}

TEST(CorefileBadInputTest, TruncatedCoresGiveClearErrors) {
  const KernelCore& core = SharedKernelCore();
  SKIP_WITHOUT_CORE(core);
  std::string bytes = ReadWholeFile(core.path);
  Layout layout = LayoutOf(bytes);
  ASSERT_EQ(layout.note.p_type, static_cast<uint32_t>(PT_NOTE));
  auto error_at = [&](size_t length) {
    auto notes = ParseCoreNotes(std::string_view(bytes).substr(0, length), "cut");
    return notes.ok() ? std::string("ok") : notes.error().message;
  };
  EXPECT_EQ(error_at(3), "cut: not an ELF file (3 bytes, no \\x7fELF magic at offset 0)");
  EXPECT_EQ(error_at(10),
            "cut: ELF header truncated or invalid (file is 10 bytes, an ELF64 header needs 64): "
            "truncated core?");
  EXPECT_EQ(error_at(40),
            "cut: ELF header truncated or invalid (file is 40 bytes, an ELF64 header needs 64): "
            "truncated core?");
  size_t phdrs_end = layout.ehdr.e_phoff + layout.ehdr.e_phnum * sizeof(Elf64_Phdr);
  EXPECT_EQ(error_at(phdrs_end - 100),
            fmt::format("cut: {} program headers at offset 0x40 run past the end of the file "
                        "(0x{:x} bytes): truncated core?",
                        layout.ehdr.e_phnum, phdrs_end - 100));
  size_t inside_notes = layout.note.p_offset + layout.note.p_filesz / 2;
  EXPECT_EQ(error_at(inside_notes),
            fmt::format("cut: PT_NOTE at offset 0x{:x} size 0x{:x} runs past the end of the file "
                        "(0x{:x} bytes): truncated core?",
                        layout.note.p_offset, layout.note.p_filesz, inside_notes));
  // Cut inside the memory segments: the notes are whole, memory reads stop at the cut.
  size_t notes_end = layout.note.p_offset + layout.note.p_filesz;
  EXPECT_EQ(error_at(notes_end), "ok");
  EXPECT_EQ(error_at(notes_end + 5000), "ok");
  // Every other length: an error or a result, never a crash (run under ASan too).
  for (size_t length = 0; length < notes_end + 64; length += 13) {
    auto notes = ParseCoreNotes(std::string_view(bytes).substr(0, length), "cut");
    if (notes.ok()) {
      auto memory = CoreMemory::FromBytes(std::string_view(bytes).substr(0, length), *notes, "cut");
      ASSERT_TRUE(memory.ok());
      (void)memory->Read(core.markers.stack_address, 64);
    } else {
      EXPECT_EQ(notes.error().message.rfind("cut: ", 0), 0u) << notes.error().message;
    }
  }
}

// A core cut inside its memory segments parses, and CoreMemory says it is truncated: how long
// the file should be and how many segments lost bytes. Failed before: a truncated core read as a
// complete one.
TEST(CorefileBadInputTest, ACoreCutInItsSegmentsSaysSo) {
  const KernelCore& core = SharedKernelCore();
  SKIP_WITHOUT_CORE(core);
  std::string bytes = ReadWholeFile(core.path);
  Layout layout = LayoutOf(bytes);
  auto notes = ParseCoreNotes(bytes, "whole");
  ASSERT_TRUE(notes.ok()) << notes.error().message;
  auto whole = CoreMemory::FromBytes(bytes, *notes, "whole");
  ASSERT_TRUE(whole.ok());
  EXPECT_FALSE(whole->truncation().has_value());
  EXPECT_TRUE(whole->Mapped(core.markers.stack_address));
  EXPECT_FALSE(whole->Mapped(0));

  size_t cut_at = layout.note.p_offset + layout.note.p_filesz + 100;
  auto cut = CoreMemory::FromBytes(std::string_view(bytes).substr(0, cut_at), *notes, "cut");
  ASSERT_TRUE(cut.ok());
  ASSERT_TRUE(cut->truncation().has_value());
  EXPECT_EQ(cut->truncation()->file_bytes, cut_at);
  EXPECT_EQ(cut->truncation()->expected_bytes, bytes.size());
  size_t dumped = 0;
  for (size_t i = 0; i < layout.ehdr.e_phnum; ++i) {
    Elf64_Phdr phdr;
    std::memcpy(&phdr, bytes.data() + layout.ehdr.e_phoff + i * sizeof(phdr), sizeof(phdr));
    if (phdr.p_type == PT_LOAD && phdr.p_filesz > 0 && phdr.p_offset + phdr.p_filesz > cut_at) ++dumped;
  }
  EXPECT_EQ(cut->truncation()->segments_cut, dumped);
  EXPECT_GT(dumped, 0u);
}

// Finds the note of `type` in a real core: the file offset of its header.
size_t NoteOffset(const std::string& bytes, uint32_t type) {
  Layout layout = LayoutOf(bytes);
  size_t offset = layout.note.p_offset, end = offset + layout.note.p_filesz;
  while (offset + 12 <= end) {
    uint32_t header[3];
    std::memcpy(header, bytes.data() + offset, 12);
    if (header[2] == type) return offset;
    offset += 12 + (header[0] + 3) / 4 * 4 + (header[1] + 3) / 4 * 4;
  }
  return 0;
}

TEST(CorefileBadInputTest, DamagedNotesBecomeWarnings) {
  const KernelCore& core = SharedKernelCore();
  SKIP_WITHOUT_CORE(core);
  std::string bytes = ReadWholeFile(core.path);
  // NT_FILE claiming 2^40 files: that note is skipped, the rest is kept.
  std::string damaged = bytes;
  size_t file_note = NoteOffset(damaged, NT_FILE);
  ASSERT_NE(file_note, 0u);
  uint32_t descsz;
  std::memcpy(&descsz, damaged.data() + file_note + 4, 4);
  uint64_t huge = 1ull << 40;
  size_t desc = file_note + 12 + 8;  // "CORE\0" padded to 8
  std::memcpy(damaged.data() + desc, &huge, 8);
  auto notes = ParseCoreNotes(damaged, "damaged");
  ASSERT_TRUE(notes.ok()) << notes.error().message;
  EXPECT_TRUE(notes->files.empty());
  EXPECT_EQ(notes->signal, SIGSEGV);
  ASSERT_EQ(notes->warnings.size(), 1u);
  EXPECT_EQ(notes->warnings[0], fmt::format("NT_FILE note at offset 0x{:x} ({} bytes): claims 1099511627776 files but "
                                            "has room for at most {}; skipped",
                                            desc, descsz, (descsz - 16) / 24));

  // A note header whose name size runs past the segment: the notes before it are kept.
  damaged = bytes;
  size_t siginfo_note = NoteOffset(damaged, NT_SIGINFO);
  ASSERT_NE(siginfo_note, 0u);
  uint32_t namesz = 0x7fffffff;
  std::memcpy(damaged.data() + siginfo_note, &namesz, 4);
  notes = ParseCoreNotes(damaged, "damaged");
  ASSERT_TRUE(notes.ok()) << notes.error().message;
  Layout layout = LayoutOf(bytes);
  ASSERT_EQ(notes->warnings.size(), 1u);
  EXPECT_EQ(notes->warnings[0], fmt::format("PT_NOTE at offset 0x{:x}: damaged note header at offset 0x{:x}; the "
                                            "remaining 0x{:x} bytes of the segment are skipped",
                                            layout.note.p_offset, siginfo_note,
                                            layout.note.p_offset + layout.note.p_filesz - siginfo_note));
  EXPECT_EQ(notes->threads.size(), 1u);
  EXPECT_EQ(notes->si_code, std::nullopt);
  EXPECT_EQ(notes->signal, SIGSEGV);  // from pr_cursig
  EXPECT_EQ(notes->pid, core.pid);    // NT_PRPSINFO comes before NT_SIGINFO

  // The only NT_PRSTATUS too short: no thread, an error that says why.
  damaged = bytes;
  size_t prstatus_note = NoteOffset(damaged, NT_PRSTATUS);
  uint32_t short_desc = 40;
  std::memcpy(damaged.data() + prstatus_note + 4, &short_desc, 4);
  notes = ParseCoreNotes(damaged, "damaged");
  ASSERT_FALSE(notes.ok());
  EXPECT_EQ(notes.error().message.rfind("damaged: all 1 NT_PRSTATUS notes are damaged among ", 0), 0u)
      << notes.error().message;
}

}  // namespace
}  // namespace gputriage::corefile
