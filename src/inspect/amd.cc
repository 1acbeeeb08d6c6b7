#include "inspect/amd.h"

#include <cxxabi.h>
#include <fmt/format.h>
#include <zlib.h>
#include <zstd.h>
#include <msgpack.hpp>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <utility>

#include "core/byte_reader.h"
#include "core/text.h"
#include "inspect/nvidia.h"

namespace gputriage::inspect {
namespace {

// Everything read here comes from untrusted files: through core::ByteReader, whose accessors
// return nullopt rather than read outside the view, with offsets added with overflow checks.
// (Both formats are little-endian.)

using core::ByteReader;
using core::CheckedMul;
using core::RangeInside;

uint64_t AlignUp4(uint64_t value) { return (value + 3) & ~uint64_t{3}; }

bool IsPrintableAscii(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

/// The first bytes of `data` in hex, for "this is not what we expected" messages.
std::string HexPrefix(std::string_view data) {
  std::string out;
  for (size_t i = 0; i < std::min<size_t>(data.size(), 8); ++i) {
    if (i > 0) out += ' ';
    out += fmt::format("{:02x}", static_cast<unsigned char>(data[i]));
  }
  return out.empty() ? "nothing" : out;
}

// ---------------------------------------------------------------------------------------------
// Plain offload bundles. clang/docs/ClangOffloadBundler.rst, "Bundled Code Object Layout": the
// magic "__CLANG_OFFLOAD_BUNDLE__" (24 bytes, no NUL), uint64 number of entries, then per
// entry uint64 offset (from the start of the bundle), uint64 size, uint64 id length and the id
// (not NUL-terminated). The entries' data follows, aligned (4096 for HIP).

constexpr std::string_view kBundleMagic = "__CLANG_OFFLOAD_BUNDLE__";
constexpr uint64_t kBundleCountOffset = 24;
constexpr uint64_t kBundleEntriesOffset = 32;
constexpr uint64_t kEntryHeaderFixedBytes = 24;  // offset, size, id length

// Compressed bundles. clang/include/clang/Driver/OffloadBundler.h (and, since LLVM 20,
// llvm/include/llvm/Object/OffloadBundle.h), class CompressedOffloadBundle: magic "CCOB",
// uint16 version, uint16 method (llvm::compression::Format: 0 zlib, 1 zstd), then
//   V1: uint32 uncompressed size, uint64 hash;
//   V2: uint32 total file size, uint32 uncompressed size, uint64 hash;
//   V3: uint64 total file size, uint64 uncompressed size, uint64 hash;
// then the compressed data. The total file size includes the header (CompressedOffloadBundle::
// compress); V1 has none, so its data runs to the end of the compressed stream. The hash, a
// truncated MD5 of the uncompressed bundle, is not checked here: LLVM itself only compares it
// in verbose mode, and the decoders detect damage (zlib's Adler-32, zstd's block structure).
constexpr std::string_view kCompressedMagic = "CCOB";
constexpr uint16_t kMethodZlib = 0;
constexpr uint16_t kMethodZstd = 1;

struct BundleEntryHeader {
  uint64_t offset = 0;
  uint64_t size = 0;
  std::string id;
  uint64_t next = 0;  ///< where the next entry header starts
};

core::Result<BundleEntryHeader> ReadBundleEntryHeader(const ByteReader& reader, uint64_t pos, uint64_t index) {
  BundleEntryHeader header;
  auto offset = reader.U64(pos);
  auto size = reader.U64(pos + 8);
  auto id_length = reader.U64(pos + 16);
  if (!offset || !size || !id_length) {
    return core::MakeError("entry {}: header at {:#x} runs past the {:#x} bytes available", index, pos, reader.size());
  }
  auto id = reader.Bytes(pos + kEntryHeaderFixedBytes, *id_length);
  if (!id) {
    return core::MakeError("entry {}: id of {:#x} bytes at {:#x} runs past the {:#x} bytes available", index,
                           *id_length, pos + kEntryHeaderFixedBytes, reader.size());
  }
  if (id->empty() || !IsPrintableAscii(*id)) {
    return core::MakeError("entry {}: id at {:#x} is not printable text ({})", index, pos + kEntryHeaderFixedBytes,
                           HexPrefix(*id));
  }
  header.offset = *offset;
  header.size = *size;
  header.id = std::string(*id);
  header.next = pos + kEntryHeaderFixedBytes + *id_length;  // inside the view: cannot overflow
  return header;
}

/// Reads a plain bundle at data[0]; `*end` is the offset just past its last byte (headers or
/// entry data, whichever is further).
core::Result<std::vector<BundleEntry>> ReadPlainBundle(std::string_view data, uint64_t* end) {
  ByteReader reader(data);
  auto count = reader.U64(kBundleCountOffset);
  if (!count) {
    return core::MakeError("truncated header: {:#x} bytes, the entry count ends at {:#x}", data.size(),
                           kBundleEntriesOffset);
  }
  // Every entry needs at least its fixed header and a one-byte id: a count that cannot fit is
  // refused before anything is allocated for it.
  uint64_t room = data.size() - kBundleEntriesOffset;
  if (*count > room / (kEntryHeaderFixedBytes + 1)) {
    return core::MakeError(
        "entry count {:#x} cannot fit: each entry header takes at least {:#x} bytes and {:#x} "
        "bytes follow the count",
        *count, kEntryHeaderFixedBytes + 1, room);
  }
  std::vector<BundleEntry> entries;
  entries.reserve(*count);
  uint64_t pos = kBundleEntriesOffset;
  uint64_t extent = 0;
  for (uint64_t i = 0; i < *count; ++i) {
    GT_ASSIGN_OR_RETURN(BundleEntryHeader header, ReadBundleEntryHeader(reader, pos, i));
    pos = header.next;
    BundleEntry entry;
    entry.id = header.id;
    SplitBundleId(entry.id, &entry);
    entry.offset = header.offset;
    if (auto bytes = reader.Bytes(header.offset, header.size)) {
      entry.bytes = *bytes;
      extent = std::max(extent, header.offset + header.size);
    } else {
      entry.error = fmt::format("entry {} ({}): offset {:#x} + size {:#x} lies beyond the {:#x} bytes available", i,
                                entry.id, header.offset, header.size, data.size());
    }
    entries.push_back(std::move(entry));
  }
  *end = std::max(extent, pos);
  return entries;
}

struct CompressedHeader {
  uint16_t version = 0;
  uint16_t method = 0;
  uint64_t header_bytes = 0;
  std::optional<uint64_t> total_bytes;  ///< V2, V3
  uint64_t uncompressed_bytes = 0;
};

std::string MethodName(uint16_t method) {
  if (method == kMethodZlib) return "zlib";
  if (method == kMethodZstd) return "zstd";
  return fmt::format("method {}", method);
}

core::Result<CompressedHeader> ReadCompressedHeader(const ByteReader& reader) {
  CompressedHeader header;
  auto version = reader.U16(4);
  auto method = reader.U16(6);
  if (!version || !method) {
    return core::MakeError("CCOB: truncated header: {:#x} bytes, need at least 8", reader.size());
  }
  header.version = *version;
  header.method = *method;
  if (header.version < 1 || header.version > 3) {
    return core::MakeError("CCOB: unsupported version {} (known: 1, 2, 3)", header.version);
  }
  if (header.method != kMethodZlib && header.method != kMethodZstd) {
    return core::MakeError("CCOB version {}: unknown compression method {} (0 = zlib, 1 = zstd)", header.version,
                           header.method);
  }
  std::optional<uint64_t> uncompressed;
  if (header.version == 1) {
    header.header_bytes = 20;
    uncompressed = reader.U32(8);
  } else if (header.version == 2) {
    header.header_bytes = 24;
    if (auto total = reader.U32(8)) header.total_bytes = *total;
    uncompressed = reader.U32(12);
  } else {
    header.header_bytes = 32;
    header.total_bytes = reader.U64(8);
    uncompressed = reader.U64(16);
  }
  if (!uncompressed || reader.size() < header.header_bytes) {
    return core::MakeError("CCOB version {}: truncated header: {:#x} bytes, need {:#x}", header.version, reader.size(),
                           header.header_bytes);
  }
  header.uncompressed_bytes = *uncompressed;
  return header;
}

/// Output of a decoder: the bytes and how much of the input they took.
struct Decoded {
  std::string bytes;
  uint64_t input_used = 0;
};

/// Grows `out` toward `limit` (doubling from 64 KiB), so that a size declared in a header costs
/// memory only as the stream really produces the bytes.
void GrowOutput(std::string* out, uint64_t limit) {
  uint64_t grown = std::max<uint64_t>(out->size() * 2, 64 * 1024);
  out->resize(std::min(grown, limit));
}

core::Result<Decoded> DecodeZstd(std::string_view input, uint64_t expected) {
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> context(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!context) return core::MakeError("zstd: cannot create a decompression context");
  ZSTD_inBuffer in{input.data(), input.size(), 0};
  Decoded decoded;
  uint64_t produced = 0;
  char overflow = 0;  // one byte beyond the declared size: output here means the header lies
  for (;;) {
    if (produced == decoded.bytes.size() && produced < expected) GrowOutput(&decoded.bytes, expected);
    bool full = produced == decoded.bytes.size();
    ZSTD_outBuffer out =
        full ? ZSTD_outBuffer{&overflow, 1, 0} : ZSTD_outBuffer{decoded.bytes.data(), decoded.bytes.size(), produced};
    size_t in_before = in.pos;
    size_t out_before = out.pos;
    size_t rc = ZSTD_decompressStream(context.get(), &out, &in);
    if (ZSTD_isError(rc)) {
      // (No position: the decoder buffers its input, in.pos does not say where it failed.)
      return core::MakeError("zstd: {}", ZSTD_getErrorName(rc));
    }
    if (full && out.pos > 0) {
      return core::MakeError("zstd: decompresses to more than the {:#x} bytes the header declares", expected);
    }
    if (!full) produced = out.pos;
    // rc == 0: a frame ended. LLVM writes one frame; further frames are read on while the
    // declared size is not reached and input remains (ZSTD_decompress does the same).
    if (rc == 0 && (produced == expected || in.pos == in.size)) break;
    if (in.pos == in_before && out.pos == out_before) {
      return core::MakeError("zstd: the compressed data ends inside a frame after {:#x} bytes", in.pos);
    }
  }
  decoded.bytes.resize(produced);
  decoded.input_used = in.pos;
  return decoded;
}

core::Result<Decoded> DecodeZlib(std::string_view input, uint64_t expected) {
  z_stream stream{};
  // The zlib format (RFC 1950), as llvm::compression::zlib writes it with compress2().
  if (inflateInit(&stream) != Z_OK) return core::MakeError("zlib: cannot initialise");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&stream, inflateEnd);
  Decoded decoded;
  uint64_t consumed = 0;
  uint64_t produced = 0;
  char overflow = 0;
  for (;;) {
    if (produced == decoded.bytes.size() && produced < expected) GrowOutput(&decoded.bytes, expected);
    bool full = produced == decoded.bytes.size();
    uint64_t in_left = input.size() - consumed;
    uint64_t out_left = full ? 1 : decoded.bytes.size() - produced;
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data() + consumed));
    stream.avail_in = static_cast<uInt>(std::min<uint64_t>(in_left, UINT_MAX));
    stream.next_out = reinterpret_cast<Bytef*>(full ? &overflow : decoded.bytes.data() + produced);
    stream.avail_out = static_cast<uInt>(std::min<uint64_t>(out_left, UINT_MAX));
    uInt avail_in_before = stream.avail_in;
    uInt avail_out_before = stream.avail_out;
    int rc = inflate(&stream, Z_NO_FLUSH);
    uint64_t took = avail_in_before - stream.avail_in;
    uint64_t gave = avail_out_before - stream.avail_out;
    consumed += took;
    if (rc == Z_NEED_DICT || rc == Z_DATA_ERROR || rc == Z_MEM_ERROR || rc == Z_STREAM_ERROR) {
      return core::MakeError("zlib: {}", stream.msg ? stream.msg : "inflate failed");
    }
    if (full && gave > 0) {
      return core::MakeError("zlib: decompresses to more than the {:#x} bytes the header declares", expected);
    }
    if (!full) produced += gave;
    if (rc == Z_STREAM_END) break;
    if (took == 0 && gave == 0) {
      return core::MakeError("zlib: the compressed data ends inside the stream after {:#x} bytes", consumed);
    }
  }
  decoded.bytes.resize(produced);
  decoded.input_used = consumed;
  return decoded;
}

