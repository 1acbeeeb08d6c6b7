// Core files as users read them: the core `gputriage run --core` writes, opened with gdb and
// eu-stack (elfutils) next to the kernel's core of the same crash, and `gputriage analyze CORE`
// on cores whose executable moved or whose file was cut short.
#include <elf.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/model.h"
#include "core/subprocess.h"
#include "integration_util.h"

namespace gputriage {
namespace {

namespace fs = std::filesystem;
using core::Json;

core::ProcessOutcome RunOrFail(const std::vector<std::string>& args, std::vector<std::string> env = {}) {
  core::RunOptions ro;
  ro.timeout = std::chrono::milliseconds(120000);
  ro.max_stderr_bytes = 1 << 20;
  ro.extra_env = std::move(env);
  auto outcome = core::RunWithTimeout(args, ro);
  if (!outcome.ok()) {
    ADD_FAILURE() << outcome.error().message;
    return {};
  }
  return *outcome;
}

bool HaveTool(const std::string& name) {
  core::RunOptions ro;
  auto found = core::RunWithTimeout({"sh", "-c", "command -v " + name}, ro);
  return found.ok() && found->exit_code == 0;
}

// The libraries gdb lists under "info sharedlibrary" (the last column of lines that start with
// an address).
std::set<std::string> GdbLibraries(const std::string& gdb_output) {
  std::set<std::string> libraries;
  std::regex line(R"(^0x[0-9a-f]+\s+0x[0-9a-f]+\s+\S+\s+(?:\(\*\)\s+)?(/\S+)$)");
  std::istringstream in(gdb_output);
  for (std::string text; std::getline(in, text);) {
    std::smatch m;
    if (std::regex_match(text, m, line)) libraries.insert(fs::path(m[1].str()).filename().string());
  }
  return libraries;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// eu-readelf -n: the notes as "OWNER TYPE SIZE" lines, in file order.
std::vector<std::string> NoteList(const std::string& core) {
  std::vector<std::string> notes;
  core::ProcessOutcome out = RunOrFail({"eu-readelf", "-n", core});
  std::regex line(R"(^\s+(CORE|LINUX)\s+(\d+)\s+(.+)$)");
  std::istringstream in(out.stdout_data);
  for (std::string text; std::getline(in, text);) {
    std::smatch m;
    if (std::regex_match(text, m, line)) {
      std::string type = m[3].str();
      // NT_FILE's size depends on the paths; the others are fixed by the kernel and the CPU.
      notes.push_back(m[1].str() + " " + type + (type == "FILE" ? "" : " " + m[2].str()));
    }
  }
  return notes;
}

class CoreFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gt-corefile-it-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    tmp_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }

  // `gputriage run --core -- CRASHER MODE`: the core in the bundle ("" when none was written).
  std::string RunCore(const std::string& mode, const std::string& crasher = kCrasher) {
    std::string bundles = tmp_ / "bundles";
    RunOrFail({GT_GPUTRIAGE_BIN, "run", "--core=raw", "--no-snapshot", "--bundle-dir", bundles, "--", crasher, mode},
              {"GPUTRIAGE_HOME=" + (tmp_ / "home").string()});
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(bundles, ec)) {
      if (fs::exists(entry.path() / "core")) return (entry.path() / "core").string();
    }
    return "";
  }

  // The kernel's core of `crasher MODE`, when core_pattern writes a plain file ("" otherwise;
  // `why` says why not).
  std::string KernelCore(const std::string& mode, std::string* why) {
    std::string pattern = ReadAll("/proc/sys/kernel/core_pattern");
    if (pattern.empty() || pattern[0] == '|' || pattern.find('/') != std::string::npos) {
      *why = "core_pattern does not write a core into the working directory: " + pattern;
      return "";
    }
    std::string dir = tmp_ / "kcore";
    fs::create_directories(dir);
    RunOrFail({"sh", "-c", "ulimit -c unlimited; cd " + dir + " && exec " + kCrasher + " " + mode});
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().filename().string().rfind("core", 0) == 0) return entry.path().string();
    }
    *why = "the kernel wrote no core (core_pattern '" + pattern + "')";
    return "";
  }

  // `gputriage analyze ARGS...` (with --json when `json`), its exit status, stdout and stderr.
  core::ProcessOutcome Analyze(std::vector<std::string> args, bool json) {
    args.insert(args.begin(), {GT_GPUTRIAGE_BIN, "analyze"});
    if (json) args.push_back("--json");
    return RunOrFail(args, {"GPUTRIAGE_HOME=" + (tmp_ / "home").string()});
  }

  fs::path tmp_;
};

