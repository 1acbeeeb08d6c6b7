#include "pack/bundle_pack.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "core/file.h"
#include "core/fs.h"
#include "core/json_parse.h"
#include "core/redact.h"
#include "core/redact_job.h"
#include "core/scoped_fd.h"
#include "core/telemetry.h"

namespace gputriage::pack {
namespace {

constexpr size_t kFindingsMaxBytes = 16u << 20;
constexpr const char* kCoreReason =
    "a core file holds the process's raw memory, which cannot be redacted; left out (bundles pack --with-core "
    "includes it)";

std::string Pretty(const core::Json& json) {
  return json.dump(2, ' ', false, core::Json::error_handler_t::replace) + "\n";
}

// Every string value of `json` through RedactText (keys are the models' field names).
void RedactStrings(core::Json& json) {
  if (json.is_string()) {
    json = core::RedactText(json.get_ref<const std::string&>());
  } else if (json.is_array() || json.is_object()) {
    for (core::Json& child : json) RedactStrings(child);
  }
}

// A model's JSON, redacted once more string by string, as the file's text. `changed` says
// whether that last pass replaced anything.
std::string FinalText(core::Json json, const std::string& before, bool& changed) {
  RedactStrings(json);
  std::string text = Pretty(json);
  changed = changed || text != before;
  return text;
}

void RedactSnapshot(core::Snapshot& snapshot) {
  if (!snapshot.env || !snapshot.env->variables) return;
  for (auto& [name, value] : *snapshot.env->variables) value = core::RedactValue(name, value);
}

// The files of `dir` by kind: regular files, and everything else (links, FIFOs, directories).
struct DirListing {
  std::set<std::string> regular;
  std::vector<core::NotCollected> other;
};

core::Result<DirListing> ListDir(const std::string& dir) {
  core::ScopedFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return core::ErrnoError(errno, "{}", dir);
  DIR* d = ::fdopendir(::dup(fd.get()));
  if (d == nullptr) return core::ErrnoError(errno, "{}: cannot list", dir);
  DirListing out;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISREG(st.st_mode)) {
      out.regular.insert(name);
    } else {
      out.other.push_back(
          {name, S_ISLNK(st.st_mode) ? "a symbolic link (not followed)" : "not a regular file; left out"});
    }
  }
  ::closedir(d);
  return out;
}

// findings.json, parsed into core::Finding and written back; nullopt with a reason when unusable.
core::Result<std::string> FindingsText(const std::string& dir, bool& changed) {
  core::ScopedFd fd(::open((dir + "/findings.json").c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) return core::ErrnoError(errno, "findings.json");
  GT_ASSIGN_OR_RETURN(std::string bytes, core::ReadFd(fd.get(), "findings.json", kFindingsMaxBytes));
  GT_ASSIGN_OR_RETURN(core::Json json, core::ParseJson(bytes, "findings.json"));
  if (!json.is_object() || !json.contains("findings") || !json["findings"].is_array()) {
    return core::MakeError("findings.json: not an object with a findings array");
  }
  std::vector<core::Finding> findings;
  try {
    findings = json["findings"].get<std::vector<core::Finding>>();
  } catch (const std::exception& e) {
    return core::MakeError("findings.json: {}", e.what());
  }
  core::Json typed = {{"schema_version", json.value("schema_version", core::kFindingsSchemaVersion)},
                      {"findings", findings}};
  return FinalText(std::move(typed), bytes, changed);
}

}  // namespace

std::string DefaultPackPath(std::string_view bundle_dir) {
  std::filesystem::path p(bundle_dir);
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string() + ".tar.zst";
}