core::Result<std::vector<BundleEntry>> ReadCompressedBundle(std::string_view data, size_t* consumed,
                                                            uint64_t max_decompressed_bytes) {
  ByteReader reader(data);
  GT_ASSIGN_OR_RETURN(CompressedHeader header, ReadCompressedHeader(reader));
  std::string what = fmt::format("CCOB version {} ({})", header.version, MethodName(header.method));
  uint64_t input_end = data.size();
  if (header.total_bytes) {
    if (*header.total_bytes < header.header_bytes || *header.total_bytes > data.size()) {
      return core::MakeError(
          "{}: total size {:#x} in the header is outside [{:#x}, {:#x}] (the "
          "header, the bytes available)",
          what, *header.total_bytes, header.header_bytes, data.size());
    }
    input_end = *header.total_bytes;
  }
  if (header.uncompressed_bytes > max_decompressed_bytes) {
    return core::MakeError("{}: uncompressed size {:#x} in the header exceeds the limit of {:#x} bytes", what,
                           header.uncompressed_bytes, max_decompressed_bytes);
  }
  // ReadCompressedHeader checked that the header fits; input_end is at or past it.
  std::string_view input = *reader.Bytes(header.header_bytes, input_end - header.header_bytes);
  auto decoded = header.method == kMethodZstd ? DecodeZstd(input, header.uncompressed_bytes)
                                              : DecodeZlib(input, header.uncompressed_bytes);
  if (!decoded.ok()) return core::MakeError("{}: {}", what, decoded.error().message);
  if (decoded->bytes.size() != header.uncompressed_bytes) {
    return core::MakeError("{}: decompresses to {:#x} bytes, the header declares {:#x}", what, decoded->bytes.size(),
                           header.uncompressed_bytes);
  }
  auto storage = std::make_shared<const std::string>(std::move(decoded->bytes));
  if (storage->substr(0, kBundleMagic.size()) != kBundleMagic) {
    return core::MakeError("{}: the {:#x} decompressed bytes are not an offload bundle (start: {})", what,
                           storage->size(), HexPrefix(*storage));
  }
  uint64_t plain_end = 0;
  auto entries = ReadPlainBundle(*storage, &plain_end);
  if (!entries.ok()) return core::MakeError("{}, decompressed: {}", what, entries.error().message);
  for (BundleEntry& entry : *entries) {
    entry.compressed = true;
    entry.storage = storage;
  }
  if (consumed) {
    *consumed = header.total_bytes ? *header.total_bytes : header.header_bytes + decoded->input_used;
  }
  return entries;
}

