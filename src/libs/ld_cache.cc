#include "libs/ld_cache.h"

#include <algorithm>

#include "core/byte_reader.h"
#include "core/file.h"

namespace gputriage::libs {
namespace {

constexpr std::string_view kOldMagic = "ld.so-1.7.0";
constexpr std::string_view kNewMagic = "glibc-ld.so.cache1.1";
constexpr size_t kNewHeader = 48;  // magic+version 20, nlibs 4, len_strings 4, flags 1, pad 3, extension 4, unused 12
constexpr size_t kNewEntry = 24;   // flags 4, key 4, value 4, osversion 4, hwcap 8
constexpr size_t kOldEntry = 12;   // flags 4, key 4, value 4

}  // namespace

bool IsX8664Entry(int32_t flags) {
  // FLAG_ELF_LIBC6 in the type byte, FLAG_X8664_LIB64 in the required-arch byte.
  return (flags & 0xff) == 0x03 && (flags & 0xff00) == 0x0300;
}

std::vector<const LdCacheEntry*> LdCache::Find(std::string_view name) const {
  std::vector<const LdCacheEntry*> out;
  auto [begin, end] = by_name.equal_range(name);
  for (auto it = begin; it != end; ++it) {
    if (IsX8664Entry(entries[it->second].flags)) out.push_back(&entries[it->second]);
  }
  std::sort(out.begin(), out.end());  // file order (entries is a vector)
  return out;
}

core::Result<LdCache> ParseLdCache(std::string_view bytes, std::string_view source) {
  core::ByteReader file(bytes);
  size_t start = 0;
  if (bytes.starts_with(kOldMagic)) {
    // The old table first; the new one follows it, 8-byte aligned (glibc's ALIGN_CACHE).
    std::optional<uint32_t> old_count = file.U32(kOldMagic.size() + 1);
    if (!old_count) return core::MakeErrorCode(core::ErrorCode::kDataLoss, "{}: truncated old-format header", source);
    uint64_t end = 16 + uint64_t{*old_count} * kOldEntry;
    start = static_cast<size_t>((end + 7) & ~uint64_t{7});
    if (start >= bytes.size() || bytes.substr(start, kNewMagic.size()) != kNewMagic) {
      return core::MakeErrorCode(core::ErrorCode::kUnsupported,
                                 "{}: only the old ld.so-1.7.0 format (no glibc-ld.so.cache1.1 table): not read",
                                 source);
    }
  } else if (!bytes.starts_with(kNewMagic)) {
    return core::MakeErrorCode(core::ErrorCode::kDataLoss, "{}: not an ld.so cache (no glibc-ld.so.cache1.1 magic)",
                               source);
  }
  std::optional<uint32_t> count = file.U32(start + 20);
  std::optional<uint32_t> len_strings = file.U32(start + 24);
  if (!count || !len_strings)
    return core::MakeErrorCode(core::ErrorCode::kDataLoss, "{}: truncated header ({} bytes)", source, bytes.size());
  uint64_t table_end = start + kNewHeader + uint64_t{*count} * kNewEntry;
  if (table_end > bytes.size()) {
    return core::MakeErrorCode(core::ErrorCode::kDataLoss, "{}: {} entries need {} bytes, the file has {}: truncated",
                               source, *count, table_end, bytes.size());
  }
  // String offsets are from the new header when the old table precedes it, else from the file's start.
  size_t base = start;
  LdCache cache;
  cache.entries.reserve(*count);
  for (uint32_t i = 0; i < *count; ++i) {
    uint64_t at = start + kNewHeader + uint64_t{i} * kNewEntry;
    LdCacheEntry e;
    e.flags = *file.I32(at);
    std::optional<std::string_view> key = file.CString(base + uint64_t{*file.U32(at + 4)});
    std::optional<std::string_view> value = file.CString(base + uint64_t{*file.U32(at + 8)});
    e.hwcap = *file.U64(at + 16);
    if (!key || !value) {
      return core::MakeErrorCode(core::ErrorCode::kDataLoss,
                                 "{}: entry {}: its name or path lies outside the file: corrupt cache", source, i);
    }
    e.name = std::string(*key);
    e.path = std::string(*value);
    cache.by_name.emplace(e.name, cache.entries.size());
    cache.entries.push_back(std::move(e));
  }
  return cache;
}

core::Result<LdCache> ReadLdCache(const std::string& path) {
  GT_ASSIGN_OR_RETURN(std::string bytes, core::ReadFile(path, 64u << 20));
  return ParseLdCache(bytes, path);
}

}  // namespace gputriage::libs
