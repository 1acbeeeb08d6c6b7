#include "inspect/nvidia.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <re2/re2.h>

#include "capture_tree.h"
#include "inspect/inspect.h"

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

// Containers are found at any 8-byte slot after padding of any length: here after 70,000
// bytes of zeros (more than one 64 KiB scan window) and after padding that makes the next
// container start on the last slot of a window and on the first slot after it. A magic in the
// last 4 to 7 bytes is still seen (as a truncated header); one at an odd offset is not a slot.
TEST(NvidiaFatbin, ContainersAreFoundAfterPaddingOfAnyLength) {
  std::string object = Read("fatbin-speed.o");
  size_t magic = object.find("\x50\xed\x55\xba");
  ASSERT_NE(magic, std::string::npos);
  uint64_t entries = 0;
  std::memcpy(&entries, object.data() + magic + 8, 8);
  std::string container = object.substr(magic, 16 + entries);
  container.resize((container.size() + 7) / 8 * 8, '\0');
  for (size_t padding : {size_t{8}, size_t{70000}, size_t{65536 - 8}, size_t{65536}, size_t{65536 + 8}}) {
    std::string bytes = container + std::string(padding, '\0') + container;
    std::vector<CodeObject> objects = ReadNvFatbin(bytes, "padded");
    ASSERT_EQ(objects.size(), 6u) << padding;
    for (const CodeObject& co : objects) EXPECT_FALSE(co.error) << padding << ": " << co.error.value_or("");
  }
  std::string tail = container + std::string(70000, '\0') + std::string("\x50\xed\x55\xba\0\0", 6);
  std::vector<CodeObject> with_tail = ReadNvFatbin(tail, "tail");
  ASSERT_EQ(with_tail.size(), 4u);
  EXPECT_EQ(with_tail.back().error.value_or(""),
            fmt::format("tail: fatbin container at {:#x}: header truncated (6 of 16 bytes)", container.size() + 70000));
  std::string odd = container + std::string(1001, '\0') + container;
  EXPECT_EQ(ReadNvFatbin(odd, "odd").size(), 3u) << "a container 1 byte off an 8-byte slot is not one";
}

template <typename T>
T Get(const std::string& bytes, size_t at) {
  T value{};
  EXPECT_LE(at + sizeof(T), bytes.size());
  if (at + sizeof(T) <= bytes.size()) std::memcpy(&value, bytes.data() + at, sizeof(T));
  return value;
}

template <typename T>
void Put(std::string& bytes, size_t at, T value) {
  ASSERT_LE(at + sizeof(T), bytes.size());
  std::memcpy(bytes.data() + at, &value, sizeof(T));
}

// A section of an ELF64 host object: where its header is and what it says.
struct SectionAt {
  uint64_t header = 0;  // file offset of the Elf64_Shdr
  uint64_t offset = 0, size = 0;
};

std::optional<SectionAt> FindSection(const std::string& elf, std::string_view name) {
  uint64_t shoff = Get<uint64_t>(elf, 0x28);
  uint16_t shentsize = Get<uint16_t>(elf, 0x3a), shnum = Get<uint16_t>(elf, 0x3c), shstrndx = Get<uint16_t>(elf, 0x3e);
  uint64_t strtab = Get<uint64_t>(elf, shoff + uint64_t{shstrndx} * shentsize + 0x18);
  for (uint16_t i = 0; i < shnum; ++i) {
    uint64_t header = shoff + uint64_t{i} * shentsize;
    const char* section_name = elf.c_str() + strtab + Get<uint32_t>(elf, header);
    if (section_name == name)
      return SectionAt{header, Get<uint64_t>(elf, header + 0x18), Get<uint64_t>(elf, header + 0x20)};
  }
  return std::nullopt;
}