// ---------------------------------------------------------------------------------------------
// The .hip_fatbin section: bundles one after another, each at a 4096-aligned offset in
// practice, zero padding between them.

/// The offset of the next bundle magic (plain or compressed) at or after `from`, or npos.
/// Stops at the first candidate, so that scanning a whole section stays linear in its size.
size_t FindBundle(std::string_view section, size_t from) {
  for (size_t at = section.find_first_of("_C", from); at != std::string_view::npos;
       at = section.find_first_of("_C", at + 1)) {
    std::string_view rest = section.substr(at);
    if (rest.substr(0, kBundleMagic.size()) == kBundleMagic ||
        rest.substr(0, kCompressedMagic.size()) == kCompressedMagic) {
      return at;
    }
  }
  return std::string_view::npos;
}

std::string ArchOf(std::string_view target_id) { return std::string(target_id.substr(0, target_id.find(':'))); }

/// Splits "<triple>-<target id>" the way clang-offload-bundler does (OffloadTargetInfo): the
/// target id starts at the last '-' before its first ':' when what follows is a GPU processor
/// ("gfx90a", "sm_90"); the target id's features may themselves end in '-' ("xnack-"). Else it
/// is all triple (one trailing '-', an empty target id as newer clang writes for the host,
/// dropped).
std::pair<std::string_view, std::string_view> SplitTriple(std::string_view text) {
  std::string_view processor_part = text.substr(0, text.find(':'));
  size_t dash = processor_part.rfind('-');
  if (dash != std::string_view::npos) {
    std::string_view processor = processor_part.substr(dash + 1);
    if (processor.rfind("gfx", 0) == 0 || processor.rfind("sm_", 0) == 0) {
      return {text.substr(0, dash), text.substr(dash + 1)};
    }
  }
  if (!text.empty() && text.back() == '-') text.remove_suffix(1);
  return {text, {}};
}

CodeObject ErrorObject(std::string origin, std::string error) {
  CodeObject object;
  object.vendor = "amd";
  object.origin = std::move(origin);
  object.error = std::move(error);
  return object;
}

CodeObject ReadEntryCodeObject(const BundleEntry& entry, std::string_view origin, size_t bundle_at) {
  std::string entry_origin = entry.compressed
                                 ? fmt::format("{}+{:#x}(compressed bundle)+{:#x}", origin, bundle_at, entry.offset)
                                 : fmt::format("{}+{:#x}", origin, bundle_at + entry.offset);
  CodeObject object =
      entry.error ? ErrorObject(entry_origin, fmt::format("offload bundle at +{:#x}: {}", bundle_at, *entry.error))
                  : ReadAmdgpuCodeObject(entry.bytes, entry_origin);
  object.compressed = entry.compressed;
  if (object.error && !entry.error) {
    object.error = fmt::format("{} (bundle entry {})", *object.error, entry.id);
  }
  // When the code object itself could not say, the bundle id names the target.
  if (object.target_id.empty()) object.target_id = entry.target_id;
  if (object.arch.empty()) object.arch = ArchOf(object.target_id);
  return object;
}

CodeObject NoBundleObject(std::string_view origin, uint64_t size) {
  return ErrorObject(
      std::string(origin),
      fmt::format("no offload bundle (__CLANG_OFFLOAD_BUNDLE__ or CCOB) in the {:#x} bytes of the section", size));
}

/// Hands the amdgcn entries' code objects of the bundle at `at` (in the section) to `sink`, or
/// one object with the bundle's error. Returns how far past `at` to look for the next bundle:
/// past the bundle (`consumed`), or 1 past its magic when it could not be read.
size_t EmitBundle(const core::Result<std::vector<BundleEntry>>& entries, size_t consumed, std::string_view origin,
                  uint64_t at, const CodeObjectCallback& sink) {
  if (!entries.ok()) {
    sink(ErrorObject(fmt::format("{}+{:#x}", origin, at),
                     fmt::format("offload bundle at +{:#x}: {}", at, entries.error().message)));
    return 1;  // the next bundle, if the damage spared it
  }
  for (const BundleEntry& entry : *entries) {
    if (entry.triple.rfind("amdgcn-", 0) != 0) continue;  // host and other offload targets
    sink(ReadEntryCodeObject(entry, origin, at));
  }
  return std::max<size_t>(consumed, 1);
}

// Streaming: the section is read in windows of this size to find bundles and their headers.
constexpr uint64_t kScanWindowBytes = 1u << 20;
// A damaged bundle header, or a version 1 compressed bundle that does not decompress from the
// bytes up to the next bundle, is read with the rest of the section, at most this much (what
// inspect reads of a .hip_fatbin section at most).
constexpr uint64_t kMaxBundleReadBytes = 2ull << 30;

/// The offset of the next bundle magic at or after `from` in [0, size) of `read`'s data; nullopt
/// when there is none or the data cannot be read. `window` is scratch space.
std::optional<uint64_t> FindBundleIn(const RangeReader& read, uint64_t from, uint64_t size, std::string* window) {
  const uint64_t overlap = kBundleMagic.size() - 1;  // a magic across two windows
  while (from < size) {
    uint64_t n = std::min(kScanWindowBytes, size - from);
    if (!read(from, n, window)) return std::nullopt;
    // FindBundle matches whole magics only: one cut by the window's end is found in the next.
    if (size_t i = FindBundle(*window, 0); i != std::string_view::npos) return from + i;
    if (from + n >= size) return std::nullopt;
    from += n - overlap;
  }
  return std::nullopt;
}

