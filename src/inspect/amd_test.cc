// Tests of the AMD readers on real binaries built by hipcc from tests/inspect/amd/kernels.hip
// (cmake/hip_inputs.cmake): every number is compared with what llvm-readelf reads from the same
// code object, every bundle entry with what clang-offload-bundler extracts. Damaged inputs are
// made from the real ones (truncated, patched offsets and counts, corrupted compression); the
// compressed bundles are constructed here from a real plain bundle, following the documented
// CCOB header, because Debian's clang 15 cannot write them.
#include "inspect/amd.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>
#include <msgpack.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

namespace gputriage::inspect {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::testing::StrEq;

// ---------------------------------------------------------------------------------------------
// Inputs and the llvm-readelf oracle.

#ifdef GT_HIP_INPUTS_DIR
constexpr const char* kInputsDir = GT_HIP_INPUTS_DIR;
#else
constexpr const char* kInputsDir = nullptr;
#endif
#ifdef GT_LLVM_READELF
constexpr const char* kReadelf = GT_LLVM_READELF;
#else
constexpr const char* kReadelf = nullptr;
#endif

#define REQUIRE_HIP_INPUTS()                                                 \
  if (!kInputsDir)                                                           \
  GTEST_SKIP() << "hipcc or clang-offload-bundler was not found when CMake " \
                  "ran: no HIP test inputs (apt-get install hipcc)"
#define REQUIRE_READELF() \
  if (!kReadelf) GTEST_SKIP() << "llvm-readelf was not found when CMake ran: no oracle"

std::string InputPath(const std::string& name) { return std::string(kInputsDir) + "/" + name; }

std::string ReadInput(const std::string& name) {
  std::ifstream in(InputPath(name), std::ios::binary);
  EXPECT_TRUE(in) << InputPath(name);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

/// stdout of a command (stderr too), or the empty string when it fails.
std::string RunCommand(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen((command + " 2>&1").c_str(), "r"), pclose);
  if (!pipe) return "";
  std::string out;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe.get())) out.append(buffer, n);
  return out;
}

/// What `llvm-readelf --notes` prints of the code object metadata (YAML): the target, the
/// version, and per kernel its scalar fields (".sgpr_count" -> "11").
struct Oracle {
  std::string target;
  std::string version;
  std::vector<std::map<std::string, std::string>> kernels;
};

void ParseKernelLine(const std::string& line, size_t key_at, Oracle* oracle) {
  size_t colon = line.find(':', key_at);
  if (colon == std::string::npos || oracle->kernels.empty()) return;
  std::string key = line.substr(key_at, colon - key_at);
  size_t value_at = line.find_first_not_of(' ', colon + 1);
  if (value_at == std::string::npos) return;  // a nested list or map (.args, .language_version)
  oracle->kernels.back()[key] = line.substr(value_at);
}

Oracle ReadelfNotes(const std::string& path) {
  Oracle oracle;
  std::istringstream lines(RunCommand(std::string("'") + kReadelf + "' --notes '" + path + "'"));
  enum { kNone, kKernels, kVersion } section = kNone;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("amdhsa.kernels:", 0) == 0) {
      section = kKernels;
    } else if (line.rfind("amdhsa.version:", 0) == 0) {
      section = kVersion;
    } else if (line.rfind("amdhsa.target:", 0) == 0) {
      section = kNone;
      std::string value = line.substr(line.find_first_not_of(' ', 14));
      if (value.size() >= 2 && value.front() == '\'') value = value.substr(1, value.size() - 2);
      oracle.target = value;
    } else if (!line.empty() && line[0] != ' ') {
      section = kNone;
    } else if (section == kVersion && line.rfind("  - ", 0) == 0) {
      oracle.version += (oracle.version.empty() ? "" : ".") + line.substr(4);
    } else if (section == kKernels && line.rfind("  - .", 0) == 0) {
      oracle.kernels.emplace_back();  // "  - " opens the next kernel's map
      ParseKernelLine(line, 4, &oracle);
    } else if (section == kKernels && line.rfind("    .", 0) == 0) {
      ParseKernelLine(line, 4, &oracle);
    }
  }
  return oracle;
}

/// The demangled names, written out by hand: the readers' demangling is not its own oracle.
const std::map<std::string, std::string>& ExpectedNames() {
  static const auto* names = new std::map<std::string, std::string>{
      {"_Z13bounded_saxpyfPKfPfi", "bounded_saxpy(float, float const*, float*, int)"},
      {"_Z11lds_reversePKfPf", "lds_reverse(float const*, float*)"},
      {"_Z17scratch_histogramPKiPii", "scratch_histogram(int const*, int*, int)"},
      {"_Z8pressureILi160EEvPKfPf", "void pressure<160>(float const*, float*)"},
  };
  return *names;
}

const Kernel* FindKernel(const CodeObject& object, std::string_view name_prefix) {
  for (const Kernel& kernel : object.kernels) {
    if (kernel.name.rfind(name_prefix, 0) == 0) return &kernel;
  }
  return nullptr;
}

std::string Text(const std::optional<uint32_t>& value) { return value ? std::to_string(*value) : "absent"; }
std::string Text(const std::optional<bool>& value) { return value ? (*value ? "true" : "false") : "absent"; }

/// Compares one field; a key llvm-readelf does not print must be absent in ours (not 0).
template <typename T>
void ExpectField(const std::map<std::string, std::string>& oracle, const char* key, const std::optional<T>& ours,
                 const std::string& context, int* compared) {
  auto it = oracle.find(key);
  std::string want = it == oracle.end() ? "absent" : it->second;
  EXPECT_EQ(Text(ours), want) << context << " " << key;
  if (it != oracle.end()) ++*compared;
}

void ExpectMatchesReadelf(const CodeObject& object, const Oracle& oracle) {
  ASSERT_EQ(oracle.kernels.size(), 4u) << "llvm-readelf shows the 4 kernels of " << object.origin;
  ASSERT_EQ(object.kernels.size(), oracle.kernels.size()) << object.origin;
  for (const auto& want : oracle.kernels) {
    const std::string& symbol = want.at(".symbol");
    auto ours =
        std::find_if(object.kernels.begin(), object.kernels.end(), [&](const Kernel& k) { return k.symbol == symbol; });
    ASSERT_NE(ours, object.kernels.end()) << symbol << " in " << object.origin;
    std::string context = object.target_id + " " + symbol;
    EXPECT_EQ(ours->name, ExpectedNames().at(want.at(".name"))) << context;
    int compared = 0;
    ExpectField(want, ".sgpr_count", ours->sgpr_count, context, &compared);
    ExpectField(want, ".vgpr_count", ours->vgpr_count, context, &compared);
    ExpectField(want, ".agpr_count", ours->agpr_count, context, &compared);
    ExpectField(want, ".sgpr_spill_count", ours->sgpr_spill_count, context, &compared);
    ExpectField(want, ".vgpr_spill_count", ours->vgpr_spill_count, context, &compared);
    ExpectField(want, ".group_segment_fixed_size", ours->lds_bytes, context, &compared);
    ExpectField(want, ".private_segment_fixed_size", ours->scratch_bytes, context, &compared);
    ExpectField(want, ".kernarg_segment_size", ours->kernarg_bytes, context, &compared);
    ExpectField(want, ".max_flat_workgroup_size", ours->max_workgroup_size, context, &compared);
    ExpectField(want, ".wavefront_size", ours->wavefront_size, context, &compared);
    ExpectField(want, ".uses_dynamic_stack", ours->dynamic_stack, context, &compared);
    // v4 has all 11; v3 lacks .agpr_count and .uses_dynamic_stack.
    EXPECT_GE(compared, 9) << context << ": too few fields in llvm-readelf's output to compare";
  }
}

