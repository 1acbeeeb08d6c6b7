#include "pack/zstd_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include <fmt/format.h>

namespace gputriage::pack {
namespace {

struct DctxFree {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};
struct CctxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

core::Result<size_t> ReadSome(int fd, char* buf, size_t n, std::string_view name) {
  while (true) {
    ssize_t r = ::read(fd, buf, n);
    if (r >= 0) return static_cast<size_t>(r);
    if (errno != EINTR) return core::ErrnoError(errno, "{}: read failed", name);
  }
}

core::Result<void> WriteAll(int fd, const char* data, size_t size, std::string_view name) {
  size_t done = 0;
  while (done < size) {
    ssize_t w = ::write(fd, data + done, size - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return core::ErrnoError(errno, "{}: write failed", name);
    done += static_cast<size_t>(w);
  }
  return {};
}

}  // namespace

ByteSource PrefixThenFd(std::string prefix, int fd, std::string name) {
  auto offset = std::make_shared<size_t>(0);
  auto held = std::make_shared<std::string>(std::move(prefix));
  return [offset, held, fd, name = std::move(name)](char* buf, size_t n) -> core::Result<size_t> {
    if (*offset < held->size()) {
      size_t take = std::min(n, held->size() - *offset);
      std::memcpy(buf, held->data() + *offset, take);
      *offset += take;
      return take;
    }
    return ReadSome(fd, buf, n, name);
  };
}

ByteSource FromMemory(std::string_view bytes) {
  auto offset = std::make_shared<size_t>(0);
  return [offset, bytes](char* buf, size_t n) -> core::Result<size_t> {
    size_t take = std::min(n, bytes.size() - *offset);
    std::memcpy(buf, bytes.data() + *offset, take);
    *offset += take;
    return take;
  };
}

bool HasZstdMagic(std::string_view bytes) {
  return bytes.size() >= 4 && static_cast<unsigned char>(bytes[0]) == 0x28 &&
         static_cast<unsigned char>(bytes[1]) == 0xb5 && static_cast<unsigned char>(bytes[2]) == 0x2f &&
         static_cast<unsigned char>(bytes[3]) == 0xfd;
}

std::string PeekZstd(std::string_view compressed, size_t want) {
  if (!HasZstdMagic(compressed) || want == 0) return "";
  std::unique_ptr<ZSTD_DCtx, DctxFree> dctx(ZSTD_createDCtx());
  if (!dctx) return "";
  std::string out(want, '\0');
  ZSTD_inBuffer in{compressed.data(), compressed.size(), 0};
  ZSTD_outBuffer ob{out.data(), out.size(), 0};
  while (ob.pos < ob.size && in.pos < in.size) {
    size_t r = ZSTD_decompressStream(dctx.get(), &ob, &in);
    if (ZSTD_isError(r)) break;
    if (r == 0 && in.pos == in.size) break;
  }
  out.resize(ob.pos);
  return out;
}

core::Result<ZstdCopyStats> CompressZstd(int in_fd, int out_fd, int level, std::string_view in_name,
                                         std::string_view out_name) {
  std::unique_ptr<ZSTD_CCtx, CctxFree> cctx(ZSTD_createCCtx());
  if (!cctx) return core::MakeError("{}: cannot create a zstd compression context", out_name);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);
  struct stat st {};
  if (::fstat(in_fd, &st) == 0 && S_ISREG(st.st_mode)) {
    ZSTD_CCtx_setPledgedSrcSize(cctx.get(), static_cast<unsigned long long>(st.st_size));
  }
  std::vector<char> in_buf(ZSTD_CStreamInSize());
  std::vector<char> out_buf(ZSTD_CStreamOutSize());
  ZstdCopyStats stats;
  while (true) {
    GT_ASSIGN_OR_RETURN(size_t got, ReadSome(in_fd, in_buf.data(), in_buf.size(), in_name));
    stats.in_bytes += got;
    ZSTD_EndDirective mode = got == 0 ? ZSTD_e_end : ZSTD_e_continue;
    ZSTD_inBuffer in{in_buf.data(), got, 0};
    bool done = false;
    while (!done) {
      ZSTD_outBuffer out{out_buf.data(), out_buf.size(), 0};
      size_t left = ZSTD_compressStream2(cctx.get(), &out, &in, mode);
      if (ZSTD_isError(left)) {
        // A regular file that grew or shrank while read breaks the pledged size.
        return core::MakeError("{}: zstd compression of {} failed after {} bytes: {}", out_name, in_name,
                               stats.in_bytes, ZSTD_getErrorName(left));
      }
      GT_RETURN_IF_ERROR(WriteAll(out_fd, out_buf.data(), out.pos, out_name));
      stats.out_bytes += out.pos;
      done = mode == ZSTD_e_end ? left == 0 : in.pos == in.size;
    }
    if (got == 0) return stats;
  }
}

core::Result<ZstdCopyStats> DecompressZstd(const ByteSource& source, int out_fd, uint64_t max_out_bytes,
                                           std::string_view name, std::string_view out_name,
                                           const ExtentOf& extent_of) {
  std::unique_ptr<ZSTD_DCtx, DctxFree> dctx(ZSTD_createDCtx());
  if (!dctx) return core::MakeError("{}: cannot create a zstd decompression context", name);
  std::vector<char> in_buf(ZSTD_DStreamInSize());
  std::vector<char> out_buf(ZSTD_DStreamOutSize());
  ZstdCopyStats stats;
  std::string head;                // the first kExtentHeadBytes, kept for extent_of
  bool judged = !extent_of;        // extent_of has been asked
  uint64_t limit = max_out_bytes;  // the extent, once judged
  bool extent_limited = false;
  // Writes one piece of output; false once the extent is reached (nothing more is wanted).
  auto emit = [&](const char* data, size_t n) -> core::Result<bool> {
    if (!judged) {
      head.append(data, std::min(n, kExtentHeadBytes - head.size()));
      if (head.size() >= kExtentHeadBytes) {
        judged = true;
        if (std::optional<uint64_t> extent = extent_of(head); extent && *extent < limit) {
          limit = *extent;
          extent_limited = true;
        }
      }
    }
    if (extent_limited && stats.out_bytes + n >= limit) {
      // The extent may end before what was written while the head was gathered: nothing more then.
      if (limit > stats.out_bytes) {
        GT_RETURN_IF_ERROR(WriteAll(out_fd, data, static_cast<size_t>(limit - stats.out_bytes), out_name));
        stats.out_bytes = limit;
      }
      stats.stopped_at_extent = true;
      return false;
    }
    if (n > max_out_bytes - std::min<uint64_t>(stats.out_bytes, max_out_bytes)) {
      return core::MakeErrorCode(core::ErrorCode::kInvalidArgument,
                                 "{}: decompresses to more than {} bytes, the most gputriage writes out of one "
                                 "compressed input",
                                 name, max_out_bytes);
    }
    GT_RETURN_IF_ERROR(WriteAll(out_fd, data, n, out_name));
    stats.out_bytes += n;
    return true;
  };
  size_t last = 1;  // what the last call still wanted: 0 when a frame was complete
  bool any_input = false;
  while (true) {
    GT_ASSIGN_OR_RETURN(size_t got, source(in_buf.data(), in_buf.size()));
    if (got == 0) break;
    if (!any_input && !HasZstdMagic(std::string_view(in_buf.data(), got)) && got >= 4) {
      return core::MakeErrorCode(core::ErrorCode::kInvalidArgument, "{}: not zstd data (no zstd frame magic)", name);
    }
    any_input = true;
    stats.in_bytes += got;
    ZSTD_inBuffer in{in_buf.data(), got, 0};
    while (in.pos < in.size) {
      ZSTD_outBuffer out{out_buf.data(), out_buf.size(), 0};
      last = ZSTD_decompressStream(dctx.get(), &out, &in);
      if (ZSTD_isError(last)) {
        return core::MakeErrorCode(core::ErrorCode::kInvalidArgument,
                                   "{}: corrupt zstd data after {} bytes of output: {}", name, stats.out_bytes,
                                   ZSTD_getErrorName(last));
      }
      GT_ASSIGN_OR_RETURN(bool more, emit(out_buf.data(), out.pos));
      if (!more) return stats;
    }
    // Flush what the decoder holds once the input buffer is consumed.
    while (last != 0) {
      ZSTD_inBuffer empty{nullptr, 0, 0};
      ZSTD_outBuffer out{out_buf.data(), out_buf.size(), 0};
      last = ZSTD_decompressStream(dctx.get(), &out, &empty);
      if (ZSTD_isError(last)) {
        return core::MakeErrorCode(core::ErrorCode::kInvalidArgument,
                                   "{}: corrupt zstd data after {} bytes of output: {}", name, stats.out_bytes,
                                   ZSTD_getErrorName(last));
      }
      if (out.pos == 0) break;
      GT_ASSIGN_OR_RETURN(bool more, emit(out_buf.data(), out.pos));
      if (!more) return stats;
    }
  }
  if (!any_input) return core::MakeErrorCode(core::ErrorCode::kInvalidArgument, "{}: empty, not zstd data", name);
  if (last != 0) {
    return core::MakeErrorCode(core::ErrorCode::kInvalidArgument,
                               "{}: truncated zstd stream after {} bytes of output ({} compressed bytes read)", name,
                               stats.out_bytes, stats.in_bytes);
  }
  return stats;
}

core::Result<PrivateTempDir> PrivateTempDir::Create(std::string_view prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string parent = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  std::string templ = fmt::format("{}/{}XXXXXX", parent, prefix);
  if (::mkdtemp(templ.data()) == nullptr) {
    return core::ErrnoError(errno, "{}: cannot create a private temporary directory there", parent);
  }
  return PrivateTempDir(std::move(templ));
}

PrivateTempDir::~PrivateTempDir() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace gputriage::pack