/// The end of a plain bundle from its header (`head`, the first bytes of the bundle): past its
/// entry table and its furthest entry. nullopt when the table runs past `head` (read more) or is
/// damaged, or an entry lies past `available` (ReadPlainBundle then says which, with the whole
/// data).
std::optional<uint64_t> PlainBundleEnd(std::string_view head, uint64_t available, bool* need_more) {
  ByteReader reader(head);
  *need_more = false;
  auto count = reader.U64(kBundleCountOffset);
  if (!count || *count > available / (kEntryHeaderFixedBytes + 1)) {
    *need_more = !count && head.size() < available;
    return std::nullopt;
  }
  uint64_t pos = kBundleEntriesOffset, end = 0;
  for (uint64_t i = 0; i < *count; ++i) {
    auto header = ReadBundleEntryHeader(reader, pos, i);
    if (!header.ok()) {
      *need_more = head.size() < available;
      return std::nullopt;
    }
    pos = header->next;
    std::optional<uint64_t> entry_end = core::CheckedAdd(header->offset, header->size);
    if (!entry_end || *entry_end > available) return std::nullopt;
    end = std::max(end, *entry_end);
  }
  return std::max(end, pos);
}

struct Extent {
  uint64_t bytes = 0;    ///< from the bundle's start
  bool guessed = false;  ///< up to the next bundle magic (compressed version 1)
};

/// How many bytes from `at` hold the bundle there (at most the rest of the data, and at most
/// kMaxBundleReadBytes): see StreamHipFatbin.
Extent BundleExtent(const RangeReader& read, uint64_t at, uint64_t size, std::string* window) {
  const uint64_t available = size - at;
  const uint64_t rest = std::min(available, kMaxBundleReadBytes);
  for (uint64_t head_bytes = std::min(available, uint64_t{64} << 10);; head_bytes = std::min(rest, head_bytes * 4)) {
    std::string head;
    if (!read(at, head_bytes, &head)) return {rest};
    if (head.starts_with(kCompressedMagic)) {
      auto header = ReadCompressedHeader(ByteReader(head));
      if (!header.ok()) return {head_bytes};  // the error is in the header
      if (header->total_bytes) return {std::min(*header->total_bytes <= available ? *header->total_bytes : rest, rest)};
      // Version 1: no total size; the compressed stream ends before the next bundle, unless
      // its bytes happen to hold a magic (then StreamHipFatbin reads the rest).
      std::optional<uint64_t> next = FindBundleIn(read, at + 1, size, window);
      return next ? Extent{std::min(*next - at, rest), true} : Extent{rest};
    }
    bool need_more = false;
    if (std::optional<uint64_t> end = PlainBundleEnd(head, available, &need_more)) return {std::min(*end, rest)};
    if (!need_more || head_bytes >= rest) return {rest};
  }
}

// ---------------------------------------------------------------------------------------------
// AMDGPU code objects. llvm/docs/AMDGPUUsage.rst, "ELF Code Object": ELF64, little-endian,
// e_machine EM_AMDGPU, EI_OSABI ELFOSABI_AMDGPU_HSA; EI_ABIVERSION gives the code object
// version; e_flags holds EF_AMDGPU_MACH (the processor) and the xnack/sramecc feature bits.

constexpr uint16_t kEmAmdgpu = 224;
constexpr uint8_t kElfClass64 = 2;
constexpr uint8_t kElfData2Lsb = 1;
constexpr uint8_t kOsAbiAmdgpuHsa = 64;
constexpr uint64_t kElf64HeaderBytes = 64;
constexpr uint64_t kElf64SectionHeaderBytes = 64;
constexpr uint64_t kElf64ProgramHeaderBytes = 56;
constexpr uint32_t kShtNote = 7;
constexpr uint32_t kShtNobits = 8;
constexpr uint32_t kPtNote = 4;
// AMDGPUUsage "Code Object V3 Note Records" and later: owner "AMDGPU", NT_AMDGPU_METADATA = 32,
// MessagePack. Code object V2: owner "AMD", NT_AMD_HSA_METADATA = 10, YAML.
constexpr uint32_t kNtAmdgpuMetadata = 32;
constexpr uint32_t kNtAmdHsaMetadata = 10;

// EI_ABIVERSION: ELFABIVERSION_AMDGPU_HSA_V2 = 0, V3 = 1, V4 = 2, V5 = 3, V6 = 4.
constexpr uint8_t kAbiVersionV2 = 0;
constexpr uint8_t kAbiVersionV3 = 1;
constexpr uint8_t kAbiVersionLast = 4;

// EF_AMDGPU_MACH values (AMDGPUUsage "AMDGPU EF_AMDGPU_MACH Values";
// llvm/include/llvm/BinaryFormat/ELF.h). R600 values (< 0x20) carry no HSA code objects.
struct MachName {
  uint8_t mach;
  const char* name;
};
// clang-format off
constexpr MachName kMachNames[] = {
    {0x20, "gfx600"},  {0x21, "gfx601"},  {0x22, "gfx700"},  {0x23, "gfx701"},
    {0x24, "gfx702"},  {0x25, "gfx703"},  {0x26, "gfx704"},  {0x28, "gfx801"},
    {0x29, "gfx802"},  {0x2a, "gfx803"},  {0x2b, "gfx810"},  {0x2c, "gfx900"},
    {0x2d, "gfx902"},  {0x2e, "gfx904"},  {0x2f, "gfx906"},  {0x30, "gfx908"},
    {0x31, "gfx909"},  {0x32, "gfx90c"},  {0x33, "gfx1010"}, {0x34, "gfx1011"},
    {0x35, "gfx1012"}, {0x36, "gfx1030"}, {0x37, "gfx1031"}, {0x38, "gfx1032"},
    {0x39, "gfx1033"}, {0x3a, "gfx602"},  {0x3b, "gfx705"},  {0x3c, "gfx805"},
    {0x3d, "gfx1035"}, {0x3e, "gfx1034"}, {0x3f, "gfx90a"},  {0x40, "gfx940"},
    {0x41, "gfx1100"}, {0x42, "gfx1013"}, {0x43, "gfx1150"}, {0x44, "gfx1103"},
    {0x45, "gfx1036"}, {0x46, "gfx1101"}, {0x47, "gfx1102"}, {0x48, "gfx1200"},
    {0x4a, "gfx1151"}, {0x4b, "gfx941"},  {0x4c, "gfx942"},  {0x4e, "gfx1201"},
    {0x4f, "gfx950"},  {0x51, "gfx9-generic"}, {0x52, "gfx10-1-generic"},
    {0x53, "gfx10-3-generic"}, {0x54, "gfx11-generic"}, {0x55, "gfx1152"},
    {0x58, "gfx1153"}, {0x59, "gfx12-generic"}, {0x5f, "gfx9-4-generic"},
};
// clang-format on

const char* MachToArch(uint32_t flags) {
  uint8_t mach = flags & 0xff;  // EF_AMDGPU_MACH
  for (const MachName& entry : kMachNames) {
    if (entry.mach == mach) return entry.name;
  }
  return nullptr;
}