Json ParseJson(const core::ProcessOutcome& out) {
  Json j = Json::parse(out.stdout_data, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << out.stdout_data << out.stderr_tail;
  return j;
}

std::string TopFunction(const Json& process) {
  const Json& threads = process["threads"];
  if (!threads.is_array() || threads.empty() || threads[0]["frames"].empty()) return "";
  return threads[0]["frames"][0].value("function", "");
}

bool HasFaultingInstruction(const Json& process) {
  if (!process["disassembly"].is_object()) return false;
  for (const Json& i : process["disassembly"]["instructions"]) {
    if (i.value("faulting", false)) return true;
  }
  return false;
}

std::string GdbBatch(const std::string& exe, const std::string& core) {
  core::ProcessOutcome out = RunOrFail({"gdb", "-batch", "-nx", "-ex", "info sharedlibrary", "-ex", "bt", exe, core});
  return out.stdout_data + out.stderr_tail;
}

// gdb reads our core as it reads the kernel's: it finds the shared libraries (through NT_AUXV,
// the executable's .dynamic and r_debug in the dumped memory), names the libc frames of an
// abort(), and warns no more than on the kernel's core (the XSAVE area's size: NT_X86_XSTATE and
// NT_X86_XSAVE_LAYOUT). The notes are the kernel's, in its order, at its sizes. Failed before:
// gdb said "No shared libraries loaded at this time." and showed the libc frames as ??.
TEST_F(CoreFileTest, GdbAndEuStackReadOurCoreAsTheKernels) {
  if (!HaveTool("gdb")) GTEST_SKIP() << "gdb is not installed (scripts/install-deps installs it)";
  if (!HaveTool("eu-stack")) GTEST_SKIP() << "eu-stack is not installed (package elfutils; scripts/install-deps)";
  std::string ours = RunCore("assert");
  ASSERT_NE(ours, "") << "gputriage run --core wrote no core";

  std::string gdb = GdbBatch(kCrasher, ours);
  EXPECT_EQ(gdb.find("No shared libraries loaded"), std::string::npos) << gdb;
  std::set<std::string> libraries = GdbLibraries(gdb);
  EXPECT_TRUE(libraries.count("libc.so.6")) << gdb;
  EXPECT_TRUE(libraries.count("libcrashlib.so")) << gdb;
  EXPECT_TRUE(std::any_of(libraries.begin(), libraries.end(), [](const std::string& l) {
    return l.rfind("ld-linux", 0) == 0;
  })) << gdb;
  EXPECT_TRUE(std::regex_search(gdb, std::regex(R"(#\d+ .* in (__GI_)?abort \()"))) << gdb;
  EXPECT_TRUE(std::regex_search(gdb, std::regex(R"(#\d+ .* in check_count \()"))) << gdb;
  EXPECT_FALSE(std::regex_search(gdb, std::regex(R"(#\d+ .* \?\? \()"))) << gdb;

  core::ProcessOutcome stack = RunOrFail({"eu-stack", "--core", ours, "-e", kCrasher});
  EXPECT_EQ(stack.exit_code, 0) << stack.stderr_tail;
  EXPECT_TRUE(std::regex_search(stack.stdout_data, std::regex(R"(#\d+\s+0x[0-9a-f]+ (__GI_)?abort\b)")))
      << stack.stdout_data;
  EXPECT_NE(stack.stdout_data.find(" check_count"), std::string::npos) << stack.stdout_data;

  std::string why;
  std::string kernel = KernelCore("assert", &why);
  if (kernel.empty()) {
    std::cerr << "not compared with a kernel core: " << why << "\n";
    return;
  }
  std::string kernel_gdb = GdbBatch(kCrasher, kernel);
  EXPECT_EQ(GdbLibraries(gdb), GdbLibraries(kernel_gdb)) << gdb << "\n---- kernel core:\n" << kernel_gdb;
  EXPECT_LE(Count(gdb, "warning:"), Count(kernel_gdb, "warning:")) << gdb << "\n---- kernel core:\n" << kernel_gdb;
  // Every note the kernel wrote, in its order and size; ours may add NT_X86_XSAVE_LAYOUT (type
  // 517), which older kernels do not write.
  std::vector<std::string> ours_notes = NoteList(ours), kernel_notes = NoteList(kernel);
  ours_notes.erase(std::remove_if(ours_notes.begin(), ours_notes.end(),
                                  [&](const std::string& n) {
                                    return n.find(": 517") != std::string::npos &&
                                           std::find(kernel_notes.begin(), kernel_notes.end(), n) == kernel_notes.end();
                                  }),
                   ours_notes.end());
  EXPECT_EQ(ours_notes, kernel_notes);
}

// A core whose executable has moved since: NT_FILE names the old path. --exe gives the file
// to read symbols and the code at the PC from. Without it, the code is missing and the report
// says so (no guess: before, a null store in code that could not be read was called "a call
// through a null function pointer"). Failed before: --exe changed the symbols but not the
// disassembly, and both runs were classified as a null function-pointer call.
TEST_F(CoreFileTest, AnalyzeReadsTheCodeOfAMovedExecutableFromExe) {
  fs::create_directories(tmp_ / "built");
  fs::create_directories(tmp_ / "moved");
  std::string built = tmp_ / "built" / "crasher";
  fs::copy_file(kCrasher, built);
  std::string core = RunCore("null", built);
  ASSERT_NE(core, "");
  std::string moved = tmp_ / "moved" / "crasher-1.2";
  fs::rename(built, moved);

  Json without = ParseJson(Analyze({core}, true));
  const Json& p = without["processes"][0];
  EXPECT_FALSE(HasFaultingInstruction(p)) << p["disassembly"].dump();
  std::string note = p["disassembly"].value("note", "");
  EXPECT_NE(note.find("not in the core"), std::string::npos) << note;
  EXPECT_NE(note.find(built), std::string::npos) << note;
  EXPECT_NE(note.find("--exe"), std::string::npos) << note;
  EXPECT_EQ(p["classification"].value("kind", ""), "null-dereference");
  EXPECT_EQ(p["classification"]["summary"].get<std::string>().find("function pointer"), std::string::npos)
      << p["classification"].dump();

  core::ProcessOutcome text = Analyze({core, "--exe", moved}, false);
  EXPECT_NE(text.stdout_data.find("=> "), std::string::npos) << text.stdout_data;
  Json with = ParseJson(Analyze({core, "--exe", moved}, true));
  const Json& q = with["processes"][0];
  EXPECT_EQ(TopFunction(q), "null_deref") << q["threads"][0]["frames"].dump(1);
  EXPECT_TRUE(HasFaultingInstruction(q)) << q["disassembly"].dump();
  EXPECT_EQ(q.value("executable", ""), moved);
  EXPECT_EQ(q["classification"].value("summary", ""), "null pointer dereference (address 0x0)")
      << q["classification"].dump();
}

// --exe must be a regular ELF file: a directory, a device or a text file is a clear error
// naming it (exit 2), read with a bound (/dev/zero never ends). Failed before: all accepted.
TEST_F(CoreFileTest, AnalyzeRejectsAnExeThatIsNotAnElfFile) {
  std::string core = RunCore("null");
  ASSERT_NE(core, "");
  std::string text_file = tmp_ / "notes.txt";
  std::ofstream(text_file) << "not an executable\n";
  struct Case {
    std::string exe, message;
  } cases[] = {
      {"/dev/zero", "--exe /dev/zero: not a regular file"},
      {tmp_.string(), "--exe " + tmp_.string() + ": is a directory"},
      {text_file, "--exe " + text_file + ": not an ELF file"},
      {(tmp_ / "absent").string(), "--exe " + (tmp_ / "absent").string() + ": No such file or directory"},
  };
  for (const Case& c : cases) {
    core::ProcessOutcome out = Analyze({core, "--exe", c.exe}, false);
    EXPECT_EQ(out.exit_code, 2) << c.exe;
    EXPECT_NE(out.stderr_tail.find(c.message), std::string::npos) << c.exe << ": " << out.stderr_tail;
    EXPECT_EQ(out.stdout_data, "") << c.exe;
  }
}

// A core shorter than its program headers say is analysed, and the analysis says it is
// truncated: in the process report (JSON core_truncated, a line of text), a verdict reason, and
// a lower confidence. Failed before: it read as a complete core.
TEST_F(CoreFileTest, AnalyzeSaysACoreIsTruncated) {
  std::string core = RunCore("null");
  ASSERT_NE(core, "");
  std::string bytes = ReadAll(core);
  // Cut one page into the first memory segment: the notes stay whole.
  Elf64_Ehdr ehdr;
  std::memcpy(&ehdr, bytes.data(), sizeof(ehdr));
  uint64_t first_data = bytes.size();
  for (size_t i = 0; i < ehdr.e_phnum; ++i) {
    Elf64_Phdr phdr;
    std::memcpy(&phdr, bytes.data() + ehdr.e_phoff + i * sizeof(phdr), sizeof(phdr));
    if (phdr.p_type == PT_LOAD && phdr.p_filesz > 0) first_data = std::min<uint64_t>(first_data, phdr.p_offset);
  }
  ASSERT_LT(first_data + 4096, bytes.size());
  std::string cut = tmp_ / "cut.core";
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, first_data + 4096);

  Json whole = ParseJson(Analyze({core}, true));
  EXPECT_FALSE(whole["processes"][0].contains("core_truncated"));
  Json a = ParseJson(Analyze({cut}, true));
  const Json& p = a["processes"][0];
  ASSERT_TRUE(p["core_truncated"].is_object()) << p.dump();
  EXPECT_EQ(p["core_truncated"].value("file_bytes", 0ull), first_data + 4096);
  EXPECT_EQ(p["core_truncated"].value("expected_bytes", 0ull), bytes.size());
  EXPECT_GT(p["core_truncated"].value("segments_cut", 0), 0);
  EXPECT_LT(a.value("confidence", 1.0), whole.value("confidence", 0.0));
  bool said = false;
  for (const Json& r : a["verdict_reasons"]) said = said || r.get<std::string>().find("truncated") != std::string::npos;
  EXPECT_TRUE(said) << a["verdict_reasons"].dump();
  core::ProcessOutcome text = Analyze({cut}, false);
  EXPECT_NE(text.stdout_data.find(fmt::format("{}: the core file is truncated", cut)), std::string::npos)
      << text.stdout_data;
}

}  // namespace
}  // namespace gputriage