core::Result<RedactedBundle> RedactBundleForPack(const std::string& dir, bool with_core) {
  GT_ASSIGN_OR_RETURN(DirListing listing, ListDir(dir));
  GT_ASSIGN_OR_RETURN(core::BundleFileSet raw, core::ReadBundleFiles(dir));
  core::BundleFileSet files = raw;
  GT_ASSIGN_OR_RETURN(core::Bundle bundle, core::BundleFromFiles(dir, std::move(files)));
  core::RedactBundle(bundle);
  if (bundle.snapshot) RedactSnapshot(*bundle.snapshot);

  RedactedBundle out;
  std::map<std::string, std::string> texts;
  std::set<std::string> changed;
  std::map<std::string, std::string> problems;
  for (const core::NotCollected& p : bundle.problems) problems[p.item] = p.reason;
  auto add_json = [&](const std::string& name, core::Json json) {
    if (!raw[name].exists) return;
    if (problems.count(name)) {
      out.left_out.push_back({name, problems[name] + "; left out"});
      return;
    }
    bool diff = false;
    texts[name] = FinalText(std::move(json), raw[name].bytes, diff);
    if (diff) changed.insert(name);
  };
  auto add_text = [&](const std::string& name, const std::string& text) {
    if (!raw[name].exists) return;
    if (!raw[name].problem.empty() && raw[name].bytes.empty()) {
      out.left_out.push_back({name, raw[name].problem + "; left out"});
      return;
    }
    bool diff = false;
    texts[name] = core::RedactText(text, &diff);
    if (diff) changed.insert(name);
  };
  add_json("process.json", core::ToJson(bundle.process));
  if (bundle.snapshot) add_json("snapshot.json", core::ToJson(*bundle.snapshot));
  if (bundle.repeat) add_json("repeat.json", core::ToJson(*bundle.repeat));
  if (bundle.gpu_calls) add_json("gpu_calls.json", core::ToJson(*bundle.gpu_calls));
  if (bundle.escalation) add_json("escalation.json", core::ToJson(*bundle.escalation));
  if (bundle.libraries) add_json("libraries.json", core::ToJson(*bundle.libraries));
  if (bundle.collectives) add_json("collectives.json", core::ToJson(*bundle.collectives));
  add_text("stdout.tail", raw["stdout.tail"].bytes);
  add_text("stderr.tail", raw["stderr.tail"].bytes);
  add_text("kmsg.log", raw["kmsg.log"].bytes);
  if (raw["telemetry.csv"].exists) {
    // Numbers and throttle-reason names only: written back from the parsed samples, so nothing
    // but what the parser understood leaves (a line it skipped stays out, and is named).
    if (bundle.telemetry.empty() && problems.count("telemetry.csv")) {
      out.left_out.push_back({"telemetry.csv", problems["telemetry.csv"] + "; left out"});
    } else {
      std::string csv = core::TelemetryCsv(bundle.telemetry);
      if (csv != raw["telemetry.csv"].bytes) changed.insert("telemetry.csv");
      texts["telemetry.csv"] = std::move(csv);
    }
  }
  if (listing.regular.count("findings.json")) {
    bool diff = false;
    core::Result<std::string> findings = FindingsText(dir, diff);
    if (findings.ok()) {
      texts["findings.json"] = std::move(*findings);
      if (diff) changed.insert("findings.json");
    } else {
      out.left_out.push_back({"findings.json", findings.error().message + "; left out"});
    }
  }

  for (const std::string& name : listing.regular) {
    if (texts.count(name) || name == "manifest.json") continue;
    bool listed = std::any_of(out.left_out.begin(), out.left_out.end(),
                              [&](const core::NotCollected& n) { return n.item == name; });
    if (listed) continue;
    if (name == "core" || name == "core.zst") {
      out.cores.push_back(name);
      if (!with_core) out.left_out.push_back({name, kCoreReason});
      continue;
    }
    if (core::BundleFileBoundOf(name)) {
      auto problem = problems.find(name);
      out.left_out.push_back(
          {name, (problem != problems.end() ? problem->second : std::string("not usable")) + "; left out"});
      continue;
    }
    out.left_out.push_back({name, "not a file of the bundle layout; only files gputriage can redact are packed"});
  }
  for (const core::NotCollected& n : listing.other) out.left_out.push_back(n);
  std::sort(out.left_out.begin(), out.left_out.end(),
            [](const core::NotCollected& a, const core::NotCollected& b) { return a.item < b.item; });

  if (bundle.manifest && raw["manifest.json"].problem.empty()) {
    // The manifest says what the archive holds: a file left out is absent, and why.
    for (const core::NotCollected& n : out.left_out) {
      auto it = bundle.manifest->files.find(n.item);
      if (it == bundle.manifest->files.end() || !it->second.present.value_or(false)) continue;
      it->second.present = false;
      it->second.reason = "left out of the packed bundle: " + n.reason;
    }
    bool diff = false;
    texts["manifest.json"] = FinalText(core::ToJson(*bundle.manifest), raw["manifest.json"].bytes, diff);
    if (diff) changed.insert("manifest.json");
  } else if (raw["manifest.json"].exists) {
    out.left_out.push_back({"manifest.json", problems.count("manifest.json") ? problems["manifest.json"] : "unusable"});
  }
  for (auto& [name, text] : texts) out.files.emplace_back(name, std::move(text));
  out.changed.assign(changed.begin(), changed.end());
  return out;
}

