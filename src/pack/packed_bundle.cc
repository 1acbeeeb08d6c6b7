#include "pack/packed_bundle.h"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

#include <algorithm>
#include <memory>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "core/text.h"

namespace gputriage::pack {
namespace {

struct ArchiveFree {
  void operator()(archive* a) const { archive_read_free(a); }
};

// What libarchive's read callback reads from.
struct SourceContext {
  const ByteSource* source = nullptr;
  std::vector<char> buffer = std::vector<char>(1u << 16);
  std::string error;  // the source's own error, kept: libarchive's message would lose it
};

la_ssize_t ReadCallback(archive* a, void* client, const void** out) {
  auto* ctx = static_cast<SourceContext*>(client);
  core::Result<size_t> got = (*ctx->source)(ctx->buffer.data(), ctx->buffer.size());
  if (!got.ok()) {
    ctx->error = got.error().message;
    archive_set_error(a, EIO, "%s", ctx->error.c_str());
    return -1;
  }
  *out = ctx->buffer.data();
  return static_cast<la_ssize_t>(*got);
}

core::Error Refuse(std::string_view name, std::string_view member, std::string_view why) {
  return core::MakeErrorCode(core::ErrorCode::kInvalidArgument, "{}: member '{}' {}; not a packed crash bundle", name,
                             core::SanitizeUtf8(member), why);
}

const char* TypeName(mode_t type) {
  switch (type) {
    case AE_IFLNK:
      return "is a symbolic link";
    case AE_IFCHR:
      return "is a character device";
    case AE_IFBLK:
      return "is a block device";
    case AE_IFIFO:
      return "is a FIFO";
    case AE_IFSOCK:
      return "is a socket";
    default:
      return "is not a regular file or directory";
  }
}

// Splits "TOP/NAME" or "TOP/" and checks it; sets `top` and `file` ("" for the directory).
core::Result<void> SplitMember(std::string_view name, std::string_view path, std::string& top, std::string& file) {
  if (path.empty()) return Refuse(name, path, "has an empty name");
  if (path.front() == '/') return Refuse(name, path, "has an absolute path");
  std::string_view rest = path;
  if (rest.back() == '/') rest.remove_suffix(1);
  std::vector<std::string_view> parts;
  while (true) {
    size_t slash = rest.find('/');
    parts.push_back(rest.substr(0, slash));
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  for (std::string_view part : parts) {
    if (part.empty() || part == ".") return Refuse(name, path, "has an empty or '.' path component");
    if (part == "..") return Refuse(name, path, "has a '..' path component (path traversal)");
  }
  if (parts.size() > 2) return Refuse(name, path, "is in a subdirectory (a bundle has none)");
  top = std::string(parts[0]);
  file = parts.size() == 2 ? std::string(parts[1]) : "";
  return {};
}

// Reads the current member's data: all of it for `keep` (at most `bound.max_bytes`, the last
// ones for a tail), else skipped. Adds what it read to `total`.
core::Result<std::string> ReadMemberData(archive* a, std::string_view name, std::string_view member,
                                         const core::BundleFileBound* bound, uint64_t& total, uint64_t& size,
                                         const PackedBundleLimits& limits) {
  std::string kept;
  std::vector<char> buf(1u << 16);
  size = 0;
  while (true) {
    la_ssize_t n = archive_read_data(a, buf.data(), buf.size());
    if (n < 0) {
      return core::MakeErrorCode(core::ErrorCode::kInvalidArgument, "{}: member '{}': {}", name,
                                 core::SanitizeUtf8(member), archive_error_string(a));
    }
    if (n == 0) break;
    size += static_cast<uint64_t>(n);
    total += static_cast<uint64_t>(n);
    if (total > limits.max_total_bytes) {
      return core::MakeErrorCode(core::ErrorCode::kInvalidArgument,
                                 "{}: its members hold more than {} bytes together; not read further", name,
                                 limits.max_total_bytes);
    }
    if (bound == nullptr) continue;
    if (size <= bound->max_bytes || bound->tail) kept.append(buf.data(), static_cast<size_t>(n));
    // A tail keeps its last max_bytes: trim once twice that is held, so memory stays bounded.
    if (bound->tail && kept.size() > 2 * bound->max_bytes) kept.erase(0, kept.size() - bound->max_bytes);
  }
  return kept;
}

}  // namespace

bool LooksLikeTar(std::string_view bytes) { return bytes.size() >= 262 && bytes.substr(257, 5) == "ustar"; }

core::Result<PackedBundle> ReadPackedBundle(const ByteSource& source, std::string_view name,
                                            const PackedBundleLimits& limits) {
  std::unique_ptr<archive, ArchiveFree> a(archive_read_new());
  if (!a) return core::MakeError("{}: cannot create a libarchive reader", name);
  archive_read_support_filter_zstd(a.get());
  archive_read_support_format_tar(a.get());
  SourceContext ctx{.source = &source};
  if (archive_read_open(a.get(), &ctx, nullptr, ReadCallback, nullptr) != ARCHIVE_OK) {
    if (!ctx.error.empty()) return core::MakeError("{}", ctx.error);
    return core::MakeErrorCode(core::ErrorCode::kInvalidArgument, "{}: not a packed crash bundle (a .tar.zst): {}",
                               name, archive_error_string(a.get()));
  }
  PackedBundle out;
  std::set<std::string> seen;
  uint64_t total = 0;
  size_t members = 0;
  while (true) {
    archive_entry* entry = nullptr;
    int r = archive_read_next_header(a.get(), &entry);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
      if (!ctx.error.empty()) return core::MakeError("{}", ctx.error);
      return core::MakeErrorCode(core::ErrorCode::kInvalidArgument, "{}: cannot read the archive after {} members: {}",
                                 name, members, archive_error_string(a.get()));
    }
    if (++members > limits.max_members) {
      return core::MakeErrorCode(core::ErrorCode::kInvalidArgument,
                                 "{}: more than {} members; a packed crash bundle has about 14", name,
                                 limits.max_members);
    }
    const char* raw_path = archive_entry_pathname(entry);
    std::string path = raw_path != nullptr ? raw_path : "";
    if (archive_entry_hardlink(entry) != nullptr) return Refuse(name, path, "is a hard link");
    std::string top;
    std::string file;
    GT_RETURN_IF_ERROR(SplitMember(name, path, top, file));
    if (out.top.empty()) out.top = top;
    if (top != out.top) {
      return Refuse(name, path, fmt::format("is outside the top directory '{}'", core::SanitizeUtf8(out.top)));
    }
    mode_t type = archive_entry_filetype(entry);
    if (file.empty()) {
      if (type != AE_IFDIR) return Refuse(name, path, "is the top directory's name but not a directory");
      continue;
    }
    if (type != AE_IFREG) return Refuse(name, path, TypeName(type));
    if (!seen.insert(file).second) return Refuse(name, path, "appears twice");
    std::optional<core::BundleFileBound> bound = core::BundleFileBoundOf(file);
    uint64_t size = 0;
    GT_ASSIGN_OR_RETURN(std::string data,
                        ReadMemberData(a.get(), name, path, bound ? &*bound : nullptr, total, size, limits));
    if (!bound) {
      out.other_members.push_back(file);
      continue;
    }
    out.files[file] = core::BundleFileFromBytes(std::move(data), size, *bound);
  }
  if (members == 0) {
    return core::MakeErrorCode(core::ErrorCode::kInvalidArgument, "{}: an empty archive, not a packed crash bundle",
                               name);
  }
  std::sort(out.other_members.begin(), out.other_members.end());
  return out;
}

core::Result<core::Bundle> ReadPackedBundleModel(const ByteSource& source, std::string_view name,
                                                 const PackedBundleLimits& limits) {
  GT_ASSIGN_OR_RETURN(PackedBundle packed, ReadPackedBundle(source, name, limits));
  return core::BundleFromFiles(std::string(name), std::move(packed.files));
}

}  // namespace gputriage::pack