/// ":sramecc+" etc. for one feature field of e_flags, code object V4 and later
/// (EF_AMDGPU_FEATURE_*_V4: 0 unsupported, 1 any, 2 off, 3 on, in the field's two bits).
/// "any" and "unsupported" are written by leaving the feature out of the target id.
std::string FeatureV4(uint32_t flags, int shift, const char* name) {
  uint32_t value = (flags >> shift) & 3;
  if (value == 2) return fmt::format(":{}-", name);
  if (value == 3) return fmt::format(":{}+", name);
  return "";
}

/// The target id e_flags describe; empty when the processor is unknown. Features are listed
/// in alphabetical order, as target ids are written (AMDGPUUsage "Target ID").
std::string TargetIdFromFlags(uint8_t abi_version, uint32_t flags) {
  const char* arch = MachToArch(flags);
  if (!arch) return "";
  std::string target = arch;
  if (abi_version == kAbiVersionV2) {
    if (flags & 0x01) target += ":xnack+";  // EF_AMDGPU_FEATURE_XNACK_V2
  } else if (abi_version == kAbiVersionV3) {
    // EF_AMDGPU_FEATURE_XNACK_V3 = 0x100, EF_AMDGPU_FEATURE_SRAMECC_V3 = 0x200: a set bit
    // means the feature is enabled (LLVM sets it for "on" and for "any").
    if (flags & 0x200) target += ":sramecc+";
    if (flags & 0x100) target += ":xnack+";
  } else {
    // EF_AMDGPU_FEATURE_XNACK_V4 = 0x300, EF_AMDGPU_FEATURE_SRAMECC_V4 = 0xc00.
    target += FeatureV4(flags, 10, "sramecc");
    target += FeatureV4(flags, 8, "xnack");
  }
  return target;
}

struct ElfHeader {
  uint8_t abi_version = 0;
  uint32_t flags = 0;
  uint64_t phoff = 0, shoff = 0;
  uint16_t phentsize = 0, phnum = 0, shentsize = 0, shnum = 0, shstrndx = 0;
};

std::string OsAbiName(uint8_t os_abi) {
  switch (os_abi) {
    case 0:
      return "ELFOSABI_NONE";
    case 65:
      return "ELFOSABI_AMDGPU_PAL";
    case 66:
      return "ELFOSABI_AMDGPU_MESA3D";
    default:
      return fmt::format("{}", os_abi);
  }
}

core::Result<void> CheckIdent(std::string_view elf) {
  if (elf.substr(0, 4) == std::string_view("BC\xc0\xde", 4)) {
    return core::MakeError("LLVM bitcode, not a code object (from -fgpu-rdc?)");
  }
  if (elf.substr(0, 4) !=
      "\x7f"
      "ELF") {
    return core::MakeError("not an ELF file ({:#x} bytes, start: {})", elf.size(), HexPrefix(elf));
  }
  if (elf.size() < kElf64HeaderBytes) {
    return core::MakeError("truncated ELF header: {:#x} bytes, need {:#x}", elf.size(), kElf64HeaderBytes);
  }
  ByteReader reader(elf);
  if (*reader.U8(4) != kElfClass64) {
    return core::MakeError("ELF class {} is not ELFCLASS64", *reader.U8(4));
  }
  if (*reader.U8(5) != kElfData2Lsb) {
    return core::MakeError("ELF data encoding {} is not little-endian", *reader.U8(5));
  }
  if (uint16_t machine = *reader.U16(18); machine != kEmAmdgpu) {
    return core::MakeError("e_machine {} is not EM_AMDGPU (224)", machine);
  }
  return {};
}

core::Result<ElfHeader> ReadElfHeader(std::string_view elf) {
  if (auto ident = CheckIdent(elf); !ident.ok()) return ident.error();
  ByteReader reader(elf);
  uint8_t os_abi = *reader.U8(7);
  if (os_abi != kOsAbiAmdgpuHsa) {
    return core::MakeError("EI_OSABI {} is not ELFOSABI_AMDGPU_HSA (64)", OsAbiName(os_abi));
  }
  ElfHeader header;
  header.abi_version = *reader.U8(8);
  if (header.abi_version > kAbiVersionLast) {
    return core::MakeError("EI_ABIVERSION {}: unknown code object version (known: 0-4 for v2-v6)", header.abi_version);
  }
  header.flags = *reader.U32(48);
  header.phoff = *reader.U64(32);
  header.shoff = *reader.U64(40);
  header.phentsize = *reader.U16(54);
  header.phnum = *reader.U16(56);
  header.shentsize = *reader.U16(58);
  header.shnum = *reader.U16(60);
  header.shstrndx = *reader.U16(62);
  return header;
}

/// A range of the file that holds notes, and how to name it in messages.
struct NoteRange {
  uint64_t offset = 0;
  uint64_t size = 0;
  std::string where;  ///< "section 2 (.note)", "program header 4"
};

core::Result<void> CheckTable(const char* what, uint64_t offset, uint64_t count, uint64_t entry_bytes,
                              uint64_t expected_entry_bytes, uint64_t file_bytes) {
  if (count == 0) return {};
  if (entry_bytes != expected_entry_bytes) {
    return core::MakeError("{} entries of {:#x} bytes, ELF64 has {:#x}", what, entry_bytes, expected_entry_bytes);
  }
  auto table_bytes = CheckedMul(count, entry_bytes);
  if (!table_bytes || !RangeInside(offset, *table_bytes, file_bytes)) {
    return core::MakeError("{} at {:#x} ({} of {:#x} bytes) lie beyond the {:#x} bytes of the file", what, offset,
                           count, entry_bytes, file_bytes);
  }
  return {};
}

std::string SectionName(const ByteReader& reader, const ElfHeader& header, uint32_t name_offset) {
  if (header.shstrndx >= header.shnum) return "";
  uint64_t strtab = header.shoff + uint64_t{header.shstrndx} * kElf64SectionHeaderBytes;
  auto offset = reader.U64(strtab + 24);
  auto size = reader.U64(strtab + 32);
  if (!offset || !size || !RangeInside(*offset, *size, reader.size())) return "";
  auto table = reader.Bytes(*offset, *size);
  if (!table || name_offset >= table->size()) return "";
  std::string_view name = table->substr(name_offset);
  name = name.substr(0, std::min<size_t>(name.find('\0'), 64));
  return IsPrintableAscii(name) ? std::string(name) : "";
}

