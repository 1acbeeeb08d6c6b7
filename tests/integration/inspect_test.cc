// `gputriage inspect` run as a user would, on GPU code built by nvcc during the build.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include <gtest/gtest.h>

#include "capture_tree.h"
#include "core/model.h"
#include "core/subprocess.h"
#include "integration_util.h"
#include "run_cli.h"

namespace gputriage {
namespace {

using core::Json;

using Out = testing::CliOutput;

Out GtInspect(std::vector<std::string> args) { return testing::RunCli(GT_GPUTRIAGE_BIN, std::move(args)); }

TEST(InspectCommand, NotAGpuFileIsAClearError) {
  testing::TempDir tmp;
  std::string junk = tmp / "junk.bin";
  std::ofstream(junk) << "just some bytes\n";
  Out o = GtInspect({"inspect", "--no-snapshot", junk});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("not an ELF file, fatbin, clang offload bundle or PTX text"), std::string::npos) << o.err;
  Out missing = GtInspect({"inspect", "--no-snapshot", tmp / "absent"});
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("No such file or directory"), std::string::npos);
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

template <typename T>
void PutAt(std::string& bytes, size_t at, T value) {
  ASSERT_LE(at + sizeof(T), bytes.size());
  std::memcpy(bytes.data() + at, &value, sizeof(T));
}

// A host ELF that cannot be read fully is not "0 GPU code objects": truncated, or with a
// section-header table that is damaged, it is an error naming the file and what is wrong, exit
// status 2, and the JSON stays one valid document with the error in the file's entry. Failed
// before: "0 GPU code object(s)", exit 0.
TEST(InspectCommand, ATruncatedOrCorruptElfIsAnErrorNotZeroObjects) {
  testing::TempDir tmp;
  std::string exe = ReadBytes(std::string(GT_CRASHERS_DIR) + "/crasher");
  ASSERT_GT(exe.size(), 4096u);
  uint64_t shoff = 0;
  std::memcpy(&shoff, exe.data() + 0x28, 8);
  struct Case {
    std::string name, bytes, message;
  };
  std::vector<Case> cases;
  cases.push_back({"truncated", exe.substr(0, exe.size() / 2), "runs past the end of the file"});
  cases.push_back({"shoff-past-end", exe, "runs past the end of the file"});
  PutAt<uint64_t>(cases.back().bytes, 0x28, exe.size() + 4096);
  cases.push_back({"shentsize", exe, "section headers of 12 bytes, not 64"});
  PutAt<uint16_t>(cases.back().bytes, 0x3a, 12);
  cases.push_back({"shstrndx", exe, "section-name table"});
  PutAt<uint16_t>(cases.back().bytes, 0x3e, 0x7fff);
  for (const Case& c : cases) {
    std::string path = tmp / c.name;
    std::ofstream(path, std::ios::binary) << c.bytes;
    Out text = GtInspect({"inspect", "--no-snapshot", path});
    EXPECT_EQ(text.status, 2) << c.name << ": " << text.out << text.err;
    EXPECT_EQ(text.out.find("0 GPU code object(s)"), std::string::npos) << c.name << ": " << text.out;
    EXPECT_NE(text.err.find(path + ": "), std::string::npos) << c.name << ": " << text.err;
    EXPECT_NE(text.err.find(c.message), std::string::npos) << c.name << ": " << text.err;
    Out json = GtInspect({"inspect", "--json", "--no-snapshot", path});
    EXPECT_EQ(json.status, 2) << c.name;
    Json j = Json::parse(json.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << c.name << ": " << json.out;
    const Json& error = j["files"][0]["error"];
    EXPECT_NE((error.is_string() ? error.get<std::string>() : "").find(c.message), std::string::npos)
        << c.name << ": " << json.out;
  }
}

#ifdef GT_CUDA_INPUTS_DIR
const std::string kInputs = GT_CUDA_INPUTS_DIR;

// Damaged GPU code (an entry that does not decompress, a container that lies about its size) is
// reported and the exit status says the file was not read fully (2); the undamaged objects are
// still listed and the JSON is valid. Failed before: exit 0.
TEST(InspectCommand, DamagedGpuCodeExitsNonZero) {
  testing::TempDir tmp;
  std::string object = ReadBytes(kInputs + "/fatbin-speed.o");
  size_t magic = object.find("\x50\xed\x55\xba");
  ASSERT_NE(magic, std::string::npos);
  uint32_t entry_header = 0;
  std::memcpy(&entry_header, object.data() + magic + 16 + 4, 4);
  std::string corrupt = object;
  for (size_t i = magic + 16 + entry_header; i < magic + 16 + entry_header + 64; ++i) corrupt[i] = '\xff';
  std::string path = tmp / "corrupt.o";
  std::ofstream(path, std::ios::binary) << corrupt;

  Out text = GtInspect({"inspect", "--no-snapshot", path});
  EXPECT_EQ(text.status, 2) << text.out << text.err;
  EXPECT_NE(text.out.find(path + ": host-elf, 3 GPU code object(s)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("error: cannot decompress"), std::string::npos) << text.out;
  EXPECT_NE(text.err.find(path + ": 1 of 3 GPU code object(s) damaged"), std::string::npos) << text.err;
  Out json = GtInspect({"inspect", "--json", "--no-snapshot", path});
  EXPECT_EQ(json.status, 2);
  Json j = Json::parse(json.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << json.out;
  ASSERT_EQ(j["files"][0]["code_objects"].size(), 3u);
  EXPECT_TRUE(j["files"][0]["code_objects"][0]["error"].is_string());
  EXPECT_TRUE(j["files"][0]["code_objects"][1]["error"].is_null());

  // A container that claims more entries than its section holds: a problem, exit 2.
  std::string lying = object;
  PutAt<uint64_t>(lying, magic + 8, uint64_t{1} << 40);
  std::string lying_path = tmp / "lying.o";
  std::ofstream(lying_path, std::ios::binary) << lying;
  Out lies = GtInspect({"inspect", "--no-snapshot", lying_path});
  EXPECT_EQ(lies.status, 2) << lies.out << lies.err;
  EXPECT_NE(lies.out.find("problem: " + lying_path + ":.nv_fatbin: fatbin container at"), std::string::npos)
      << lies.out;
  EXPECT_NE(lies.err.find(lying_path + ": 1 problem(s)"), std::string::npos) << lies.err;
}

// Failed before: an ELF header of zeros but for EM_CUDA was "an sm_0 cubin, 0 kernels", exit 0;
// a 2 GB sparse file with an EM_AMDGPU header was read whole (2.1 GB of memory) before refusal.
TEST(InspectCommand, AHeaderAloneIsNoCodeObjectAndIsNotReadWhole) {
  testing::TempDir tmp;
  auto header = [](uint16_t machine) {
    std::string eh(64, '\0');
    eh.replace(0, 4,
               "\x7f"
               "ELF");
    eh[4] = 2;   // ELFCLASS64
    eh[5] = 1;   // little-endian
    eh[6] = 1;   // EV_CURRENT
    eh[16] = 1;  // ET_REL
    std::memcpy(eh.data() + 18, &machine, 2);
    return eh;
  };
  std::string cubin = tmp / "zero.cubin";
  std::ofstream(cubin, std::ios::binary) << header(190);
  Out zero = GtInspect({"inspect", "--no-snapshot", cubin});
  EXPECT_EQ(zero.status, 2) << zero.out << zero.err;
  EXPECT_NE(zero.out.find("not a cubin: its ELF header names no SM architecture"), std::string::npos) << zero.out;
  EXPECT_EQ(zero.out.find("sm_0"), std::string::npos) << zero.out;

  std::string sparse = tmp / "sparse.co";
  { std::ofstream(sparse, std::ios::binary) << header(224); }
  std::filesystem::resize_file(sparse, 2000ull << 20);  // 2,000 MiB, a hole after the header
  Out big = GtInspect({"inspect", "--no-snapshot", sparse});
  EXPECT_EQ(big.status, 2) << big.out << big.err;
  EXPECT_NE(big.err.find(sparse), std::string::npos) << big.err;
  long peak = PeakRssKiB({"inspect", "--no-snapshot", sparse});
  ASSERT_GT(peak, 0);
  EXPECT_LT(peak, 256 * 1024) << "peak RSS of inspect on a 2,000 MiB sparse code object, KiB";
}

// The JSON contract on a host object carrying an LZ4-compressed fatbin.
TEST(InspectCommand, JsonContractOnANvccFatbin) {
  Out o = GtInspect({"inspect", "--json", "--no-snapshot", kInputs + "/fatbin-speed.o"});
  Json j = Json::parse(o.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << o.out.substr(0, 500) << o.err;
  EXPECT_EQ(o.status, 0) << o.err;
  ASSERT_EQ(j["files"].size(), 1u);
  const Json& objects = j["files"][0]["code_objects"];
  ASSERT_EQ(objects.size(), 3u);
  for (const Json& co : objects) {
    for (const char* key : {"vendor", "arch", "format", "kernels"}) EXPECT_TRUE(co.contains(key)) << key;
    EXPECT_EQ(co["vendor"], "nvidia");
    EXPECT_TRUE(co["compressed"].get<bool>());
  }
  EXPECT_EQ(objects[0]["arch"], "sm_80");
  EXPECT_EQ(objects[0]["format"], "cubin");
  EXPECT_EQ(objects[2]["format"], "ptx");
  for (const Json& k : objects[1]["kernels"]) {
    for (const char* key : {"name", "registers", "shared_bytes", "local_bytes"}) EXPECT_TRUE(k.contains(key)) << key;
  }
  EXPECT_TRUE(j["findings"].is_array());
}

// Coverage against a snapshot's GPUs: sm_90 is covered, a Blackwell GPU (12.0) only through PTX.
TEST(InspectCommand, CoverageAgainstTheSnapshotsGpus) {
  testing::TempDir tmp;
  auto snapshot = [&](const std::string& cc) {
    std::string path = tmp / ("snap-" + cc + ".json");
    std::ofstream(path) << Json{{"schema_version", 1},
                                {"gpus", {{{"pci_address", "0000:00:06.0"}, {"nvidia", {{"compute_capability", cc}}}}}}}
                               .dump();
    return path;
  };
  Out h200 = GtInspect({"inspect", "--snapshot", snapshot("9.0"), kInputs + "/fatbin-size.o"});
  EXPECT_EQ(h200.status, 0) << h200.out << h200.err;
  EXPECT_NE(h200.out.find("sm_90 cubin"), std::string::npos) << h200.out;
  Out blackwell = GtInspect({"inspect", "--json", "--snapshot", snapshot("12.0"), kInputs + "/fatbin-size.o"});
  Json j = Json::parse(blackwell.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << blackwell.out;
  std::vector<std::string> ids;
  for (const Json& f : j["findings"]) ids.push_back(f["id"]);
  EXPECT_EQ(ids, (std::vector<std::string>{"inspect.ptx_only", "inspect.stack_frame"})) << j["findings"].dump();
  Out turing = GtInspect({"inspect", "--json", "--snapshot", snapshot("7.5"), kInputs + "/fatbin-size.o"});
  EXPECT_EQ(turing.status, 1) << "no code for sm_75 is an error";
}

// --kernel lists the matching kernels with their numbers.
TEST(InspectCommand, KernelFilter) {
  Out o = GtInspect({"inspect", "--no-snapshot", "--kernel", "bounded_add", kInputs + "/sm_90.cubin"});
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.out.find("bounded_add(float*, float const*, int)  regs 10 shared 0 local 0 max_threads 256 params 20"),
            std::string::npos)
      << o.out;
  EXPECT_EQ(o.out.find("big_shared"), std::string::npos);
}
// --pid: every file a running process mapped; here a Python process that loaded an nvcc-built
// shared library (ctypes; no CUDA call is made, so no GPU is needed).
TEST(InspectCommand, PidInspectsTheLibrariesAProcessMapped) {
  if (system("python3 -c 'import ctypes' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3 with ctypes";
  std::string lib = kInputs + "/libkernels.so";
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = fork();
  if (child == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    execlp("python3", "python3", "-c",
           "import ctypes, sys, time; ctypes.CDLL(sys.argv[1]); print('ready', flush=True); time.sleep(60)",
           lib.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  // Wait for "ready" (a python launcher may write before it); keep the pipe open while the
  // child lives, or its next write would kill it.
  std::string seen;
  char buf[256];
  while (seen.find("ready") == std::string::npos) {
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    seen.append(buf, static_cast<size_t>(n));
  }
  ASSERT_NE(seen.find("ready"), std::string::npos) << "the python child did not start: " << seen;
  Out o = GtInspect({"inspect", "--json", "--no-snapshot", "--pid", std::to_string(child)});
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(fds[0]);
  Json j = Json::parse(o.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << o.out.substr(0, 300) << o.err;
  bool found = false;
  for (const Json& f : j["files"]) {
    if (f["path"].get<std::string>().find("libkernels.so") == std::string::npos) continue;
    found = true;
    ASSERT_EQ(f["code_objects"].size(), 2u) << f.dump().substr(0, 500);  // sm_90 SASS + compute_90 PTX
    EXPECT_EQ(f["code_objects"][0]["arch"], "sm_90");
  }
  EXPECT_TRUE(found) << "libkernels.so is among the process's files";
  Out none = GtInspect({"inspect", "--pid", "999999999"});
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.err.find("/proc/999999999/maps"), std::string::npos) << none.err;
}
#endif

// A real vendor library with facts about its own kernels: Debian's librocrand.so.1 (package
// librocrand1, 24 MiB, in the test set; 7 code objects for gfx803 to gfx90a, 23 kernels that
// spill), checked against a gfx1100 it has no code for. The text output leads with what the user
// can change (the missing architecture: which build is installed) and folds the rest into one
// line for the library; --verbose shows each folded finding in full; --json keeps them all,
// ranked. (Debian's rocSPARSE, 1.2 GiB, also has kernels with LDS at the limit; it is read by
// bench/inspect_rss.sh, not here.)
TEST(InspectCommand, VendorLibraryInternalsAreFoldedUnlessVerbose) {
  const std::string lib = "/usr/lib/x86_64-linux-gnu/librocrand.so.1";
  ASSERT_EQ(access(lib.c_str(), R_OK), 0)
      << lib << " is not installed: scripts/install-deps --test installs librocrand1";
  testing::TempDir tmp;
  std::string snap = tmp / "gfx1100.json";
  std::ofstream(snap)
      << Json{{"schema_version", 1}, {"gpus", {{{"pci_address", "0000:03:00.0"}, {"gfx_arch", "gfx1100"}}}}}.dump();
  Out text = GtInspect({"inspect", "--snapshot", snap, lib});
  EXPECT_EQ(text.status, 1) << text.err;  // the missing architecture is an error
  size_t missing = text.out.find("[error] " + lib + ": no code object for the gfx1100 (0000:03:00.0) GPU\n");
  ASSERT_NE(missing, std::string::npos) << text.out;
  EXPECT_NE(text.out.find("    Carries gfx1030, gfx803, gfx900:xnack-, gfx906:xnack-, gfx908:xnack-, gfx90a:xnack+, "
                          "gfx90a:xnack-.",
                          missing),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("    why read: its kernels cannot launch on this GPU", missing), std::string::npos);
  std::string folded = "[info] " + lib +
                       " (rocrand, a known GPU library): 1 fact(s) about its own kernels folded: register spills "
                       "(--verbose shows them)\n";
  size_t fold = text.out.find(folded);
  ASSERT_NE(fold, std::string::npos) << text.out;
  EXPECT_LT(missing, fold);
  EXPECT_EQ(text.out.find("spill registers to scratch memory"), std::string::npos) << text.out;

  Out verbose = GtInspect({"inspect", "--verbose", "--snapshot", snap, lib});
  EXPECT_EQ(verbose.status, 1);
  EXPECT_EQ(verbose.out.find("fact(s) about its own kernels folded"), std::string::npos) << verbose.out;
  size_t v_missing = verbose.out.find("[error] " + lib + ": no code object for the gfx1100");
  size_t spills = verbose.out.find("[warning] " + lib + ": 23 kernel(s) spill registers to scratch memory\n");
  ASSERT_NE(v_missing, std::string::npos) << verbose.out;
  ASSERT_NE(spills, std::string::npos) << verbose.out;
  EXPECT_LT(v_missing, spills);
  EXPECT_NE(verbose.out.find("    why read: about rocrand's own kernels, which only its vendor can change", spills),
            std::string::npos);

  // A kernel filter that matches nothing keeps the document small (every kernel still counts
  // for the findings).
  Out json = GtInspect({"inspect", "--json", "--kernel", "no kernel is called this", "--snapshot", snap, lib});
  Json j = Json::parse(json.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << json.err;
  ASSERT_EQ(j["findings"].size(), 2u) << j["findings"].dump();
  std::vector<std::string> ids, scopes;
  for (const Json& f : j["findings"]) {
    ids.push_back(f["id"]);
    scopes.push_back(f["scope"]);
    EXPECT_EQ(f["component"], "rocrand");
    EXPECT_EQ(f["file"], lib);
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"inspect.missing_arch", "inspect.register_spills"}));
  EXPECT_EQ(scopes, (std::vector<std::string>{"install", "vendor-internal"}));
  EXPECT_EQ(j["findings"][0]["folded"], false);
  EXPECT_EQ(j["findings"][0]["actionable"], true);
  EXPECT_EQ(j["findings"][1]["folded"], true);
  EXPECT_EQ(j["findings"][1]["rank"], 2);
}

#ifdef GT_HIP_INPUTS_DIR
const std::string kHip = GT_HIP_INPUTS_DIR;

// A hipcc-built host object: a code object per target id, with the AMD kernel fields.
TEST(InspectCommand, JsonContractOnAHipccObject) {
  Out o = GtInspect({"inspect", "--json", "--no-snapshot", kHip + "/kernels.o"});
  Json j = Json::parse(o.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << o.out.substr(0, 300) << o.err;
  const Json& objects = j["files"][0]["code_objects"];
  ASSERT_EQ(objects.size(), 3u);
  std::set<std::string> targets;
  for (const Json& co : objects) {
    EXPECT_EQ(co["vendor"], "amd");
    EXPECT_EQ(co["format"], "hsaco-v4");
    targets.insert(co["target_id"].get<std::string>());
    ASSERT_FALSE(co["kernels"].empty());
    for (const char* key :
         {"name", "sgpr_count", "vgpr_count", "lds_bytes", "scratch_bytes", "max_workgroup_size", "wavefront_size"}) {
      EXPECT_TRUE(co["kernels"][0].contains(key)) << key;
    }
  }
  EXPECT_EQ(targets, (std::set<std::string>{"gfx90a:sramecc+:xnack-", "gfx1030", "gfx906"}));
  // An AMD GPU of another generation has no code here.
  testing::TempDir tmp;
  std::string snap = tmp / "gfx1100.json";
  std::ofstream(snap)
      << Json{{"schema_version", 1}, {"gpus", {{{"pci_address", "0000:03:00.0"}, {"gfx_arch", "gfx1100"}}}}}.dump();
  Out missing = GtInspect({"inspect", "--json", "--snapshot", snap, kHip + "/kernels.o"});
  EXPECT_EQ(missing.status, 1);
  Json m = Json::parse(missing.out, nullptr, false);
  ASSERT_FALSE(m.is_discarded());
  bool missing_arch = false;
  for (const Json& f : m["findings"]) missing_arch = missing_arch || f["id"] == "inspect.missing_arch";
  EXPECT_TRUE(missing_arch) << m["findings"].dump();
}

// --disasm through llvm-objdump on a standalone code object; a bundle is refused with the
// command that extracts one.
TEST(InspectCommand, DisasmThroughLlvmObjdump) {
  Out bundled = GtInspect({"inspect", "--disasm", "--kernel", "lds_reverse", kHip + "/kernels.o"});
  EXPECT_EQ(bundled.status, 2);
  EXPECT_NE(bundled.err.find("clang-offload-bundler --unbundle"), std::string::npos) << bundled.err;
  Out o = GtInspect({"inspect", "--disasm", "--kernel", "lds_reverse", kHip + "/kernels-gfx90a.co"});
  if (o.status == 2 && o.err.find("needs llvm-objdump") != std::string::npos) GTEST_SKIP() << o.err;
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.out.find("s_endpgm"), std::string::npos) << o.out.substr(0, 1000);
}
#endif

}  // namespace
}  // namespace gputriage
