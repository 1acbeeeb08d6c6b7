#include "core/bundle.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/json_fields.h"

namespace gputriage::core {
namespace {

// What reading one file of a bundle gave: its bytes, or why there are none.
struct FileRead {
  bool exists = false;
  std::string bytes;
  std::string problem;  // "" when read
};

// Opens `name` inside the directory `dir_fd` as a regular file without following a symbolic
// link, and reads at most `max_bytes`: the first ones, or the last ones when `tail`.
FileRead ReadBundleFile(int dir_fd, const std::string& name, size_t max_bytes, bool tail) {
  FileRead out;
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below anyway.
  int fd = ::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno == ENOENT) return out;
    out.exists = true;
    out.problem = errno == ELOOP ? "a symbolic link (not followed)" : std::strerror(errno);
    return out;
  }
  out.exists = true;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    out.problem = "not a regular file";
    ::close(fd);
    return out;
  }
  uint64_t size = static_cast<uint64_t>(st.st_size);
  uint64_t start = 0;
  if (size > max_bytes) {
    if (!tail) {
      out.problem = fmt::format("{} bytes, more than the {} a bundle file may have", size, max_bytes);
      ::close(fd);
      return out;
    }
    start = size - max_bytes;
  }
  out.bytes.resize(static_cast<size_t>(size - start));
  size_t done = 0;
  while (done < out.bytes.size()) {
    ssize_t n = ::pread(fd, out.bytes.data() + done, out.bytes.size() - done, static_cast<off_t>(start + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // shrank while reading: keep what was there
    done += static_cast<size_t>(n);
  }
  out.bytes.resize(done);
  ::close(fd);
  return out;
}

// A JSON file of the bundle, parsed; nullopt (with a problem noted) when absent or damaged.
std::optional<Json> ReadBundleJson(int dir_fd, const std::string& name, Bundle& bundle) {
  FileRead read = ReadBundleFile(dir_fd, name, kBundleJsonMaxBytes, false);
  if (!read.exists) return std::nullopt;
  if (!read.problem.empty()) {
    bundle.problems.push_back({name, read.problem});
    return std::nullopt;
  }
  Json json = Json::parse(read.bytes, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    bundle.problems.push_back({name, "not valid JSON"});
    return std::nullopt;
  }
  return json;
}

std::string ReadBundleText(int dir_fd, const std::string& name, size_t max_bytes, Bundle& bundle) {
  FileRead read = ReadBundleFile(dir_fd, name, max_bytes, true);
  if (!read.problem.empty()) bundle.problems.push_back({name, read.problem});
  return std::move(read.bytes);
}

}  // namespace

bool BundleManifest::Has(const std::string& file) const {
  auto it = files.find(file);
  return it != files.end() && it->second.present.value_or(false);
}

Json ToJson(const BundleManifest& manifest) { return json_fields::WriteValue(manifest); }
Json ToJson(const RepeatStats& repeat) { return json_fields::WriteValue(repeat); }

Result<Bundle> ReadBundle(const std::string& dir) {
  int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return MakeError("{}: {}", dir, std::strerror(errno));
  Bundle bundle;
  bundle.dir = dir;
  FileRead process = ReadBundleFile(dir_fd, "process.json", kBundleJsonMaxBytes, false);
  if (!process.exists || !process.problem.empty()) {
    ::close(dir_fd);
    if (!process.exists) return MakeError("{}: not a crash bundle (no process.json)", dir);
    return MakeError("{}/process.json: {}", dir, process.problem);
  }
  Json process_json = Json::parse(process.bytes, nullptr, /*allow_exceptions=*/false);
  if (process_json.is_discarded()) {
    ::close(dir_fd);
    return MakeError("{}/process.json: not valid JSON", dir);
  }
  bundle.process = ProcessFileFromJson(process_json);
  if (std::optional<Json> manifest = ReadBundleJson(dir_fd, "manifest.json", bundle)) {
    BundleManifest typed;
    json_fields::ReadValue(*manifest, typed);
    bundle.manifest = std::move(typed);
  }
  if (std::optional<Json> snapshot = ReadBundleJson(dir_fd, "snapshot.json", bundle)) {
    Result<Snapshot> typed = SnapshotFromJson(*snapshot, dir + "/snapshot.json");
    if (typed.ok()) {
      bundle.snapshot = std::move(*typed);
    } else {
      bundle.problems.push_back({"snapshot.json", typed.error().message});
    }
  }
  if (std::optional<Json> repeat = ReadBundleJson(dir_fd, "repeat.json", bundle)) {
    RepeatStats typed;
    json_fields::ReadValue(*repeat, typed);
    if (typed.runs > 0) bundle.repeat = typed;
  }
  bundle.stdout_tail = ReadBundleText(dir_fd, "stdout.tail", kBundleTailMaxBytes, bundle);
  bundle.stderr_tail = ReadBundleText(dir_fd, "stderr.tail", kBundleTailMaxBytes, bundle);
  bundle.kmsg = ReadBundleText(dir_fd, "kmsg.log", kBundleKmsgMaxBytes, bundle);
  ::close(dir_fd);
  return bundle;
}

}  // namespace gputriage::core