/// The SHT_NOTE sections; every section with file contents must lie inside the file (a
/// truncated code object fails here, naming the first section that is cut).
core::Result<std::vector<NoteRange>> NoteSections(const ByteReader& reader, const ElfHeader& header) {
  if (auto table = CheckTable("section headers", header.shoff, header.shnum, header.shentsize, kElf64SectionHeaderBytes,
                              reader.size());
      !table.ok()) {
    return table.error();
  }
  std::vector<NoteRange> notes;
  for (uint64_t i = 0; i < header.shnum; ++i) {
    uint64_t at = header.shoff + i * kElf64SectionHeaderBytes;
    uint32_t type = *reader.U32(at + 4);
    uint64_t offset = *reader.U64(at + 24);
    uint64_t size = *reader.U64(at + 32);
    if (type == kShtNobits) continue;
    std::string name = SectionName(reader, header, *reader.U32(at));
    std::string where = name.empty() ? fmt::format("section {}", i) : fmt::format("section {} ({})", i, name);
    if (!RangeInside(offset, size, reader.size())) {
      return core::MakeError("{}: offset {:#x} + size {:#x} lies beyond the {:#x} bytes of the file", where, offset,
                             size, reader.size());
    }
    if (type == kShtNote) notes.push_back({offset, size, std::move(where)});
  }
  return notes;
}

/// The PT_NOTE segments, for a code object without section headers.
core::Result<std::vector<NoteRange>> NoteSegments(const ByteReader& reader, const ElfHeader& header) {
  if (auto table = CheckTable("program headers", header.phoff, header.phnum, header.phentsize, kElf64ProgramHeaderBytes,
                              reader.size());
      !table.ok()) {
    return table.error();
  }
  std::vector<NoteRange> notes;
  for (uint64_t i = 0; i < header.phnum; ++i) {
    uint64_t at = header.phoff + i * kElf64ProgramHeaderBytes;
    if (*reader.U32(at) != kPtNote) continue;
    uint64_t offset = *reader.U64(at + 8);
    uint64_t size = *reader.U64(at + 32);
    std::string where = fmt::format("program header {} (PT_NOTE)", i);
    if (!RangeInside(offset, size, reader.size())) {
      return core::MakeError("{}: offset {:#x} + size {:#x} lies beyond the {:#x} bytes of the file", where, offset,
                             size, reader.size());
    }
    notes.push_back({offset, size, std::move(where)});
  }
  return notes;
}

struct Note {
  std::string_view name;  ///< without the terminating NUL
  uint32_t type = 0;
  std::string_view desc;
};

/// The notes of one range (ELF note format: uint32 namesz, descsz, type; name and desc each
/// padded to 4 bytes, as AMDGPU code objects align them).
core::Result<std::vector<Note>> ReadNotes(const ByteReader& file, const NoteRange& range) {
  ByteReader reader = *file.Slice(range.offset, range.size);  // checked by NoteSections/Segments
  std::vector<Note> notes;
  uint64_t pos = 0;
  while (pos + 12 <= reader.size()) {
    uint32_t name_size = *reader.U32(pos);
    uint32_t desc_size = *reader.U32(pos + 4);
    uint32_t type = *reader.U32(pos + 8);
    uint64_t desc_at = AlignUp4(pos + 12 + name_size);
    auto name = reader.Bytes(pos + 12, name_size);
    auto desc = reader.Bytes(desc_at, desc_size);
    if (!name || !desc) {
      return core::MakeError(
          "{}: note at +{:#x} (name {:#x} bytes, desc {:#x} bytes) runs past the "
          "{:#x} bytes of the notes",
          range.where, pos, name_size, desc_size, reader.size());
    }
    std::string_view trimmed = *name;
    while (!trimmed.empty() && trimmed.back() == '\0') trimmed.remove_suffix(1);
    notes.push_back({trimmed, type, *desc});
    pos = AlignUp4(desc_at + desc_size);
  }
  return notes;
}

core::Result<std::vector<Note>> ReadAllNotes(std::string_view elf, const ElfHeader& header) {
  ByteReader reader(elf);
  core::Result<std::vector<NoteRange>> ranges =
      header.shnum > 0 ? NoteSections(reader, header) : NoteSegments(reader, header);
  if (!ranges.ok()) return ranges.error();
  std::vector<Note> notes;
  for (const NoteRange& range : *ranges) {
    GT_ASSIGN_OR_RETURN(std::vector<Note> more, ReadNotes(reader, range));
    notes.insert(notes.end(), more.begin(), more.end());
  }
  return notes;
}

// ---------------------------------------------------------------------------------------------
// Code object metadata (AMDGPUUsage "Code Object V3 Metadata" and the V4-V6 changes): a
// MessagePack map with "amdhsa.version" [major, minor] (1.0 for V3, 1.1 V4, 1.2 V5/V6),
// "amdhsa.target" (V4+) and "amdhsa.kernels", an array of maps.

constexpr uint32_t kMaxMetadataDepth = 16;

/// First pass over the MessagePack bytes that allocates nothing. msgpack::unpack allocates an
/// array's or map's elements as soon as it reads the declared count: even with an unpack_limit
/// of the note's size, N five-byte headers that each declare N elements would cost N² objects.
/// This parse fails on such lies (the declared elements are not there) before unpack sees
/// them, and bounds the nesting.
class MetadataValidator : public msgpack::null_visitor {
 public:
  bool start_array(uint32_t) { return Enter(); }
  bool end_array() { return Leave(); }
  bool start_map(uint32_t) { return Enter(); }
  bool end_map() { return Leave(); }
  void parse_error(size_t /*parsed*/, size_t error_offset) {
    problem_ = fmt::format("malformed at byte {:#x}", error_offset);
  }
  void insufficient_bytes(size_t /*parsed*/, size_t error_offset) {
    problem_ = fmt::format("truncated at byte {:#x}", error_offset);
  }
  const std::string& problem() const { return problem_; }

 private:
  bool Enter() {
    if (++depth_ <= kMaxMetadataDepth) return true;
    problem_ = fmt::format("nested deeper than {} levels", kMaxMetadataDepth);
    return false;
  }
  bool Leave() {
    --depth_;
    return true;
  }

  uint32_t depth_ = 0;
  std::string problem_;
};

core::Result<msgpack::object_handle> UnpackMetadata(std::string_view bytes) {
  MetadataValidator validator;
  size_t offset = 0;
  bool parsed = false;
  try {
    parsed = msgpack::parse(bytes.data(), bytes.size(), offset, validator);
  } catch (const std::exception& e) {
    return core::MakeError("metadata note: MessagePack: {}", e.what());
  }
  if (!parsed) {
    std::string problem = validator.problem().empty() ? "malformed" : validator.problem();
    return core::MakeError("metadata note: MessagePack {} ({:#x} bytes)", problem, bytes.size());
  }
  // Every declared element is present, so no count exceeds the note's size.
  msgpack::unpack_limit limit(bytes.size(), bytes.size(), bytes.size(), bytes.size(), bytes.size(),
                              kMaxMetadataDepth + 1);
  try {
    return msgpack::unpack(bytes.data(), bytes.size(), nullptr, nullptr, limit);
  } catch (const std::exception& e) {
    return core::MakeError("metadata note: MessagePack: {}", e.what());
  }
}