// ---------------------------------------------------------------------------------------------
// Byte surgery on real inputs.

template <typename T>
T GetAt(const std::string& bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

template <typename T>
void Put(std::string* bytes, size_t offset, T value) {
  std::memcpy(bytes->data() + offset, &value, sizeof(T));
}

template <typename T>
void Append(std::string* bytes, T value) {
  bytes->append(reinterpret_cast<const char*>(&value), sizeof(T));
}

/// Offset of entry `index`'s header (offset, size, id length, id) in a plain bundle.
size_t EntryHeaderAt(const std::string& bundle, uint64_t index) {
  size_t at = 32;
  for (uint64_t i = 0; i < index; ++i) at += 24 + GetAt<uint64_t>(bundle, at + 16);
  return at;
}

/// A plain bundle with these (id, bytes) entries, each at a 4096-aligned offset, as clang
/// lays them out.
std::string WriteBundle(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string header = "__CLANG_OFFLOAD_BUNDLE__";
  Append<uint64_t>(&header, entries.size());
  size_t header_bytes = header.size();
  for (const auto& [id, bytes] : entries) header_bytes += 24 + id.size();
  std::string data;
  uint64_t offset = (header_bytes + 4095) / 4096 * 4096;
  for (const auto& [id, bytes] : entries) {
    Append<uint64_t>(&header, offset);
    Append<uint64_t>(&header, bytes.size());
    Append<uint64_t>(&header, id.size());
    header += id;
    data.resize(offset - header_bytes, '\0');
    data += bytes;
    offset = (header_bytes + data.size() + 4095) / 4096 * 4096;
  }
  return header + data;
}

std::string ZstdCompress(const std::string& plain) {
  std::string out(ZSTD_compressBound(plain.size()), '\0');
  size_t n = ZSTD_compress(out.data(), out.size(), plain.data(), plain.size(), 3);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

std::string ZlibCompress(const std::string& plain) {
  uLongf n = compressBound(plain.size());
  std::string out(n, '\0');
  EXPECT_EQ(compress2(reinterpret_cast<Bytef*>(out.data()), &n, reinterpret_cast<const Bytef*>(plain.data()),
                      plain.size(), 6),
            Z_OK);
  out.resize(n);
  return out;
}

constexpr uint16_t kZlib = 0;
constexpr uint16_t kZstd = 1;

/// A compressed bundle (CCOB) as clang's CompressedOffloadBundle::compress lays it out
/// (OffloadBundler.h): magic, version, method, sizes by version, hash, data. CONSTRUCTED here:
/// clang 15 predates compression. The hash field is left 0: readers (LLVM's included) do not
/// check it.
std::string MakeCcob(const std::string& plain, uint16_t version, uint16_t method) {
  std::string payload = method == kZstd ? ZstdCompress(plain) : ZlibCompress(plain);
  std::string out = "CCOB";
  Append<uint16_t>(&out, version);
  Append<uint16_t>(&out, method);
  uint64_t header_bytes = version == 1 ? 20 : version == 2 ? 24 : 32;
  uint64_t total = header_bytes + payload.size();
  if (version == 1) {
    Append<uint32_t>(&out, plain.size());
  } else if (version == 2) {
    Append<uint32_t>(&out, total);
    Append<uint32_t>(&out, plain.size());
  } else {
    Append<uint64_t>(&out, total);
    Append<uint64_t>(&out, plain.size());
  }
  Append<uint64_t>(&out, 0);  // truncated MD5, not computed
  return out + payload;
}

/// Replaces the NT_AMDGPU_METADATA note's MessagePack with `msgpack` (no longer than the
/// original), shrinking its descsz; the rest of the note section becomes zero padding.
std::string WithMetadata(std::string elf, const std::string& msgpack) {
  size_t name_at = elf.find(std::string("AMDGPU\0", 7));
  EXPECT_NE(name_at, std::string::npos);
  EXPECT_EQ(GetAt<uint32_t>(elf, name_at - 12), 7u);  // namesz
  EXPECT_EQ(GetAt<uint32_t>(elf, name_at - 4), 32u);  // NT_AMDGPU_METADATA
  uint32_t old_size = GetAt<uint32_t>(elf, name_at - 8);
  EXPECT_LE(msgpack.size(), old_size);
  size_t desc_at = name_at + 8;
  std::fill(elf.begin() + desc_at, elf.begin() + desc_at + old_size, '\0');
  elf.replace(desc_at, msgpack.size(), msgpack);
  Put<uint32_t>(&elf, name_at - 8, msgpack.size());
  return elf;
}

/// MessagePack of a metadata map written by hand: {"amdhsa.version": [major, minor], ...}.
class MetadataWriter {
 public:
  explicit MetadataWriter(uint32_t entries) : packer_(buffer_) { packer_.pack_map(entries); }
  template <typename T>
  MetadataWriter& Key(const std::string& key, const T& value) {
    packer_.pack(key);
    packer_.pack(value);
    return *this;
  }
  msgpack::packer<msgpack::sbuffer>& packer() { return packer_; }
  std::string bytes() const { return std::string(buffer_.data(), buffer_.size()); }

 private:
  msgpack::sbuffer buffer_;
  msgpack::packer<msgpack::sbuffer> packer_;
};

/// {"amdhsa.version": [1, 2], "amdhsa.kernels": [kernel]} with one kernel map of `fields`.
template <typename T>
std::string OneKernelMetadata(const std::string& key, const T& value) {
  MetadataWriter writer(2);
  writer.Key("amdhsa.version", std::vector<int>{1, 2});
  writer.packer().pack(std::string("amdhsa.kernels"));
  writer.packer().pack_array(1);
  writer.packer().pack_map(2);
  writer.packer().pack(std::string(".name"));
  writer.packer().pack(std::string("_Z1kv"));
  writer.packer().pack(key);
  writer.packer().pack(value);
  return writer.bytes();
}

// ---------------------------------------------------------------------------------------------
// Real binaries.

const std::vector<std::string> kV4Arches = {"gfx90a", "gfx1030", "gfx906"};
const std::map<std::string, std::string> kTargetIds = {
    {"gfx90a", "gfx90a:sramecc+:xnack-"}, {"gfx1030", "gfx1030"}, {"gfx906", "gfx906"}};

// The host object's .hip_fatbin: one bundle, the host entry skipped, three code objects whose
// bytes are exactly what clang-offload-bundler --unbundle extracts.
TEST(AmdHipFatbin, HostObjectHoldsThreeTargets) {
  REQUIRE_HIP_INPUTS();
  std::string section = ReadInput("kernels.hip_fatbin");
  std::vector<CodeObject> objects = ReadHipFatbin(section, "kernels.o:.hip_fatbin");
  ASSERT_EQ(objects.size(), 3u);
  std::set<std::string> targets;
  for (const CodeObject& object : objects) {
    ASSERT_FALSE(object.error) << *object.error;
    targets.insert(object.target_id);
    EXPECT_EQ(object.vendor, "amd");
    EXPECT_EQ(object.format, "hsaco-v4");
    EXPECT_FALSE(object.compressed);
    EXPECT_EQ(object.kernels.size(), 4u) << object.target_id;
    EXPECT_EQ(object.size, ReadInput("kernels-" + object.arch + ".co").size()) << object.arch;
    EXPECT_THAT(object.origin, StartsWith("kernels.o:.hip_fatbin+0x"));
  }
  EXPECT_EQ(targets, (std::set<std::string>{"gfx90a:sramecc+:xnack-", "gfx1030", "gfx906"}));
}

TEST(AmdBundle, EntriesAreWhatTheUnbundlerExtracts) {
  REQUIRE_HIP_INPUTS();
  std::string section = ReadInput("kernels.hip_fatbin");
  size_t consumed = 0;
  auto entries = ReadOffloadBundle(section, &consumed);
  ASSERT_TRUE(entries.ok()) << entries.error().message;
  ASSERT_EQ(entries->size(), 4u);
  EXPECT_EQ((*entries)[0].id, "host-x86_64-unknown-linux");
  EXPECT_EQ((*entries)[0].kind, "host");
  EXPECT_TRUE((*entries)[0].bytes.empty());
  EXPECT_LE(consumed, section.size());
  EXPECT_GT(consumed, section.size() - 4096);  // the section ends with the last entry's padding
  int matched = 0;
  for (const BundleEntry& entry : *entries) {
    EXPECT_FALSE(entry.error) << *entry.error;
    EXPECT_FALSE(entry.compressed);
    EXPECT_EQ(entry.storage, nullptr);
    if (entry.kind == "host") continue;
    EXPECT_EQ(entry.kind, "hipv4");
    EXPECT_EQ(entry.triple, "amdgcn-amd-amdhsa-");
    std::string arch = entry.target_id.substr(0, entry.target_id.find(':'));
    EXPECT_EQ(entry.target_id, kTargetIds.at(arch));
    EXPECT_TRUE(entry.bytes == ReadInput("kernels-" + arch + ".co")) << arch;
    EXPECT_TRUE(LooksLikeAmdgpuElf(entry.bytes));
    ++matched;
  }
  EXPECT_EQ(matched, 3);
}

// Every kernel number of every code object, compared with llvm-readelf --notes.
TEST(AmdCodeObject, EveryKernelAgreesWithLlvmReadelf) {
  REQUIRE_HIP_INPUTS();
  REQUIRE_READELF();
  for (const std::string& arch : kV4Arches) {
    std::string path = InputPath("kernels-" + arch + ".co");
    CodeObject object = ReadAmdgpuCodeObject(ReadInput("kernels-" + arch + ".co"), path);
    ASSERT_FALSE(object.error) << *object.error;
    Oracle oracle = ReadelfNotes(path);
    EXPECT_EQ(oracle.version, "1.1") << "code object v4 metadata";
    EXPECT_EQ("amdgcn-amd-amdhsa--" + object.target_id, oracle.target);
    EXPECT_EQ(object.target_id, kTargetIds.at(arch));
    EXPECT_EQ(object.arch, arch);
    EXPECT_EQ(object.format, "hsaco-v4");
    ExpectMatchesReadelf(object, oracle);
  }
}

// Code object v3 (no amdhsa.target: the target id comes from e_flags), same oracle.
TEST(AmdCodeObject, V3AgreesWithLlvmReadelf) {
  REQUIRE_HIP_INPUTS();
  REQUIRE_READELF();
  std::string path = InputPath("kernels-gfx906-v3.co");
  CodeObject object = ReadAmdgpuCodeObject(ReadInput("kernels-gfx906-v3.co"), path);
  ASSERT_FALSE(object.error) << *object.error;
  Oracle oracle = ReadelfNotes(path);
  EXPECT_EQ(oracle.version, "1.0");
  EXPECT_EQ(oracle.target, "");
  EXPECT_EQ(object.format, "hsaco-v3");
  // llvm-readobj names the e_flags bits; EF_AMDGPU_FEATURE_{XNACK,SRAMECC}_V3 are both set.
  std::string flags =
      RunCommand(std::string("'") + kReadelf + "' --file-header --elf-output-style=LLVM '" + path + "'");
  EXPECT_THAT(flags, HasSubstr("EF_AMDGPU_MACH_AMDGCN_GFX906"));
  EXPECT_THAT(flags, HasSubstr("EF_AMDGPU_FEATURE_XNACK_V3"));
  EXPECT_THAT(flags, HasSubstr("EF_AMDGPU_FEATURE_SRAMECC_V3"));
  EXPECT_EQ(object.target_id, "gfx906:sramecc+:xnack+");
  EXPECT_EQ(object.arch, "gfx906");
  ExpectMatchesReadelf(object, oracle);
  for (const Kernel& kernel : object.kernels) EXPECT_FALSE(kernel.agpr_count) << "v3 has no .agpr_count";
}

// The device-only v3 bundle: one "hip-" entry besides the host's.
TEST(AmdBundle, DeviceOnlyV3Bundle) {
  REQUIRE_HIP_INPUTS();
  std::vector<CodeObject> objects = ReadHipFatbin(ReadInput("kernels-gfx906-v3.bundle"), "v3.bundle");
  ASSERT_EQ(objects.size(), 1u);
  ASSERT_FALSE(objects[0].error) << *objects[0].error;
  EXPECT_EQ(objects[0].format, "hsaco-v3");
  EXPECT_EQ(objects[0].kernels.size(), 4u);
  EXPECT_EQ(objects[0].size, ReadInput("kernels-gfx906-v3.co").size());
}

TEST(AmdCodeObject, V2IsRecognisedButItsYamlIsNotRead) {
  REQUIRE_HIP_INPUTS();
  CodeObject object = ReadAmdgpuCodeObject(ReadInput("kernels-gfx906-v2.co"), "v2.co");
  EXPECT_EQ(object.format, "hsaco-v2");
  EXPECT_EQ(object.arch, "gfx906");
  EXPECT_EQ(object.target_id, "gfx906:xnack+");  // EF_AMDGPU_FEATURE_XNACK_V2 is set
  EXPECT_EQ(object.error, "code object v2 metadata (YAML) is not read");
  EXPECT_TRUE(object.kernels.empty());
}

// What the kernels were written to show (tests/inspect/amd/kernels.hip), on every target.
TEST(AmdCodeObject, LaunchBoundsLdsScratchAndSpills) {
  REQUIRE_HIP_INPUTS();
  for (const std::string& arch : kV4Arches) {
    CodeObject object = ReadAmdgpuCodeObject(ReadInput("kernels-" + arch + ".co"), arch);
    ASSERT_FALSE(object.error) << *object.error;
    const Kernel* bounded = FindKernel(object, "bounded_saxpy");
    const Kernel* lds = FindKernel(object, "lds_reverse");
    const Kernel* scratch = FindKernel(object, "scratch_histogram");
    const Kernel* pressure = FindKernel(object, "void pressure<160>");
    ASSERT_TRUE(bounded && lds && scratch && pressure) << arch;
    EXPECT_EQ(bounded->max_workgroup_size, 128u) << arch;
    EXPECT_EQ(lds->max_workgroup_size, 1024u) << arch;
    EXPECT_EQ(lds->lds_bytes, 16384u) << arch;
    EXPECT_EQ(bounded->kernarg_bytes, 28u) << arch;  // float, 2 pointers, int
    EXPECT_GE(scratch->scratch_bytes.value_or(0), 1024u) << arch;
    EXPECT_EQ(scratch->vgpr_spill_count, 0u) << arch;
    EXPECT_GT(pressure->vgpr_spill_count.value_or(0), 0u) << arch;
    EXPECT_GT(pressure->scratch_bytes.value_or(0), 0u) << arch;
    EXPECT_EQ(bounded->wavefront_size, arch == "gfx1030" ? 32u : 64u) << arch;
    EXPECT_EQ(bounded->dynamic_stack, false) << arch;
    EXPECT_EQ(bounded->symbol, "_Z13bounded_saxpyfPKfPfi.kd");
  }
}

TEST(AmdCodeObject, LooksLikeAmdgpuElf) {
  REQUIRE_HIP_INPUTS();
  EXPECT_TRUE(LooksLikeAmdgpuElf(ReadInput("kernels-gfx1030.co")));
  EXPECT_FALSE(LooksLikeAmdgpuElf(ReadInput("kernels.o")));  // x86-64
  EXPECT_FALSE(LooksLikeAmdgpuElf(ReadInput("kernels.hip_fatbin")));
  EXPECT_FALSE(LooksLikeAmdgpuElf(""));
  EXPECT_FALSE(LooksLikeAmdgpuElf(ReadInput("kernels-gfx1030.co").substr(0, 18)));
}

// ---------------------------------------------------------------------------------------------
// Compressed bundles, constructed from the real plain bundle.

TEST(AmdBundle, CompressedBundlesOfEveryVersionAndMethod) {
  REQUIRE_HIP_INPUTS();
  std::string plain = ReadInput("kernels.hip_fatbin");
  auto want = ReadOffloadBundle(plain, nullptr);
  ASSERT_TRUE(want.ok());
  for (uint16_t version : {1, 2, 3}) {
    for (uint16_t method : {kZlib, kZstd}) {
      std::string context = "CCOB v" + std::to_string(version) + " method " + std::to_string(method);
      std::string ccob = MakeCcob(plain, version, method);
      size_t consumed = 0;
      // Trailing bytes: V1 has no total size, so its end is where the compressed stream ends.
      auto entries = ReadOffloadBundle(ccob + std::string(100, '\x55'), &consumed);
      ASSERT_TRUE(entries.ok()) << context << ": " << entries.error().message;
      EXPECT_EQ(consumed, ccob.size()) << context;
      ASSERT_EQ(entries->size(), want->size()) << context;
      for (size_t i = 0; i < entries->size(); ++i) {
        EXPECT_EQ((*entries)[i].id, (*want)[i].id) << context;
        EXPECT_TRUE((*entries)[i].bytes == (*want)[i].bytes) << context << " entry " << i;
        EXPECT_TRUE((*entries)[i].compressed);
        EXPECT_NE((*entries)[i].storage, nullptr);
      }
    }
  }
}

// An entry copied out of the result keeps the decompressed bytes alive (checked under ASan).
TEST(AmdBundle, CompressedEntryOwnsItsBytes) {
  REQUIRE_HIP_INPUTS();
  std::string plain = ReadInput("kernels.hip_fatbin");
  std::string gfx1030 = ReadInput("kernels-gfx1030.co");
  BundleEntry kept;
  {
    std::string ccob = MakeCcob(plain, 3, kZstd);
    auto entries = ReadOffloadBundle(ccob, nullptr);
    ASSERT_TRUE(entries.ok());
    for (const BundleEntry& entry : *entries) {
      if (entry.target_id == "gfx1030") kept = entry;
    }
  }
  EXPECT_TRUE(kept.bytes == gfx1030);
}

// A section with a compressed bundle, zero padding, then a plain one: all found, in order.
TEST(AmdHipFatbin, CompressedAndPlainBundlesInOneSection) {
  REQUIRE_HIP_INPUTS();
  std::string plain = ReadInput("kernels.hip_fatbin");
  std::string section = MakeCcob(plain, 2, kZstd);
  section.resize((section.size() + 4095) / 4096 * 4096, '\0');
  size_t plain_at = section.size();
  section += ReadInput("kernels-gfx906-v3.bundle");
  std::vector<CodeObject> objects = ReadHipFatbin(section, "lib.so:.hip_fatbin");
  ASSERT_EQ(objects.size(), 4u);
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_FALSE(objects[i].error) << *objects[i].error;
    EXPECT_TRUE(objects[i].compressed);
    EXPECT_EQ(objects[i].kernels.size(), 4u);
    EXPECT_THAT(objects[i].origin, StartsWith("lib.so:.hip_fatbin+0x0(compressed bundle)+0x"));
  }
  ASSERT_FALSE(objects[3].error) << *objects[3].error;
  EXPECT_FALSE(objects[3].compressed);
  EXPECT_EQ(objects[3].format, "hsaco-v3");
  uint64_t entry_offset =
      GetAt<uint64_t>(ReadInput("kernels-gfx906-v3.bundle"), EntryHeaderAt(ReadInput("kernels-gfx906-v3.bundle"), 1));
  EXPECT_EQ(objects[3].origin, fmt::format("lib.so:.hip_fatbin+{:#x}", plain_at + entry_offset));
}

std::string BundleError(const std::string& bundle) {
  auto entries = ReadOffloadBundle(bundle, nullptr);
  return entries.ok() ? "(no error)" : entries.error().message;
}

TEST(AmdBundle, CompressedHeaderErrors) {
  REQUIRE_HIP_INPUTS();
  std::string plain = ReadInput("kernels.hip_fatbin");
  std::string v3 = MakeCcob(plain, 3, kZstd);

  EXPECT_EQ(BundleError(v3.substr(0, 6)), "CCOB: truncated header: 0x6 bytes, need at least 8");
  EXPECT_EQ(BundleError(v3.substr(0, 20)), "CCOB version 3: truncated header: 0x14 bytes, need 0x20");
  std::string bad = v3;
  Put<uint16_t>(&bad, 4, 4);
  EXPECT_EQ(BundleError(bad), "CCOB: unsupported version 4 (known: 1, 2, 3)");
  bad = v3;
  Put<uint16_t>(&bad, 6, 2);
  EXPECT_EQ(BundleError(bad), "CCOB version 3: unknown compression method 2 (0 = zlib, 1 = zstd)");
  bad = v3;
  Put<uint64_t>(&bad, 8, v3.size() + 1);
  EXPECT_EQ(BundleError(bad),
            fmt::format("CCOB version 3 (zstd): total size {:#x} in the header is outside [0x20, {:#x}] "
                        "(the header, the bytes available)",
                        v3.size() + 1, v3.size()));
  bad = v3;
  Put<uint64_t>(&bad, 16, uint64_t{5} << 30);
  EXPECT_EQ(BundleError(bad),
            "CCOB version 3 (zstd): uncompressed size 0x140000000 in the header "
            "exceeds the limit of 0x100000000 bytes");
  // The limit is the caller's (the fuzz targets use a small one).
  EXPECT_THAT(
      ReadOffloadBundle(v3, nullptr, 4096).error().message,
      HasSubstr(fmt::format("uncompressed size {:#x} in the header exceeds the limit of 0x1000", plain.size())));
}

TEST(AmdBundle, CompressedDataErrors) {
  REQUIRE_HIP_INPUTS();
  std::string plain = ReadInput("kernels.hip_fatbin");
  std::string v3 = MakeCcob(plain, 3, kZstd);

  // The header says less than the data holds, or more.
  std::string bad = v3;
  Put<uint64_t>(&bad, 16, plain.size() - 1);
  EXPECT_EQ(BundleError(bad), fmt::format("CCOB version 3 (zstd): zstd: decompresses to more than the "
                                          "{:#x} bytes the header declares",
                                          plain.size() - 1));
  bad = v3;
  Put<uint64_t>(&bad, 16, plain.size() + 100);
  EXPECT_EQ(BundleError(bad), fmt::format("CCOB version 3 (zstd): decompresses to {:#x} bytes, the "
                                          "header declares {:#x}",
                                          plain.size(), plain.size() + 100));

  // The stream cut short (the total size follows the cut).
  bad = v3.substr(0, 32 + 200);
  Put<uint64_t>(&bad, 8, bad.size());
  EXPECT_EQ(BundleError(bad), "CCOB version 3 (zstd): zstd: the compressed data ends inside a frame after 0xc8 bytes");

  // A zstd block of the reserved type 3 (RFC 8878 3.1.1.2.2).
  bad = v3;
  uint8_t descriptor = bad[32 + 4];
  size_t fcs_bytes[] = {static_cast<size_t>((descriptor & 0x20) ? 1 : 0), 2, 4, 8};
  size_t block_at = 32 + 4 + 1 + ((descriptor & 0x20) ? 0 : 1) + (descriptor & 3 ? 1 << ((descriptor & 3) - 1) : 0) +
                    fcs_bytes[descriptor >> 6];
  bad[block_at] = static_cast<char>(bad[block_at] | 0x06);
  EXPECT_THAT(BundleError(bad), StrEq("CCOB version 3 (zstd): zstd: Data corruption detected"));

  // zlib: a flipped byte in the deflate data.
  std::string v2 = MakeCcob(plain, 2, kZlib);
  v2[v2.size() / 2] = static_cast<char>(v2[v2.size() / 2] ^ 0xff);
  EXPECT_THAT(BundleError(v2), StartsWith("CCOB version 2 (zlib): zlib: "));

  // Compressed data that is not a bundle.
  EXPECT_EQ(BundleError(MakeCcob("hello", 3, kZlib)),
            "CCOB version 3 (zlib): the 0x5 decompressed bytes are not an offload bundle (start: "
            "68 65 6c 6c 6f)");
}

// ---------------------------------------------------------------------------------------------
// Damaged plain bundles: each error names the entry and the numbers; the others are read.

TEST(AmdHipFatbin, LyingEntryOffsetSparesTheOthers) {
  REQUIRE_HIP_INPUTS();
  std::string bundle = ReadInput("kernels.hip_fatbin");
  auto entries = ReadOffloadBundle(bundle, nullptr);
  ASSERT_TRUE(entries.ok());
  std::string section = std::string(0x1000, '\0') + bundle;  // a bundle at +0x1000
  size_t header = 0x1000 + EntryHeaderAt(bundle, 2);
  uint64_t size = GetAt<uint64_t>(section, header + 8);
  Put<uint64_t>(&section, header, 0x9999999);
  std::vector<CodeObject> objects = ReadHipFatbin(section, "app:.hip_fatbin");
  ASSERT_EQ(objects.size(), 3u);
  EXPECT_FALSE(objects[0].error);
  EXPECT_FALSE(objects[2].error);
  EXPECT_EQ(objects[1].error, fmt::format("offload bundle at +0x1000: entry 2 ({}): offset 0x9999999 + size {:#x} lies "
                                          "beyond the {:#x} bytes available",
                                          (*entries)[2].id, size, bundle.size()));
  EXPECT_EQ(objects[1].target_id, (*entries)[2].target_id);  // from the bundle id
  EXPECT_FALSE(objects[1].arch.empty());

  // An offset + size that overflows 64 bits is caught the same way.
  Put<uint64_t>(&section, header, ~uint64_t{0} - 8);
  objects = ReadHipFatbin(section, "app:.hip_fatbin");
  ASSERT_EQ(objects.size(), 3u);
  EXPECT_THAT(*objects[1].error, HasSubstr("offset 0xfffffffffffffff7 + size"));
}

TEST(AmdHipFatbin, AbsurdEntryCount) {
  REQUIRE_HIP_INPUTS();
  std::string bundle = ReadInput("kernels.hip_fatbin");
  Put<uint64_t>(&bundle, 24, uint64_t{1} << 60);
  std::vector<CodeObject> objects = ReadHipFatbin(bundle, "app:.hip_fatbin");
  ASSERT_EQ(objects.size(), 1u);
  EXPECT_EQ(objects[0].error,
            fmt::format("offload bundle at +0x0: entry count 0x1000000000000000 cannot fit: each entry "
                        "header takes at least 0x19 bytes and {:#x} bytes follow the count",
                        bundle.size() - 32));
  EXPECT_EQ(objects[0].origin, "app:.hip_fatbin+0x0");
}

TEST(AmdHipFatbin, TruncatedBundles) {
  REQUIRE_HIP_INPUTS();
  std::string bundle = ReadInput("kernels.hip_fatbin");
  // Cut after the count: the 4 entries cannot fit in what is left.
  std::vector<CodeObject> objects = ReadHipFatbin(bundle.substr(0, 0x40), "cut");
  ASSERT_EQ(objects.size(), 1u);
  EXPECT_EQ(objects[0].error,
            "offload bundle at +0x0: entry count 0x4 cannot fit: each entry header takes at least "
            "0x19 bytes and 0x20 bytes follow the count");
  // Cut inside the id of entry 2.
  size_t header2 = EntryHeaderAt(bundle, 2);
  uint64_t id2_length = GetAt<uint64_t>(bundle, header2 + 16);
  objects = ReadHipFatbin(bundle.substr(0, header2 + 24 + 4), "cut");
  ASSERT_EQ(objects.size(), 1u);
  EXPECT_EQ(objects[0].error,
            fmt::format("offload bundle at +0x0: entry 2: id of {:#x} bytes at {:#x} runs past the {:#x} "
                        "bytes available",
                        id2_length, header2 + 24, header2 + 24 + 4));
  objects = ReadHipFatbin(bundle.substr(0, 0x1c), "cut");
  ASSERT_EQ(objects.size(), 1u);
  EXPECT_EQ(objects[0].error, "offload bundle at +0x0: truncated header: 0x1c bytes, the entry count ends at 0x20");

  // Inside the entries' data: those wholly before the cut are read, the others named.
  auto entries = ReadOffloadBundle(bundle, nullptr);
  ASSERT_TRUE(entries.ok());
  const BundleEntry& last = entries->back();
  size_t cut = last.offset + last.bytes.size() / 2;
  objects = ReadHipFatbin(bundle.substr(0, cut), "cut");
  ASSERT_EQ(objects.size(), 3u);
  int good = 0;
  for (const CodeObject& object : objects) good += !object.error;
  EXPECT_EQ(good, 2);
  EXPECT_EQ(objects[2].error,
            fmt::format("offload bundle at +0x0: entry 3 ({}): offset {:#x} + size {:#x} lies beyond the "
                        "{:#x} bytes available",
                        last.id, last.offset, last.bytes.size(), cut));
}

TEST(AmdHipFatbin, NoBundleAndGarbage) {
  std::vector<CodeObject> objects = ReadHipFatbin(std::string(300, '\0'), "x:.hip_fatbin");
  ASSERT_EQ(objects.size(), 1u);
  EXPECT_EQ(objects[0].error, "no offload bundle (__CLANG_OFFLOAD_BUNDLE__ or CCOB) in the 0x12c bytes of the section");
  EXPECT_EQ(objects[0].vendor, "amd");
  EXPECT_EQ(ReadHipFatbin("", "x").size(), 1u);
  EXPECT_EQ(BundleError("\x7f"
                        "ELF"),
            "no offload bundle magic (__CLANG_OFFLOAD_BUNDLE__ or CCOB) at the start: 7f 45 4c 46");
}

// A bundle written here around real code objects, one of them truncated: that one has the
// error, the others are read.
TEST(AmdHipFatbin, TruncatedCodeObjectAmongGoodOnes) {
  REQUIRE_HIP_INPUTS();
  std::string gfx1030 = ReadInput("kernels-gfx1030.co");
  std::string cut = gfx1030.substr(0, gfx1030.size() / 2);
  std::string bundle = WriteBundle({{"host-x86_64-unknown-linux-gnu-", ""},
                                    {"hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-", ReadInput("kernels-gfx90a.co")},
                                    {"hipv4-amdgcn-amd-amdhsa--gfx1030", cut},
                                    {"hipv4-amdgcn-amd-amdhsa--gfx906", ReadInput("kernels-gfx906.co")}});
  std::vector<CodeObject> objects = ReadHipFatbin(bundle, "t");
  ASSERT_EQ(objects.size(), 3u);
  EXPECT_FALSE(objects[0].error);
  EXPECT_FALSE(objects[2].error);
  uint64_t shoff = GetAt<uint64_t>(gfx1030, 40);
  uint16_t shnum = GetAt<uint16_t>(gfx1030, 60);
  EXPECT_EQ(objects[1].error,
            fmt::format("section headers at {:#x} ({} of 0x40 bytes) lie beyond the {:#x} bytes of the file "
                        "(bundle entry hipv4-amdgcn-amd-amdhsa--gfx1030)",
                        shoff, shnum, cut.size()));
  EXPECT_EQ(objects[1].format, "hsaco-v4");  // read before the damage
  EXPECT_EQ(objects[1].arch, "gfx1030");
  EXPECT_TRUE(objects[1].kernels.empty());
}

// ---------------------------------------------------------------------------------------------
// StreamHipFatbin: what inspect reads a host binary's .hip_fatbin with, one bundle at a time.

// StreamHipFatbin over `section` in memory, counting the largest single read.
std::vector<CodeObject> Streamed(const std::string& section, size_t* largest_read = nullptr) {
  std::vector<CodeObject> objects;
  size_t largest = 0;
  RangeReader read = [&](uint64_t offset, size_t size, std::string* out) {
    if (offset > section.size() || size > section.size() - offset) return false;
    largest = std::max(largest, size);
    out->assign(section, offset, size);
    return true;
  };
  StreamHipFatbin(read, section.size(), "lib.so:.hip_fatbin",
                  [&](CodeObject&& object) { objects.push_back(std::move(object)); });
  if (largest_read) *largest_read = largest;
  return objects;
}

// Streaming gives what reading the whole section gives, object by object, damage included.
void ExpectSameAsWhole(const std::string& section, const std::string& context) {
  std::vector<CodeObject> whole = ReadHipFatbin(section, "lib.so:.hip_fatbin");
  std::vector<CodeObject> streamed = Streamed(section);
  ASSERT_EQ(streamed.size(), whole.size()) << context;
  for (size_t i = 0; i < whole.size(); ++i) {
    SCOPED_TRACE(context + ", object " + std::to_string(i));
    EXPECT_EQ(streamed[i].origin, whole[i].origin);
    EXPECT_EQ(streamed[i].error, whole[i].error);
    EXPECT_EQ(streamed[i].target_id, whole[i].target_id);
    EXPECT_EQ(streamed[i].format, whole[i].format);
    EXPECT_EQ(streamed[i].compressed, whole[i].compressed);
    EXPECT_EQ(streamed[i].size, whole[i].size);
    ASSERT_EQ(streamed[i].kernels.size(), whole[i].kernels.size());
    for (size_t k = 0; k < whole[i].kernels.size(); ++k) {
      EXPECT_EQ(streamed[i].kernels[k].symbol, whole[i].kernels[k].symbol);
      EXPECT_EQ(streamed[i].kernels[k].vgpr_count, whole[i].kernels[k].vgpr_count);
    }
  }
}

std::string PadTo4096(std::string bytes) {
  bytes.resize((bytes.size() + 4095) / 4096 * 4096, '\0');
  return bytes;
}

TEST(AmdHipFatbinStream, SameObjectsAsTheWholeSection) {
  REQUIRE_HIP_INPUTS();
  std::string plain = ReadInput("kernels.hip_fatbin");
  std::string v3 = ReadInput("kernels-gfx906-v3.bundle");
  ExpectSameAsWhole(plain, "the hipcc section");
  ExpectSameAsWhole(PadTo4096(plain) + v3, "two plain bundles");
  // Compressed bundles of every version; version 1 declares no total size (its extent is up to
  // the next magic).
  for (uint16_t version : {1, 2, 3}) {
    for (uint16_t method : {kZlib, kZstd}) {
      std::string context = "CCOB v" + std::to_string(version) + " method " + std::to_string(method);
      ExpectSameAsWhole(PadTo4096(MakeCcob(plain, version, method)) + v3, context);
      ExpectSameAsWhole(PadTo4096(v3) + MakeCcob(plain, version, method), context + " last");
    }
  }
  ExpectSameAsWhole(std::string(300, '\0'), "no bundle");
  ExpectSameAsWhole("", "empty");
}

TEST(AmdHipFatbinStream, DamageAsInTheWholeSection) {
  REQUIRE_HIP_INPUTS();
  std::string bundle = ReadInput("kernels.hip_fatbin");
  std::string lying = std::string(0x1000, '\0') + bundle;
  Put<uint64_t>(&lying, 0x1000 + EntryHeaderAt(bundle, 2), 0x9999999);
  ExpectSameAsWhole(lying, "lying entry offset");
  std::string absurd = bundle;
  Put<uint64_t>(&absurd, 24, uint64_t{1} << 60);
  ExpectSameAsWhole(absurd + PadTo4096(bundle), "absurd entry count, then a good bundle");
  size_t header2 = EntryHeaderAt(bundle, 2);
  for (size_t cut : {size_t{0x1c}, size_t{0x40}, header2 + 24 + 4, bundle.size() - 100}) {
    ExpectSameAsWhole(bundle.substr(0, cut), "cut at " + std::to_string(cut));
  }
  std::string ccob = MakeCcob(bundle, 2, kZstd);
  ExpectSameAsWhole(ccob.substr(0, ccob.size() / 2), "truncated CCOB v2");
  ExpectSameAsWhole(ccob.substr(0, 12), "CCOB header cut");
}

// Memory: no read is larger than the scan window (1 MiB) or the bundle being read, however large
// the section.
TEST(AmdHipFatbinStream, ReadsOneBundleAtATime) {
  REQUIRE_HIP_INPUTS();
  std::string bundle = PadTo4096(ReadInput("kernels.hip_fatbin"));
  std::string section;
  while (section.size() < (4u << 20)) section += bundle;
  size_t largest = 0;
  std::vector<CodeObject> objects = Streamed(section, &largest);
  EXPECT_EQ(objects.size(), 3 * (section.size() / bundle.size()));
  for (const CodeObject& object : objects) EXPECT_FALSE(object.error) << *object.error;
  EXPECT_LE(largest, std::max<size_t>(bundle.size(), 1u << 20));
  EXPECT_LT(largest, section.size() / 2);
}

// ---------------------------------------------------------------------------------------------
// Damaged code objects.

TEST(AmdCodeObject, TruncatedAndForeignInputs) {
  REQUIRE_HIP_INPUTS();
  std::string elf = ReadInput("kernels-gfx1030.co");
  EXPECT_EQ(ReadAmdgpuCodeObject(elf.substr(0, 40), "x").error, "truncated ELF header: 0x28 bytes, need 0x40");
  EXPECT_EQ(ReadAmdgpuCodeObject("", "x").error, "not an ELF file (0x0 bytes, start: nothing)");
  EXPECT_EQ(ReadAmdgpuCodeObject(std::string("BC\xc0\xde\x35\x14", 6), "x").error,
            "LLVM bitcode, not a code object (from -fgpu-rdc?)");
  EXPECT_EQ(ReadAmdgpuCodeObject(ReadInput("kernels.o"), "x").error, "e_machine 62 is not EM_AMDGPU (224)");
  std::string other = elf;
  other[7] = 65;
  EXPECT_EQ(ReadAmdgpuCodeObject(other, "x").error, "EI_OSABI ELFOSABI_AMDGPU_PAL is not ELFOSABI_AMDGPU_HSA (64)");
  other = elf;
  other[8] = 9;
  EXPECT_EQ(ReadAmdgpuCodeObject(other, "x").error,
            "EI_ABIVERSION 9: unknown code object version (known: 0-4 for v2-v6)");
  // The section header table moved to the file's last 64 bytes.
  std::string moved = elf;
  Put<uint64_t>(&moved, 40, moved.size() - 64);
  CodeObject object = ReadAmdgpuCodeObject(moved, "x");
  EXPECT_EQ(object.error, fmt::format("section headers at {:#x} ({} of 0x40 bytes) lie beyond the {:#x} bytes "
                                      "of the file",
                                      moved.size() - 64, GetAt<uint16_t>(elf, 60), moved.size()));
}

TEST(AmdCodeObject, LyingNoteHeader) {
  REQUIRE_HIP_INPUTS();
  std::string elf = ReadInput("kernels-gfx1030.co");
  size_t name_at = elf.find(std::string("AMDGPU\0", 7));
  ASSERT_NE(name_at, std::string::npos);
  Put<uint32_t>(&elf, name_at - 8, 0x7fffffff);  // descsz
  CodeObject object = ReadAmdgpuCodeObject(elf, "x");
  ASSERT_TRUE(object.error);
  EXPECT_THAT(*object.error, StartsWith("section "));
  EXPECT_THAT(*object.error, HasSubstr("(.note): note at +0x0 (name 0x7 bytes, desc 0x7fffffff bytes) runs past the "));
  EXPECT_EQ(object.arch, "gfx1030");
}

// The metadata replaced by MessagePack written here: each defect is named, and what was read
// before it (format, arch from e_flags) stays.
TEST(AmdMetadata, DefectsAreNamed) {
  REQUIRE_HIP_INPUTS();
  std::string elf = ReadInput("kernels-gfx1030.co");
  auto error_of = [&](const std::string& msgpack) {
    CodeObject object = ReadAmdgpuCodeObject(WithMetadata(elf, msgpack), "x");
    EXPECT_EQ(object.format, "hsaco-v4");
    EXPECT_EQ(object.arch, "gfx1030");
    EXPECT_TRUE(object.kernels.empty());
    return object.error.value_or("(no error)");
  };
  MetadataWriter version9(1);
  version9.Key("amdhsa.version", std::vector<int>{9, 0});
  EXPECT_EQ(error_of(version9.bytes()), "amdhsa.version 9.0 is not supported (only major version 1 is known)");
  MetadataWriter no_version(1);
  no_version.Key("amdhsa.target", std::string("amdgcn-amd-amdhsa--gfx1030"));
  EXPECT_EQ(error_of(no_version.bytes()), "metadata has no amdhsa.version");
  MetadataWriter bad_kernels(2);
  bad_kernels.Key("amdhsa.version", std::vector<int>{1, 1}).Key("amdhsa.kernels", std::string("x"));
  EXPECT_EQ(error_of(bad_kernels.bytes()), "amdhsa.kernels is a string, expected an array");
  MetadataWriter bad_target(2);
  bad_target.Key("amdhsa.version", std::vector<int>{1, 1}).Key("amdhsa.target", std::string("gfx1030"));
  EXPECT_EQ(error_of(bad_target.bytes()), "amdhsa.target 'gfx1030' is not <triple>-<target id>");
  EXPECT_EQ(error_of(OneKernelMetadata(".sgpr_count", std::string("many"))),
            "kernel _Z1kv: .sgpr_count is a string, expected an unsigned integer");
  EXPECT_EQ(error_of(OneKernelMetadata(".vgpr_count", uint64_t{1} << 33)),
            "kernel _Z1kv: .vgpr_count = 0x200000000 does not fit 32 bits");
  EXPECT_EQ(error_of(OneKernelMetadata(".vgpr_count", -1)),
            "kernel _Z1kv: .vgpr_count is a negative integer, expected an unsigned integer");
  EXPECT_EQ(error_of(OneKernelMetadata(".uses_dynamic_stack", 1)),
            "kernel _Z1kv: .uses_dynamic_stack is an unsigned integer, expected a boolean");
  EXPECT_EQ(error_of(std::string("\x90", 1)), "metadata is an array, expected a map");
  // An array that declares 2^32-1 elements and holds none: refused before unpacking.
  std::string lying = std::string("\x81\xae") + "amdhsa.kernels" + std::string("\xdd\xff\xff\xff\xff", 5);
  EXPECT_EQ(error_of(lying), "metadata note: MessagePack truncated at byte 0x15 (0x15 bytes)");
  std::string deep(40, '\x91');
  deep += '\x00';
  EXPECT_EQ(error_of(deep), "metadata note: MessagePack nested deeper than 16 levels (0x29 bytes)");
  EXPECT_EQ(error_of(std::string("\xc1", 1)), "metadata note: MessagePack malformed at byte 0x0 (0x1 bytes)");
}

// Metadata written here with only some keys: those absent stay absent, not 0.
TEST(AmdMetadata, AbsentFieldsStayAbsent) {
  REQUIRE_HIP_INPUTS();
  MetadataWriter writer(3);
  writer.Key("amdhsa.version", std::vector<int>{1, 2});
  writer.Key("amdhsa.target", std::string("amdgcn-amd-amdhsa--gfx942:xnack+"));
  writer.packer().pack(std::string("amdhsa.kernels"));
  writer.packer().pack_array(1);
  writer.packer().pack_map(3);
  writer.packer().pack(std::string(".name"));
  writer.packer().pack(std::string("opencl_kernel"));
  writer.packer().pack(std::string(".vgpr_count"));
  writer.packer().pack(7);
  writer.packer().pack(std::string(".uses_dynamic_stack"));
  writer.packer().pack(true);
  CodeObject object = ReadAmdgpuCodeObject(WithMetadata(ReadInput("kernels-gfx1030.co"), writer.bytes()), "x");
  ASSERT_FALSE(object.error) << *object.error;
  EXPECT_EQ(object.target_id, "gfx942:xnack+");  // amdhsa.target wins over e_flags
  EXPECT_EQ(object.arch, "gfx942");
  ASSERT_EQ(object.kernels.size(), 1u);
  const Kernel& kernel = object.kernels[0];
  EXPECT_EQ(kernel.name, "opencl_kernel");  // not mangled: as stored
  EXPECT_EQ(kernel.symbol, "opencl_kernel");
  EXPECT_EQ(kernel.vgpr_count, 7u);
  EXPECT_EQ(kernel.dynamic_stack, true);
  EXPECT_FALSE(kernel.sgpr_count);
  EXPECT_FALSE(kernel.lds_bytes);
  EXPECT_FALSE(kernel.scratch_bytes);
  EXPECT_FALSE(kernel.wavefront_size);
}

// A kernel name that is not UTF-8 is shown with U+FFFD; its symbol is kept as stored.
TEST(AmdMetadata, NameIsValidUtf8SymbolIsAsStored) {
  REQUIRE_HIP_INPUTS();
  MetadataWriter writer(2);
  writer.Key("amdhsa.version", std::vector<int>{1, 1});
  writer.packer().pack(std::string("amdhsa.kernels"));
  writer.packer().pack_array(1);
  writer.packer().pack_map(2);
  writer.packer().pack(std::string(".name"));
  writer.packer().pack(std::string("k\xff"));
  writer.packer().pack(std::string(".symbol"));
  writer.packer().pack(std::string("k\xff.kd"));
  CodeObject object = ReadAmdgpuCodeObject(WithMetadata(ReadInput("kernels-gfx1030.co"), writer.bytes()), "x");
  ASSERT_FALSE(object.error) << *object.error;
  ASSERT_EQ(object.kernels.size(), 1u);
  EXPECT_EQ(object.kernels[0].name, "k\xef\xbf\xbd");
  EXPECT_EQ(object.kernels[0].symbol, "k\xff.kd");
}

TEST(AmdBundle, SplitBundleId) {
  BundleEntry entry;
  SplitBundleId("hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-", &entry);
  EXPECT_EQ(entry.kind, "hipv4");
  EXPECT_EQ(entry.triple, "amdgcn-amd-amdhsa-");
  EXPECT_EQ(entry.target_id, "gfx90a:sramecc+:xnack-");
  entry = {};
  SplitBundleId("host-x86_64-unknown-linux", &entry);
  EXPECT_EQ(entry.kind, "host");
  EXPECT_EQ(entry.triple, "x86_64-unknown-linux");
  EXPECT_EQ(entry.target_id, "");
  entry = {};
  SplitBundleId("host-x86_64-unknown-linux-gnu-", &entry);
  EXPECT_EQ(entry.triple, "x86_64-unknown-linux-gnu");
  EXPECT_EQ(entry.target_id, "");
  entry = {};
  SplitBundleId("openmp-amdgcn-amd-amdhsa-gfx906", &entry);  // a 3-component triple
  EXPECT_EQ(entry.kind, "openmp");
  EXPECT_EQ(entry.triple, "amdgcn-amd-amdhsa");
  EXPECT_EQ(entry.target_id, "gfx906");
}

}  // namespace
}  // namespace gputriage::inspect
