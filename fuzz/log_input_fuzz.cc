// Fuzz target for the bounded log input: the bytes are written to a pipe-like memory file and
// read as `analyze` reads a log: a sniffed prefix of the first byte's length (as the core-file
// sniffing leaves it), then the rest from the descriptor, decompressed by magic, refused when not
// text, with the tail kept. Checks the bounds: the tail is never longer than asked, nothing is
// handed over from a refused input, and every decoded byte is counted once.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/file.h"
#include "kb/log_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  size_t prefix_size = data[0] % 32;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  prefix_size = std::min(prefix_size, bytes.size());
  int fd = memfd_create("log_input_fuzz", MFD_CLOEXEC);
  if (fd < 0) return 0;
  std::string_view rest = bytes.substr(prefix_size);
  if (!rest.empty() && write(fd, rest.data(), rest.size()) != static_cast<ssize_t>(rest.size())) {
    close(fd);
    return 0;
  }
  lseek(fd, 0, SEEK_SET);
  gputriage::kb::ReadOptions options;
  options.refuse_binary = true;
  options.keep_tail_bytes = 100;
  options.max_line_bytes = 256;
  options.chunk_bytes = 64 + data[0];
  uint64_t lines = 0;
  uint64_t line_bytes = 0;
  auto stats = gputriage::kb::ReadLinesFromFd(
      fd, bytes.substr(0, prefix_size), "fuzz",
      [&](std::string_view line, uint64_t number) {
        if (number != ++lines || line.size() > options.max_line_bytes) __builtin_trap();
        line_bytes += line.size();
      },
      options);
  if (stats.ok()) {
    if (stats->tail.size() > options.keep_tail_bytes || stats->lines != lines) __builtin_trap();
    if (stats->compression == "none" && stats->bytes != bytes.size()) __builtin_trap();
  } else if (lines != 0 && stats.error().code == gputriage::core::ErrorCode::kInvalidArgument) {
    __builtin_trap();  // a refused input handed lines over
  }
  // The bounded whole-file readers over the same bytes.
  lseek(fd, 0, SEEK_SET);
  size_t limit = rest.size() / 2;
  auto whole = gputriage::core::ReadFd(fd, "fuzz", limit);
  if (whole.ok() && whole->size() > limit) __builtin_trap();
  auto tail = gputriage::core::ReadFileTail("/proc/self/fd/" + std::to_string(fd), limit);
  if (tail.ok() && *tail != rest.substr(rest.size() - std::min(limit, rest.size()))) __builtin_trap();
  close(fd);
  return 0;
}
