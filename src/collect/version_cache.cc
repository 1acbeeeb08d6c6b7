#include "collect/version_cache.h"

#include "core/file.h"
#include "core/fs.h"
#include "core/json_parse.h"
#include "core/model.h"

namespace gputriage::collect {

namespace {

constexpr int kFormat = 1;
constexpr size_t kMaxCacheBytes = 1u << 20;
constexpr size_t kMaxEntries = 512;  // far more programs than any PATH holds compilers

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
  return core::WriteFileAtomically(path_, text);
}

}  // namespace gputriage::collect