// A container header whose header size is larger than what is left of its section: the bytes
// "remaining after the header" underflowed, the container was taken as valid, and its entries
// were read from beyond the section's end (here: the object's real second and third entries,
// which a truncated .nv_fatbin no longer holds). The container is refused with its offset.
TEST(NvidiaFatbin, AContainerHeaderLongerThanItsSectionIsRefused) {
  std::string object = Read("fatbin-speed.o");
  std::optional<SectionAt> nv = FindSection(object, ".nv_fatbin");
  ASSERT_TRUE(nv.has_value());
  ASSERT_EQ(Get<uint32_t>(object, nv->offset), 0xBA55ED50u);
  ASSERT_EQ(Get<uint16_t>(object, nv->offset + 6), 16u) << "container header size";
  // The second entry, from the container's start: the first entry's header and payload sizes.
  uint64_t first = nv->offset + 16;
  uint64_t second = 16 + Get<uint32_t>(object, first + 4) + Get<uint64_t>(object, first + 8);
  ASSERT_LT(second, 0x10000u) << "must fit the 16-bit header-size field";
  ASSERT_LT(second + 64, nv->size);

  // The section is cut 8 bytes before the second entry; the container header claims a header
  // that ends exactly at it.
  std::string damaged = object;
  Put<uint16_t>(damaged, nv->offset + 6, static_cast<uint16_t>(second));
  Put<uint64_t>(damaged, nv->header + 0x20, second - 8);
  gputriage::testing::TempDir dir;
  std::string path = dir / "damaged.o";
  std::ofstream(path, std::ios::binary) << damaged;

  InspectOptions options;
  options.threads = 1;
  std::vector<CodeObject> objects;
  auto summary = InspectFile(path, options, [&](CodeObject&& co, std::string&&) { objects.push_back(std::move(co)); });
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  for (const CodeObject& co : objects) ADD_FAILURE() << "read from outside .nv_fatbin: " << co.origin << " " << co.arch;
  EXPECT_EQ(summary->problems, std::vector<std::string>{fmt::format(
                                   "{}:.nv_fatbin: fatbin container at {:#x}: header of {} bytes runs past the "
                                   "end ({} bytes remain)",
                                   path, nv->offset, second, second - 8)});

  // The same lie in a fatbin file cut after the first entry's header.
  std::string fatbin = object.substr(nv->offset, 16 + 64);
  Put<uint16_t>(fatbin, 6, 0x1000);
  std::vector<CodeObject> from_file = ReadNvFatbin(fatbin, "cut.fatbin");
  ASSERT_EQ(from_file.size(), 1u);
  EXPECT_EQ(from_file[0].origin, "cut.fatbin");
  EXPECT_EQ(from_file[0].error.value_or(""),
            "cut.fatbin: fatbin container at 0x0: header of 4096 bytes runs past the end (80 bytes remain)");

  // The other header fields that can lie or be cut (the same damage is in the fuzz corpus).
  std::string whole = object.substr(nv->offset, nv->size);
  uint64_t entries = Get<uint64_t>(whole, 8);
  std::string too_long = whole;
  Put<uint16_t>(too_long, 6, 0xffff);
  std::string too_many = whole;
  Put<uint64_t>(too_many, 8, ~uint64_t{0});
  std::string entry_lies = whole;
  Put<uint32_t>(entry_lies, 16 + 4, 0xffffffffu);
  for (const auto& [bytes, want] : std::vector<std::pair<std::string, std::string>>{
           {whole.substr(0, 12), "x: fatbin container at 0x0: header truncated (12 of 16 bytes)"},
           {too_long,
            fmt::format("x: fatbin container at 0x0: header of 65535 bytes runs past the end ({} bytes remain)",
                        whole.size())},
           {too_many, fmt::format("x: fatbin container at 0x0: header says 18446744073709551615 bytes of entries, "
                                  "only {} remain",
                                  whole.size() - 16)},
           {entry_lies, fmt::format("x: fatbin entry at 0x10: header size 4294967295 and payload {} run past its "
                                    "container (ends at {:#x})",
                                    Get<uint64_t>(whole, 16 + 8), 16 + entries)}}) {
    std::vector<CodeObject> objects = ReadNvFatbin(bytes, "x");
    ASSERT_FALSE(objects.empty()) << want;
    EXPECT_EQ(objects.back().error.value_or(""), want);
  }
}

// Whatever the headers in .nv_fatbin say, no entry is read from outside the section's bytes:
// every header byte of the container and of its first entries set to values that lie (0, 0xff,
// 0x7f, 0x80, +1), each entry listed and decoded through a reader of the whole object that
// records what is asked of it.
TEST(NvidiaFatbin, NoHeaderMakesAnEntryBeReadFromOutsideTheSection) {
  for (const char* name : {"fatbin-none.o", "fatbin-speed.o"}) {
    std::string object = Read(name);
    std::optional<SectionAt> nv = FindSection(object, ".nv_fatbin");
    ASSERT_TRUE(nv.has_value());
    uint64_t first = nv->offset + 16;
    uint64_t second = first + Get<uint32_t>(object, first + 4) + Get<uint64_t>(object, first + 8);
    std::vector<uint64_t> header_bytes;
    for (uint64_t i = nv->offset; i < first + 64; ++i) header_bytes.push_back(i);
    for (uint64_t i = second; i < second + 64 && i < nv->offset + nv->size; ++i) header_bytes.push_back(i);
    for (uint64_t at : header_bytes) {
      for (int value : {0x00, 0xff, 0x7f, 0x80, (static_cast<unsigned char>(object[at]) + 1) & 0xff}) {
        std::string damaged = object;
        damaged[at] = static_cast<char>(value);
        std::vector<std::string> outside;
        RangeReader read = [&](uint64_t offset, size_t size, std::string* out) {
          if (offset < nv->offset || offset + size > nv->offset + nv->size || offset + size < offset) {
            outside.push_back(fmt::format("{:#x}+{:#x}", offset, size));
          }
          if (offset > damaged.size() || size > damaged.size() - offset) return false;
          out->assign(damaged, offset, size);
          return true;
        };
        std::vector<std::string> problems;
        for (const FatbinEntry& e : ListFatbinEntries(read, nv->offset, nv->size, "x", &problems)) {
          EXPECT_GE(e.payload_offset, nv->offset);
          EXPECT_LE(e.payload_offset + e.payload_size, nv->offset + nv->size);
          (void)DecodeFatbinEntry(read, e, "x");
        }
        EXPECT_TRUE(outside.empty()) << name << ": byte " << fmt::format("{:#x}", at - nv->offset) << " = " << value
                                     << " of .nv_fatbin made reads at " << outside.front();
      }
    }
  }
}
#endif

TEST(NvidiaCubin, NotACubinIsAnErrorNotACrash) {
  EXPECT_TRUE(ReadCubin("", "empty").error.has_value());
  EXPECT_TRUE(ReadCubin("\x7f"
                        "ELF garbage",
                        "garbage")
                  .error.has_value());
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
