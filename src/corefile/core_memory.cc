#include "corefile/core_memory.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/byte_reader.h"
#include "core/scoped_fd.h"
#include "corefile/elf_image.h"

namespace gputriage::corefile {

struct CoreMemory::Source {
  std::vector<char> bytes;  // FromBytes
  core::ScopedFd fd;        // OpenFile
};

namespace {

// pread until `length` bytes, end of file or an error; returns the bytes read.
size_t PreadFully(int fd, uint8_t* out, size_t length, uint64_t offset) {
  size_t done = 0;
  while (done < length) {
    ssize_t got = pread(fd, out + done, length - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

// The paths of a core are untrusted: never let one make us read our own process or the
// kernel's pseudo files (/proc/self/mem) into a report.
bool IsReadableMappedFile(const std::string& path) {
  if (path.empty() || path.front() != '/') return false;
  for (std::string_view prefix : {"/proc/", "/sys/", "/dev/"}) {
    if (path.compare(0, prefix.size(), prefix) == 0) return false;
  }
  return true;
}

// Reads longer than this are cut: a caller asking for more from a dead process is a bug or an
// attacker-chosen length, and the result is allocated in one piece.
constexpr size_t kMaxReadBytes = 64u << 20;

}  // namespace

CoreMemory CoreMemory::Build(const internal::CoreImage& image, const CoreNotes& notes,
                             std::shared_ptr<const Source> source) {
  CoreMemory memory;
  memory.source_ = std::move(source);
  core::CoreTruncation truncation{image.file_size, image.file_size, 0};
  for (const GElf_Phdr& phdr : image.phdrs) {
    // Where the file should end: saturating, a damaged header must not wrap around.
    uint64_t end = core::CheckedAdd(phdr.p_offset, phdr.p_filesz).value_or(UINT64_MAX);
    if ((phdr.p_type == PT_LOAD || phdr.p_type == PT_NOTE) && phdr.p_filesz > 0 && end > image.file_size) {
      truncation.expected_bytes = std::max(truncation.expected_bytes, end);
      if (phdr.p_type == PT_LOAD) ++truncation.segments_cut;
    }
    if (phdr.p_type != PT_LOAD || phdr.p_memsz == 0) continue;
    Segment segment;
    segment.vaddr = phdr.p_vaddr;
    segment.memsz = phdr.p_memsz;
    segment.offset = phdr.p_offset;
    // A truncated core holds less than p_filesz promises; clip to what is there, and never
    // more than the segment's memory size.
    uint64_t available = phdr.p_offset < image.file_size ? image.file_size - phdr.p_offset : 0;
    segment.filesz = std::min({phdr.p_filesz, phdr.p_memsz, available});
    memory.segments_.push_back(segment);
  }
  std::stable_sort(memory.segments_.begin(), memory.segments_.end(),
                   [](const Segment& a, const Segment& b) { return a.vaddr < b.vaddr; });
  memory.files_ = notes.files;
  if (truncation.expected_bytes > image.file_size) memory.truncation_ = truncation;
  return memory;
}

bool CoreMemory::Mapped(uint64_t address) const {
  auto it = std::upper_bound(segments_.begin(), segments_.end(), address,
                             [](uint64_t a, const Segment& s) { return a < s.vaddr; });
  return it != segments_.begin() && address - std::prev(it)->vaddr < std::prev(it)->memsz;
}

core::Result<CoreMemory> CoreMemory::FromBytes(std::string_view bytes, const CoreNotes& notes,
                                               std::string_view source_name) {
  auto source = std::make_shared<Source>();
  source->bytes.assign(bytes.begin(), bytes.end());
  GT_ASSIGN_OR_RETURN(internal::CoreImage image,
                      internal::OpenCoreImage(source->bytes.data(), source->bytes.size(), source_name));
  return Build(image, notes, std::move(source));
}

core::Result<CoreMemory> CoreMemory::OpenFile(const std::string& path, const CoreNotes& notes) {
  uint64_t size = 0;
  auto source = std::make_shared<Source>();
  GT_ASSIGN_OR_RETURN(source->fd, internal::OpenRegularFile(path, &size));
  GT_ASSIGN_OR_RETURN(internal::CoreImage image, internal::OpenCoreFd(source->fd.get(), size, path));
  return Build(image, notes, std::move(source));
}

std::optional<std::vector<uint8_t>> CoreMemory::Read(uint64_t address, size_t length) const {
  length = std::min(length, kMaxReadBytes);
  // Never wrap around the end of the address space.
  length = static_cast<size_t>(std::min<uint64_t>(length, UINT64_MAX - address));
  if (length == 0) return std::nullopt;
  std::vector<uint8_t> out(length);
  size_t done = 0;
  while (done < length) {
    size_t got = ReadChunk(address + done, out.data() + done, length - done);
    if (got == 0) break;
    done += got;
  }
  if (done == 0) return std::nullopt;
  out.resize(done);
  return out;
}

size_t CoreMemory::ReadChunk(uint64_t address, uint8_t* out, size_t length) const {
  size_t got = ReadFromCore(address, out, length);
  if (got != 0) return got;
  return ReadFromMappedFile(address, out, length);
}

size_t CoreMemory::ReadFromCore(uint64_t address, uint8_t* out, size_t length) const {
  // The last segment starting at or below `address`; segments do not overlap in a sane core,
  // and in a damaged one any covering segment is as good as another.
  auto it = std::upper_bound(segments_.begin(), segments_.end(), address,
                             [](uint64_t a, const Segment& s) { return a < s.vaddr; });
  if (it == segments_.begin()) return 0;
  const Segment& segment = *std::prev(it);
  uint64_t delta = address - segment.vaddr;
  if (delta >= segment.filesz) return 0;
  size_t count = static_cast<size_t>(std::min<uint64_t>(length, segment.filesz - delta));
  uint64_t offset = segment.offset + delta;  // <= file size: filesz was clipped to it
  if (!source_->fd.valid()) {
    core::ByteReader core_bytes(std::string_view(source_->bytes.data(), source_->bytes.size()));
    auto bytes = core_bytes.Bytes(offset, count);
    if (!bytes) return 0;
    std::memcpy(out, bytes->data(), bytes->size());
    return bytes->size();
  }
  return PreadFully(source_->fd.get(), out, count, offset);
}

size_t CoreMemory::ReadFromMappedFile(uint64_t address, uint8_t* out, size_t length) const {
  for (const core::Mapping& mapping : files_) {
    if (address < mapping.start || address >= mapping.end || !IsReadableMappedFile(mapping.path)) {
      continue;
    }
    auto file_offset = core::CheckedAdd(mapping.file_offset, address - mapping.start);
    if (!file_offset || *file_offset > static_cast<uint64_t>(INT64_MAX)) return 0;
    core::ScopedFd fd(open(mapping.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    struct stat st;
    // Only regular files: a device (/dev/nvidia0 is in NT_FILE) can hang or have side effects.
    if (!fd.valid() || fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    size_t count = static_cast<size_t>(std::min<uint64_t>(length, mapping.end - address));
    return PreadFully(fd.get(), out, count, *file_offset);
  }
  return 0;
}

}  // namespace gputriage::corefile
