#include "inspect/nvidia.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include <re2/re2.h>

namespace gputriage::inspect {
namespace {

#ifdef GT_CUDA_INPUTS_DIR
std::string Read(const std::string& name) {
  std::ifstream in(std::string(GT_CUDA_INPUTS_DIR) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in) << name;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// What ptxas -v printed for each kernel of the same compilation: the oracle.
struct Ptxas {
  uint32_t registers = 0, smem = 0, stack = 0, spill_stores = 0;
};
std::map<std::string, Ptxas> ParsePtxas(const std::string& text) {
  static const RE2 kEntry(R"(Compiling entry function '([^']+)')");
  static const RE2 kStack(R"((\d+) bytes stack frame, (\d+) bytes spill stores)");
  static const RE2 kUsed(R"(Used (\d+) registers)");
  static const RE2 kSmem(R"((\d+) bytes smem)");
  std::map<std::string, Ptxas> out;
  std::string current;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::string name;
    uint32_t a = 0, b = 0;
    if (RE2::PartialMatch(line, kEntry, &name)) current = name;
    if (current.empty()) continue;
    if (RE2::PartialMatch(line, kStack, &a, &b)) {
      out[current].stack = a;
      out[current].spill_stores = b;
    }
    if (RE2::PartialMatch(line, kUsed, &a)) out[current].registers = a;
    if (RE2::PartialMatch(line, kSmem, &a)) out[current].smem = a;
  }
  return out;
}

const Kernel* Find(const CodeObject& co, std::string_view symbol) {
  for (const Kernel& k : co.kernels) {
    if (k.symbol == symbol) return &k;
  }
  return nullptr;
}

void ExpectMatchesPtxas(const CodeObject& co, const std::map<std::string, Ptxas>& oracle) {
  ASSERT_EQ(co.kernels.size(), oracle.size()) << co.arch;
  for (const auto& [symbol, want] : oracle) {
    const Kernel* k = Find(co, symbol);
    ASSERT_NE(k, nullptr) << symbol;
    EXPECT_EQ(k->registers, want.registers) << co.arch << " " << symbol;
    EXPECT_EQ(k->shared_bytes, want.smem) << co.arch << " " << symbol;
    EXPECT_EQ(k->local_bytes, want.stack) << co.arch << " " << symbol;
  }
}

// Every cubin's numbers agree with ptxas -v for the same compilation; launch bounds and parameter
// sizes with the source (tests/inspect/nvidia/kernels.cu).
TEST(NvidiaCubin, EveryKernelAgreesWithPtxas) {
  for (const char* arch : {"80", "90", "120"}) {
    std::string cubin = Read(std::string("sm_") + arch + ".cubin");
    std::map<std::string, Ptxas> oracle = ParsePtxas(Read(std::string("sm_") + arch + ".ptxas.txt"));
    ASSERT_EQ(oracle.size(), 4u) << "ptxas reported every kernel for sm_" << arch;
    CodeObject co = ReadCubin(cubin, "test");
    ASSERT_FALSE(co.error) << *co.error;
    EXPECT_EQ(co.arch, std::string("sm_") + arch);
    EXPECT_EQ(co.format, "cubin");
    ExpectMatchesPtxas(co, oracle);
    // __launch_bounds__(1024, 2) caps it at 32 registers where 2048 threads fit an SM; sm_120
    // (1536 threads per SM) ignores the minimum and does not spill.
    if (std::string(arch) != "120") {
      EXPECT_GT(oracle["_Z6spillsPfPKf"].spill_stores, 0u) << "sm_" << arch;
    }
    EXPECT_EQ(Find(co, "_Z11bounded_addPfPKfi")->max_threads, 256u);
    EXPECT_EQ(Find(co, "_Z6spillsPfPKf")->max_threads, 1024u);
    EXPECT_FALSE(Find(co, "_Z10big_sharedPfPKf")->max_threads.has_value());
    EXPECT_EQ(Find(co, "_Z11bounded_addPfPKfi")->param_bytes, 20u);  // float*, const float*, int
    EXPECT_EQ(Find(co, "_Z11bounded_addPfPKfi")->name, "bounded_add(float*, float const*, int)");
  }
}

// The fatbin inside a host object, uncompressed, LZ4 (--compress-mode=speed) and zstd
// (--compress-mode=size): the same three entries and, for each cubin, the numbers of the
// standalone cubin of that architecture.
TEST(NvidiaFatbin, UncompressedLz4AndZstdEntriesDecodeToTheSameKernels) {
  CodeObject sm80 = ReadCubin(Read("sm_80.cubin"), "sm_80.cubin");
  CodeObject sm90 = ReadCubin(Read("sm_90.cubin"), "sm_90.cubin");
  for (const char* mode : {"none", "speed", "size"}) {
    std::vector<CodeObject> objects = ReadNvFatbin(Read(std::string("fatbin-") + mode + ".o"), mode);
    ASSERT_EQ(objects.size(), 3u) << mode;
    std::map<std::string, const CodeObject*> by_arch;
    for (const CodeObject& co : objects) {
      EXPECT_FALSE(co.error) << mode << " " << co.arch << ": " << co.error.value_or("");
      EXPECT_EQ(co.compressed, std::string(mode) != "none") << mode << " " << co.arch;
      by_arch[co.arch] = &co;
    }
    ASSERT_TRUE(by_arch.count("sm_80") && by_arch.count("sm_90") && by_arch.count("compute_90")) << mode;
    for (const auto& [arch, standalone] : {std::pair{"sm_80", &sm80}, std::pair{"sm_90", &sm90}}) {
      const CodeObject& co = *by_arch[arch];
      EXPECT_EQ(co.format, "cubin");
      ASSERT_EQ(co.kernels.size(), standalone->kernels.size());
      for (const Kernel& k : standalone->kernels) {
        const Kernel* got = Find(co, k.symbol);
        ASSERT_NE(got, nullptr) << mode << " " << arch << " " << k.symbol;
        EXPECT_EQ(got->registers, k.registers) << mode << " " << arch << " " << k.symbol;
        EXPECT_EQ(got->shared_bytes, k.shared_bytes);
        EXPECT_EQ(got->local_bytes, k.local_bytes);
        EXPECT_EQ(got->max_threads, k.max_threads);
      }
    }
    const CodeObject& ptx = *by_arch["compute_90"];
    EXPECT_EQ(ptx.format, "ptx");
    EXPECT_EQ(ptx.kernels.size(), 4u);
    EXPECT_EQ(Find(ptx, "_Z11bounded_addPfPKfi")->max_threads, 256u);
    EXPECT_EQ(Find(ptx, "_Z6spillsPfPKf")->max_threads, 1024u);
  }
}

// Damage: a truncated fatbin, a container header that lies about its size, a compressed entry
// whose bytes are corrupt. Each gives an error for that object; the others are still read.
TEST(NvidiaFatbin, DamageIsReportedPerObject) {
  std::string object = Read("fatbin-speed.o");
  size_t magic = object.find("\x50\xed\x55\xba");
  ASSERT_NE(magic, std::string::npos);
  std::string fatbin = object.substr(magic);
  std::vector<CodeObject> good = ReadNvFatbin(fatbin, "good");
  ASSERT_EQ(good.size(), 3u);

  // Cut in the middle of the third entry's payload: the first two still decode.
  uint64_t size = 0;
  std::memcpy(&size, fatbin.data() + 8, 8);
  std::string cut = fatbin.substr(0, 16 + size - 100);
  std::vector<CodeObject> from_cut = ReadNvFatbin(cut, "cut");
  size_t ok = 0, errors = 0;
  for (const CodeObject& co : from_cut) (co.error ? errors : ok) += 1;
  EXPECT_EQ(errors, 1u);
  EXPECT_EQ(ok, 0u) << "the container header now lies about its size, so its entries are not trusted";
  EXPECT_NE(from_cut.back().error->find("header says"), std::string::npos) << *from_cut.back().error;

  // Corrupt the first entry's LZ4 payload: that entry fails, the other two decode.
  std::string corrupt = fatbin;
  uint32_t entry_header = 0;
  std::memcpy(&entry_header, corrupt.data() + 16 + 4, 4);
  for (size_t i = 16 + entry_header; i < 16 + entry_header + 64; ++i) corrupt[i] = static_cast<char>(0xff);
  std::vector<CodeObject> from_corrupt = ReadNvFatbin(corrupt, "corrupt");
  ASSERT_EQ(from_corrupt.size(), 3u);
  ASSERT_TRUE(from_corrupt[0].error.has_value());
  EXPECT_NE(from_corrupt[0].error->find("cannot decompress"), std::string::npos) << *from_corrupt[0].error;
  EXPECT_FALSE(from_corrupt[1].error);
  EXPECT_FALSE(from_corrupt[2].error);

  // An absurd uncompressed size in an entry header.
  std::string absurd = fatbin;
  uint64_t huge = 1ull << 50;
  std::memcpy(absurd.data() + 16 + 56, &huge, 8);
  std::vector<CodeObject> from_absurd = ReadNvFatbin(absurd, "absurd");
  ASSERT_EQ(from_absurd.size(), 3u);
  ASSERT_TRUE(from_absurd[0].error.has_value());
  EXPECT_NE(from_absurd[0].error->find("not plausible"), std::string::npos);
}
#endif

TEST(NvidiaCubin, NotACubinIsAnErrorNotACrash) {
  EXPECT_TRUE(ReadCubin("", "empty").error.has_value());
  EXPECT_TRUE(ReadCubin("\x7f" "ELF garbage", "garbage").error.has_value());
  EXPECT_TRUE(ReadNvFatbin("no fatbin here", "text").empty());
}

TEST(NvidiaPtx, EntriesAndMaxntid) {
  CodeObject co = ReadPtx(
      ".version 9.0\n.target sm_90a\n.address_size 64\n"
      ".visible .entry _Z3addPfPKfi(\n .param .u64 a\n)\n.maxntid 128, 2, 1\n{\n ret;\n}\n"
      ".visible .entry plain(\n)\n{\n ret;\n}\n",
      "inline");
  EXPECT_EQ(co.arch, "compute_90");
  ASSERT_EQ(co.kernels.size(), 2u);
  EXPECT_EQ(co.kernels[0].name, "add(float*, float const*, int)");
  EXPECT_EQ(co.kernels[0].max_threads, 256u);
  EXPECT_FALSE(co.kernels[1].max_threads.has_value());
}

}  // namespace
}  // namespace gputriage::inspect