namespace {

struct WriterFree {
  void operator()(archive* a) const { archive_write_free(a); }
};

struct EntryFree {
  void operator()(archive_entry* e) const { archive_entry_free(e); }
};

core::Error ArchiveError(archive* a, const std::string& path) {
  return core::MakeError("{}: cannot write the archive: {}", path,
                         archive_error_string(a) != nullptr ? archive_error_string(a) : "unknown libarchive error");
}

core::Result<void> WriteHeader(archive* a, const std::string& path, const std::string& name, mode_t type, uint64_t size,
                               time_t mtime) {
  std::unique_ptr<archive_entry, EntryFree> e(archive_entry_new());
  archive_entry_set_pathname(e.get(), name.c_str());
  archive_entry_set_filetype(e.get(), type);
  archive_entry_set_perm(e.get(), type == AE_IFDIR ? 0755 : 0644);
  archive_entry_set_size(e.get(), type == AE_IFDIR ? 0 : static_cast<la_int64_t>(size));
  archive_entry_set_uid(e.get(), 0);
  archive_entry_set_gid(e.get(), 0);
  archive_entry_set_mtime(e.get(), mtime, 0);
  if (archive_write_header(a, e.get()) != ARCHIVE_OK) return ArchiveError(a, path);
  return {};
}

core::Result<void> WriteData(archive* a, const std::string& path, const char* data, size_t size) {
  size_t done = 0;
  while (done < size) {
    la_ssize_t n = archive_write_data(a, data + done, size - done);
    if (n < 0) return ArchiveError(a, path);
    if (n == 0) return core::MakeError("{}: libarchive wrote nothing", path);
    done += static_cast<size_t>(n);
  }
  return {};
}

// Streams the core file `name` of `dir` into the archive (cores are many GB: never in memory).
core::Result<uint64_t> WriteCoreMember(archive* a, const std::string& path, const std::string& dir,
                                       const std::string& name, const std::string& member, time_t mtime) {
  std::string core_path = dir + "/" + name;
  core::ScopedFd fd(::open(core_path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) return core::ErrnoError(errno, "{}", core_path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return core::MakeError("{}: not a regular file", core_path);
  uint64_t size = static_cast<uint64_t>(st.st_size);
  GT_RETURN_IF_ERROR(WriteHeader(a, path, member, AE_IFREG, size, mtime));
  std::vector<char> buf(1u << 20);
  uint64_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd.get(), buf.data(), std::min<uint64_t>(buf.size(), size - done), static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return core::ErrnoError(errno, "{}: read failed", core_path);
    if (n == 0) return core::MakeError("{}: shrank from {} to {} bytes while packed", core_path, size, done);
    GT_RETURN_IF_ERROR(WriteData(a, path, buf.data(), static_cast<size_t>(n)));
    done += static_cast<uint64_t>(n);
  }
  return size;
}

// Publishes `temp` as `output`: without replacing an existing file unless `force`.
core::Result<void> Publish(const std::string& temp, const std::string& output, bool force) {
  if (force) {
    if (::rename(temp.c_str(), output.c_str()) != 0)
      return core::ErrnoError(errno, "{}: cannot rename into place", output);
    return {};
  }
  if (::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, output.c_str(), RENAME_NOREPLACE) == 0) return {};
  int err = errno;
  if (err == EEXIST) {
    return core::MakeErrorCode(core::ErrorCode::kInvalidArgument, "{}: already exists (--force replaces it)", output);
  }
  if (err != EINVAL && err != ENOSYS) return core::ErrnoError(err, "{}: cannot rename into place", output);
  // A file system without RENAME_NOREPLACE: link(2) refuses an existing name too.
  if (::link(temp.c_str(), output.c_str()) != 0) {
    if (errno == EEXIST) {
      return core::MakeErrorCode(core::ErrorCode::kInvalidArgument, "{}: already exists (--force replaces it)", output);
    }
    return core::ErrnoError(errno, "{}: cannot create", output);
  }
  ::unlink(temp.c_str());
  return {};
}

}  // namespace