std::string_view TypeName(msgpack::type::object_type type) {
  switch (type) {
    case msgpack::type::NIL:
      return "nil";
    case msgpack::type::BOOLEAN:
      return "a boolean";
    case msgpack::type::POSITIVE_INTEGER:
      return "an unsigned integer";
    case msgpack::type::NEGATIVE_INTEGER:
      return "a negative integer";
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64:
      return "a float";
    case msgpack::type::STR:
      return "a string";
    case msgpack::type::BIN:
      return "binary";
    case msgpack::type::ARRAY:
      return "an array";
    case msgpack::type::MAP:
      return "a map";
    case msgpack::type::EXT:
      return "an extension";
  }
  return "of unknown type";
}

/// The value under a string key of a map, or null.
const msgpack::object* Find(const msgpack::object& map, std::string_view key) {
  for (uint32_t i = 0; i < map.via.map.size; ++i) {
    const msgpack::object_kv& kv = map.via.map.ptr[i];
    if (kv.key.type == msgpack::type::STR && std::string_view(kv.key.via.str.ptr, kv.key.via.str.size) == key) {
      return &kv.val;
    }
  }
  return nullptr;
}

std::string_view AsString(const msgpack::object& value) {
  return std::string_view(value.via.str.ptr, value.via.str.size);
}

/// Reads the kernel map's optional fields, each with the type it must have.
class KernelFields {
 public:
  KernelFields(const msgpack::object& map, std::string context) : map_(map), context_(std::move(context)) {}

  core::Result<std::optional<uint32_t>> U32(std::string_view key) const {
    const msgpack::object* value = Find(map_, key);
    if (!value) return std::optional<uint32_t>();
    if (value->type != msgpack::type::POSITIVE_INTEGER) {
      return core::MakeError("{}: {} is {}, expected an unsigned integer", context_, key, TypeName(value->type));
    }
    if (value->via.u64 > std::numeric_limits<uint32_t>::max()) {
      return core::MakeError("{}: {} = {:#x} does not fit 32 bits", context_, key, value->via.u64);
    }
    return std::optional<uint32_t>(static_cast<uint32_t>(value->via.u64));
  }

  core::Result<std::optional<bool>> Bool(std::string_view key) const {
    const msgpack::object* value = Find(map_, key);
    if (!value) return std::optional<bool>();
    if (value->type != msgpack::type::BOOLEAN) {
      return core::MakeError("{}: {} is {}, expected a boolean", context_, key, TypeName(value->type));
    }
    return std::optional<bool>(value->via.boolean);
  }

  core::Result<std::optional<std::string>> String(std::string_view key) const {
    const msgpack::object* value = Find(map_, key);
    if (!value) return std::optional<std::string>();
    if (value->type != msgpack::type::STR) {
      return core::MakeError("{}: {} is {}, expected a string", context_, key, TypeName(value->type));
    }
    return std::optional<std::string>(std::string(AsString(*value)));
  }

 private:
  const msgpack::object& map_;
  std::string context_;
};

core::Result<void> ReadKernelSizes(const KernelFields& fields, Kernel* kernel) {
  struct U32Field {
    const char* key;
    std::optional<uint32_t> Kernel::*member;
  };
  static constexpr std::array<U32Field, 10> kFields = {{
      {".sgpr_count", &Kernel::sgpr_count},
      {".vgpr_count", &Kernel::vgpr_count},
      {".agpr_count", &Kernel::agpr_count},
      {".sgpr_spill_count", &Kernel::sgpr_spill_count},
      {".vgpr_spill_count", &Kernel::vgpr_spill_count},
      {".group_segment_fixed_size", &Kernel::lds_bytes},
      {".private_segment_fixed_size", &Kernel::scratch_bytes},
      {".kernarg_segment_size", &Kernel::kernarg_bytes},
      {".max_flat_workgroup_size", &Kernel::max_workgroup_size},
      {".wavefront_size", &Kernel::wavefront_size},
  }};
  for (const U32Field& field : kFields) {
    GT_ASSIGN_OR_RETURN(kernel->*field.member, fields.U32(field.key));
  }
  GT_ASSIGN_OR_RETURN(kernel->dynamic_stack, fields.Bool(".uses_dynamic_stack"));
  return {};
}

core::Result<Kernel> ReadKernel(const msgpack::object& map, size_t index) {
  if (map.type != msgpack::type::MAP) {
    return core::MakeError("amdhsa.kernels[{}] is {}, expected a map", index, TypeName(map.type));
  }
  KernelFields fields(map, fmt::format("amdhsa.kernels[{}]", index));
  GT_ASSIGN_OR_RETURN(std::optional<std::string> name, fields.String(".name"));
  GT_ASSIGN_OR_RETURN(std::optional<std::string> symbol, fields.String(".symbol"));
  if (name && name->empty()) name.reset();
  if (symbol && symbol->empty()) symbol.reset();
  if (!name && !symbol) {
    return core::MakeError("amdhsa.kernels[{}] has neither .name nor .symbol", index);
  }
  Kernel kernel;
  kernel.symbol = symbol ? *symbol : *name;
  // .name is the source-level (mangled) name; .symbol its kernel descriptor, "<name>.kd".
  std::string stored = name ? *name : kernel.symbol.substr(0, kernel.symbol.rfind(".kd"));
  if (stored.empty()) stored = kernel.symbol;  // a symbol ".kd" names nothing else
  // The name is for display (JSON needs valid UTF-8); the symbol stays byte for byte.
  kernel.name = core::SanitizeUtf8(Demangle(stored));
  KernelFields named(map, fmt::format("kernel {}", stored));
  if (auto sizes = ReadKernelSizes(named, &kernel); !sizes.ok()) return sizes.error();
  return kernel;
}

core::Result<void> CheckMetadataVersion(const msgpack::object& root) {
  const msgpack::object* version = Find(root, "amdhsa.version");
  if (!version) return core::MakeError("metadata has no amdhsa.version");
  if (version->type != msgpack::type::ARRAY || version->via.array.size < 2 ||
      version->via.array.ptr[0].type != msgpack::type::POSITIVE_INTEGER ||
      version->via.array.ptr[1].type != msgpack::type::POSITIVE_INTEGER) {
    return core::MakeError("amdhsa.version is not [major, minor]");
  }
  uint64_t major = version->via.array.ptr[0].via.u64;
  uint64_t minor = version->via.array.ptr[1].via.u64;
  // A new minor version only adds keys; a new major version may change their meaning.
  if (major != 1) {
    return core::MakeError("amdhsa.version {}.{} is not supported (only major version 1 is known)", major, minor);
  }
  return {};
}

core::Result<void> ReadTarget(const msgpack::object& root, CodeObject* object) {
  const msgpack::object* target = Find(root, "amdhsa.target");
  if (!target) return {};  // code object V3 has none: e_flags said it
  if (target->type != msgpack::type::STR) {
    return core::MakeError("amdhsa.target is {}, expected a string", TypeName(target->type));
  }
  // "<arch>-<vendor>-<os>-<environment>-<target id>", e.g. "amdgcn-amd-amdhsa--gfx90a:xnack-".
  std::string_view text = AsString(*target);
  if (!IsPrintableAscii(text)) {
    return core::MakeError("amdhsa.target is not printable text (start: {})", HexPrefix(text));
  }
  std::string_view target_id = SplitTriple(text).second;
  if (target_id.empty()) {
    return core::MakeError("amdhsa.target '{}' is not <triple>-<target id>", text);
  }
  object->target_id = std::string(target_id);
  object->arch = ArchOf(target_id);
  return {};
}

