#include "collect/version_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/file.h"
#include "core/fs.h"
#include "core/json_parse.h"
#include "core/model.h"

namespace gputriage::collect {

namespace {

constexpr int kFormat = 1;
constexpr size_t kMaxCacheBytes = 1u << 20;
constexpr size_t kMaxEntries = 512;  // far more programs than any PATH holds compilers

int64_t Nanoseconds(const struct timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec; }

core::Json IdentityJson(const FileIdentity& id) {
  return {{"device", id.device},
          {"inode", id.inode},
          {"size", id.size},
          {"mtime_ns", id.mtime_ns},
          {"ctime_ns", id.ctime_ns}};
}

std::optional<FileIdentity> IdentityFromJson(const core::Json& j) {
  if (!j.is_object()) return std::nullopt;
  for (const char* key : {"device", "inode", "size", "mtime_ns", "ctime_ns"}) {
    if (!j.contains(key) || !j[key].is_number_integer()) return std::nullopt;
  }
  return FileIdentity{j["device"].get<uint64_t>(), j["inode"].get<uint64_t>(), j["size"].get<int64_t>(),
                      j["mtime_ns"].get<int64_t>(), j["ctime_ns"].get<int64_t>()};
}

}  // namespace

std::optional<FileIdentity> IdentityOf(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileIdentity{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                      static_cast<int64_t>(st.st_size), Nanoseconds(st.st_mtim), Nanoseconds(st.st_ctim)};
}

VersionCache VersionCache::Load(const std::string& path) {
  VersionCache cache;
  cache.path_ = path;
  auto text = core::ReadFile(path, kMaxCacheBytes);
  if (!text.ok()) return cache;
  auto json = core::ParseJson(*text, path);
  if (!json.ok() || !json->is_object() || json->value("format", 0) != kFormat) return cache;
  auto programs = json->find("programs");
  if (programs == json->end() || !programs->is_object()) return cache;
  for (const auto& [program, entry] : programs->items()) {
    if (cache.entries_.size() >= kMaxEntries || !entry.is_object()) break;
    std::optional<FileIdentity> identity = IdentityFromJson(entry.value("identity", core::Json()));
    auto version = entry.find("version");
    auto line = entry.find("line");
    if (!identity || version == entry.end() || !version->is_string() || line == entry.end() || !line->is_string()) {
      continue;
    }
    cache.entries_[program] = Entry{*identity, ToolVersion{version->get<std::string>(), line->get<std::string>()}};
  }
  return cache;
}

std::optional<ToolVersion> VersionCache::Find(const std::string& program, const FileIdentity& identity) const {
  auto it = entries_.find(program);
  if (it == entries_.end() || !(it->second.identity == identity)) return std::nullopt;
  return it->second.version;
}

void VersionCache::Remember(const std::string& program, const FileIdentity& identity, const ToolVersion& version) {
  auto it = entries_.find(program);
  if (it != entries_.end() && it->second.identity == identity && it->second.version == version) return;
  if (it == entries_.end() && entries_.size() >= kMaxEntries) return;
  entries_[program] = Entry{identity, version};
  changed_ = true;
}

core::Result<void> VersionCache::Save() const {
  if (!changed_ || path_.empty()) return {};
  core::Json programs = core::Json::object();
  for (const auto& [program, entry] : entries_) {
    programs[program] = {
        {"identity", IdentityJson(entry.identity)}, {"version", entry.version.version}, {"line", entry.version.line}};
  }
  std::string text = core::Json{{"format", kFormat}, {"programs", std::move(programs)}}.dump(1) + "\n";
  size_t slash = path_.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    GT_RETURN_IF_ERROR(core::MakeDirectories(path_.substr(0, slash), 0700));
  }
  std::string temp = path_ + ".tmp." + std::to_string(::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return core::ErrnoError(errno, "{}", temp);
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int saved = errno;
      ::close(fd);
      ::unlink(temp.c_str());
      return core::ErrnoError(saved, "{}: write failed", temp);
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  if (::rename(temp.c_str(), path_.c_str()) != 0) {
    int saved = errno;
    ::unlink(temp.c_str());
    return core::ErrnoError(saved, "{}: rename to {} failed", temp, path_);
  }
  return {};
}

}  // namespace gputriage::collect