core::Result<PackResult> PackBundle(const PackRequest& request) {
  std::string dir = request.bundle_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  PackResult result;
  result.output = request.output.empty() ? DefaultPackPath(dir) : request.output;
  // What is at the output path decides how it is written: nothing or a regular file, a temporary
  // file renamed into place (a regular file only with --force); a character device or a FIFO
  // (/dev/stdout, a pipe), written as a stream, never replaced; anything else (a symbolic link, a
  // directory, a socket, a block device) is never replaced, --force or not; a symbolic link the
  // user named is followed only to a character device or a FIFO.
  core::OutputPath output = core::ClassifyOutputPath(result.output);
  bool stream = output.kind == core::OutputPath::kStream;
  if (output.kind == core::OutputPath::kOther) {
    std::error_code ec;
    auto target = std::filesystem::read_symlink(result.output, ec);  // fails unless it is a link
    if (!ec) output.what += " to " + target.string();
    return core::MakeErrorCode(core::ErrorCode::kInvalidArgument,
                               "{}: {}, not a regular file: never replaced, --force or not (name a new file, or the "
                               "file itself)",
                               result.output, output.what);
  }
  if (output.kind == core::OutputPath::kRegular && !request.force) {
    return core::MakeErrorCode(core::ErrorCode::kInvalidArgument, "{}: already exists (--force replaces it)",
                               result.output);
  }
  struct stat dir_st {};
  if (::stat(dir.c_str(), &dir_st) != 0) return core::ErrnoError(errno, "{}", dir);
  if (!S_ISDIR(dir_st.st_mode)) {
    return core::MakeErrorCode(core::ErrorCode::kInvalidArgument, "{}: not a bundle directory", dir);
  }
  GT_ASSIGN_OR_RETURN(RedactedBundle redacted, RedactBundleForPack(dir, request.with_core));
  result.top = std::filesystem::path(dir).filename().string();
  result.left_out = redacted.left_out;
  time_t mtime = dir_st.st_mtime;

  std::string out_dir = std::filesystem::path(result.output).parent_path().string();
  if (out_dir.empty()) out_dir = ".";
  std::string temp;
  core::ScopedFd fd;
  if (stream) {
    fd.reset(::open(result.output.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC));
    if (!fd.valid()) return core::ErrnoError(errno, "{}: cannot open for writing", result.output);
  } else {
    temp = fmt::format("{}/.{}.tmp.XXXXXX", out_dir, std::filesystem::path(result.output).filename().string());
    fd.reset(::mkstemp(temp.data()));
    if (!fd.valid()) return core::ErrnoError(errno, "{}: cannot create a temporary file there", out_dir);
  }
  bool published = stream;  // a stream has no temporary file to remove
  struct RemoveTemp {
    const std::string& path;
    const bool& published;
    ~RemoveTemp() {
      if (!published) ::unlink(path.c_str());
    }
  } remove_temp{temp, published};

  std::unique_ptr<archive, WriterFree> a(archive_write_new());
  if (!a) return core::MakeError("{}: cannot create a libarchive writer", result.output);
  if (archive_write_add_filter_zstd(a.get()) != ARCHIVE_OK) return ArchiveError(a.get(), result.output);
  if (archive_write_set_format_pax_restricted(a.get()) != ARCHIVE_OK) return ArchiveError(a.get(), result.output);
  if (archive_write_open_fd(a.get(), fd.get()) != ARCHIVE_OK) return ArchiveError(a.get(), result.output);

  // Members in name order: the redacted files and, with --with-core, the core streamed as it is.
  std::set<std::string> changed(redacted.changed.begin(), redacted.changed.end());
  std::map<std::string, const std::string*> members;
  for (const auto& [name, text] : redacted.files) members[name] = &text;
  if (request.with_core) {
    for (const std::string& name : redacted.cores) members[name] = nullptr;
  }
  GT_RETURN_IF_ERROR(WriteHeader(a.get(), result.output, result.top + "/", AE_IFDIR, 0, mtime));
  for (const auto& [name, text] : members) {
    std::string member = result.top + "/" + name;
    if (text == nullptr) {
      GT_ASSIGN_OR_RETURN(uint64_t size, WriteCoreMember(a.get(), result.output, dir, name, member, mtime));
      result.members.push_back({member, size, false, false});
      result.core_included = true;
      continue;
    }
    GT_RETURN_IF_ERROR(WriteHeader(a.get(), result.output, member, AE_IFREG, text->size(), mtime));
    GT_RETURN_IF_ERROR(WriteData(a.get(), result.output, text->data(), text->size()));
    result.members.push_back({member, text->size(), true, changed.count(name) > 0});
  }
  if (archive_write_close(a.get()) != ARCHIVE_OK) return ArchiveError(a.get(), result.output);
  if (stream) {
    result.archive_bytes = static_cast<uint64_t>(archive_filter_bytes(a.get(), -1));
    return result;
  }
  if (::fsync(fd.get()) != 0) return core::ErrnoError(errno, "{}: fsync", temp);
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0) result.archive_bytes = static_cast<uint64_t>(st.st_size);
  GT_RETURN_IF_ERROR(Publish(temp, result.output, request.force));
  published = true;
  return result;
}

}  // namespace gputriage::pack