core::Result<void> ReadMetadata(std::string_view bytes, CodeObject* object) {
  GT_ASSIGN_OR_RETURN(msgpack::object_handle handle, UnpackMetadata(bytes));
  const msgpack::object& root = handle.get();
  if (root.type != msgpack::type::MAP) {
    return core::MakeError("metadata is {}, expected a map", TypeName(root.type));
  }
  if (auto version = CheckMetadataVersion(root); !version.ok()) return version.error();
  if (auto target = ReadTarget(root, object); !target.ok()) return target.error();
  const msgpack::object* kernels = Find(root, "amdhsa.kernels");
  if (!kernels) return {};  // a code object may hold only device functions
  if (kernels->type != msgpack::type::ARRAY) {
    return core::MakeError("amdhsa.kernels is {}, expected an array", TypeName(kernels->type));
  }
  for (uint32_t i = 0; i < kernels->via.array.size; ++i) {
    GT_ASSIGN_OR_RETURN(Kernel kernel, ReadKernel(kernels->via.array.ptr[i], i));
    object->kernels.push_back(std::move(kernel));
  }
  return {};
}

core::Result<void> ReadCodeObjectInto(std::string_view elf, CodeObject* object) {
  GT_ASSIGN_OR_RETURN(ElfHeader header, ReadElfHeader(elf));
  object->format = fmt::format("hsaco-v{}", header.abi_version + 2);
  object->target_id = TargetIdFromFlags(header.abi_version, header.flags);
  object->arch = ArchOf(object->target_id);
  GT_ASSIGN_OR_RETURN(std::vector<Note> notes, ReadAllNotes(elf, header));
  for (const Note& note : notes) {
    if (header.abi_version == kAbiVersionV2 && note.name == "AMD" && note.type == kNtAmdHsaMetadata) {
      return core::MakeError("code object v2 metadata (YAML) is not read");
    }
    if (note.name == "AMDGPU" && note.type == kNtAmdgpuMetadata) {
      return ReadMetadata(note.desc, object);
    }
  }
  if (header.abi_version == kAbiVersionV2) {
    return core::MakeError("code object v2 without an NT_AMD_HSA_METADATA note");
  }
  return core::MakeError("no NT_AMDGPU_METADATA note (owner \"AMDGPU\", type 32) in {} notes", notes.size());
}

}  // namespace

void SplitBundleId(std::string_view id, BundleEntry* entry) {
  size_t dash = id.find('-');
  entry->kind = std::string(id.substr(0, dash));
  if (dash == std::string_view::npos) return;
  auto [triple, target_id] = SplitTriple(id.substr(dash + 1));
  entry->triple = std::string(triple);
  entry->target_id = std::string(target_id);
}

core::Result<std::vector<BundleEntry>> ReadOffloadBundle(std::string_view data, size_t* consumed,
                                                         uint64_t max_decompressed_bytes) {
  if (data.substr(0, kCompressedMagic.size()) == kCompressedMagic) {
    return ReadCompressedBundle(data, consumed, max_decompressed_bytes);
  }
  if (data.substr(0, kBundleMagic.size()) != kBundleMagic) {
    return core::MakeError("no offload bundle magic (__CLANG_OFFLOAD_BUNDLE__ or CCOB) at the start: {}",
                           HexPrefix(data));
  }
  uint64_t end = 0;
  GT_ASSIGN_OR_RETURN(std::vector<BundleEntry> entries, ReadPlainBundle(data, &end));
  if (consumed) *consumed = end;
  return entries;
}

std::vector<CodeObject> ReadHipFatbin(std::string_view section, std::string_view origin,
                                      uint64_t max_decompressed_bytes) {
  std::vector<CodeObject> objects;
  auto sink = [&objects](CodeObject&& object) { objects.push_back(std::move(object)); };
  bool found = false;
  for (size_t at = FindBundle(section, 0); at != std::string_view::npos;) {
    found = true;
    size_t consumed = 0;
    auto entries = ReadOffloadBundle(section.substr(at), &consumed, max_decompressed_bytes);
    at = FindBundle(section, at + EmitBundle(entries, consumed, origin, at, sink));
  }
  if (!found) sink(NoBundleObject(origin, section.size()));
  return objects;
}

void StreamHipFatbin(const RangeReader& read, uint64_t size, std::string_view origin, const CodeObjectCallback& sink,
                     const std::function<void(uint64_t done)>& progress, uint64_t max_decompressed_bytes) {
  bool found = false;
  std::string window;
  for (std::optional<uint64_t> at = FindBundleIn(read, 0, size, &window); at;) {
    found = true;
    Extent extent = BundleExtent(read, *at, size, &window);
    std::string bytes;
    if (!read(*at, extent.bytes, &bytes)) {
      sink(ErrorObject(fmt::format("{}+{:#x}", origin, *at),
                       fmt::format("offload bundle at +{:#x}: {:#x} bytes cannot be read", *at, extent.bytes)));
      break;
    }
    size_t consumed = 0;
    auto entries = ReadOffloadBundle(bytes, &consumed, max_decompressed_bytes);
    uint64_t rest = std::min(size - *at, kMaxBundleReadBytes);
    if (!entries.ok() && extent.guessed && rest > extent.bytes && read(*at, rest, &bytes)) {
      // A version 1 compressed bundle cut at a magic inside its data: read with the rest of the
      // data, as ReadHipFatbin sees it.
      entries = ReadOffloadBundle(bytes, &consumed, max_decompressed_bytes);
    }
    consumed = EmitBundle(entries, consumed, origin, *at, sink);
    bytes = std::string();  // before the next bundle is read: one bundle in memory at a time
    if (progress) progress(*at + consumed);
    at = FindBundleIn(read, *at + consumed, size, &window);
  }
  if (!found) sink(NoBundleObject(origin, size));
}

bool LooksLikeAmdgpuElf(std::string_view data) {
  ByteReader reader(data);
  return data.substr(0, 4) ==
             "\x7f"
             "ELF" &&
         reader.U8(4) == kElfClass64 && reader.U8(5) == kElfData2Lsb && reader.U16(18) == kEmAmdgpu;
}

CodeObject ReadAmdgpuCodeObject(std::string_view elf, std::string_view origin) {
  CodeObject object;
  object.vendor = "amd";
  object.origin = std::string(origin);
  object.size = elf.size();
  if (auto read = ReadCodeObjectInto(elf, &object); !read.ok()) {
    object.error = read.error().message;
    object.kernels.clear();  // an object with an error reports no kernels of doubtful origin
  }
  return object;
}

}  // namespace gputriage::inspect
