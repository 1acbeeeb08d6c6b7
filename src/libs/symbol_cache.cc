#include "libs/symbol_cache.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/file.h"
#include "core/fs.h"
#include "core/json_parse.h"
#include "core/model.h"

namespace gputriage::libs {
namespace {

// Raised whenever UndefinedSymbols or the key changes what they mean: an older file is then empty.
constexpr int kSymbolCacheFormat = 1;
constexpr size_t kMaxSymbolCacheBytes = 8u << 20;
constexpr size_t kMaxClosures = 256;             // doctor checks ~55 roots on a machine with PyTorch
constexpr size_t kMaxRememberedProblems = 2000;  // a broken closure's full list is read anew

// FNV-1a, 64 bits: the key names a closure among a few hundred, not an adversary's input.
std::string Fingerprint(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return fmt::format("{:016x}-{}", h, text.size());
}

std::optional<std::string> OptionalString(const core::Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

core::Json UndefinedJson(const core::UndefinedSymbol& u) {
  core::Json j = {{"symbol", u.symbol}, {"needed_by", u.needed_by}};
  if (u.demangled) j["demangled"] = *u.demangled;
  if (u.version) j["version"] = *u.version;
  if (u.version_from) j["version_from"] = *u.version_from;
  return j;
}

std::optional<SymbolCheckCache::Result> ResultFromJson(const core::Json& j) {
  if (!j.is_object()) return std::nullopt;
  auto undefined = j.find("undefined_symbols");
  auto errors = j.find("errors");
  if (undefined == j.end() || !undefined->is_array() || errors == j.end() || !errors->is_array()) return std::nullopt;
  SymbolCheckCache::Result r;
  for (const core::Json& u : *undefined) {
    if (!u.is_object()) return std::nullopt;
    std::optional<std::string> symbol = OptionalString(u, "symbol");
    std::optional<std::string> needed_by = OptionalString(u, "needed_by");
    if (!symbol || !needed_by) return std::nullopt;
    r.undefined.push_back({*symbol, OptionalString(u, "demangled"), OptionalString(u, "version"), *needed_by,
                           OptionalString(u, "version_from")});
  }
  for (const core::Json& e : *errors) {
    if (!e.is_object()) return std::nullopt;
    std::optional<std::string> path = OptionalString(e, "path");
    std::optional<std::string> message = OptionalString(e, "message");
    if (!path || !message) return std::nullopt;
    r.errors.push_back({*path, *message});
  }
  return r;
}

}  // namespace

bool SymbolCheckCache::Result::operator==(const Result& other) const {
  auto same_undefined = [](const core::UndefinedSymbol& a, const core::UndefinedSymbol& b) {
    return a.symbol == b.symbol && a.demangled == b.demangled && a.version == b.version && a.needed_by == b.needed_by &&
           a.version_from == b.version_from;
  };
  auto same_error = [](const core::LibraryError& a, const core::LibraryError& b) {
    return a.path == b.path && a.message == b.message;
  };
  return std::equal(undefined.begin(), undefined.end(), other.undefined.begin(), other.undefined.end(),
                    same_undefined) &&
         std::equal(errors.begin(), errors.end(), other.errors.begin(), other.errors.end(), same_error);
}

SymbolCheckCache::SymbolCheckCache(std::string path) : path_(std::move(path)) {
  auto text = core::ReadFile(path_, kMaxSymbolCacheBytes);
  if (!text.ok()) return;
  auto json = core::ParseJson(*text, path_);
  if (!json.ok() || !json->is_object() || json->value("format", 0) != kSymbolCacheFormat) return;
  auto closures = json->find("closures");
  if (closures == json->end() || !closures->is_object()) return;
  for (const auto& [key, entry] : closures->items()) {
    if (entries_.size() >= kMaxClosures) break;
    if (std::optional<Result> r = ResultFromJson(entry)) entries_[key] = Entry{std::move(*r)};
  }
}

std::optional<std::string> SymbolCheckCache::KeyOf(const Closure& closure) {
  std::string text;
  for (const ResolvedObject& o : closure.objects) {
    std::optional<core::FileIdentity> id = core::IdentityOf(*o.entry.path);
    if (!id) return std::nullopt;
    text += fmt::format("{}\n{}\n{} {} {} {} {}\n", *o.entry.path, o.entry.realpath.value_or(""), id->device, id->inode,
                        id->size, id->mtime_ns, id->ctime_ns);
  }
  if (text.empty()) return std::nullopt;
  return Fingerprint(text);
}

std::optional<SymbolCheckCache::Result> SymbolCheckCache::Find(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  it->second.used = true;  // kept ahead of those this run did not use when the file is written
  return it->second.result;
}

void SymbolCheckCache::Remember(const std::string& key, Result result) {
  if (result.undefined.size() + result.errors.size() > kMaxRememberedProblems) return;
  std::lock_guard<std::mutex> lock(mutex_);
  Entry& e = entries_[key];
  e.result = std::move(result);
  e.used = true;
  changed_ = true;
}

core::Result<void> SymbolCheckCache::Save() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!changed_ || path_.empty()) return {};
  core::Json closures = core::Json::object();
  size_t kept = 0;
  for (bool used : {true, false}) {
    for (const auto& [key, entry] : entries_) {
      if (entry.used != used || kept >= kMaxClosures) continue;
      core::Json undefined = core::Json::array();
      for (const core::UndefinedSymbol& u : entry.result.undefined) undefined.push_back(UndefinedJson(u));
      core::Json errors = core::Json::array();
      for (const core::LibraryError& e : entry.result.errors)
        errors.push_back({{"path", e.path}, {"message", e.message}});
      closures[key] = {{"undefined_symbols", std::move(undefined)}, {"errors", std::move(errors)}};
      ++kept;
    }
  }
  std::string text = core::Json{{"format", kSymbolCacheFormat}, {"closures", std::move(closures)}}.dump() + "\n";
  return core::WriteFileAtomically(path_, text);
}

}  // namespace gputriage::libs
