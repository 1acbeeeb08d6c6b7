#include "core/bundle.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/json_fields.h"
#include "core/json_parse.h"
#include "core/scoped_fd.h"

namespace gputriage::core {
namespace {

// Opens `name` inside the directory `dir_fd` as a regular file without following a symbolic
// link, and reads at most `max_bytes`: the first ones, or the last ones when `tail`.
BundleFileBytes ReadBundleFile(int dir_fd, const std::string& name, size_t max_bytes, bool tail) {
  BundleFileBytes out;
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below anyway.
  ScopedFd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) {
    if (errno == ENOENT) return out;
    out.exists = true;
    out.problem = errno == ELOOP ? "a symbolic link (not followed)" : std::strerror(errno);
    return out;
  }
  out.exists = true;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    out.problem = "not a regular file";
    return out;
  }
  uint64_t size = static_cast<uint64_t>(st.st_size);
  uint64_t start = 0;
  if (size > max_bytes) {
    if (!tail) {
      out.problem = fmt::format("{} bytes, more than the {} gputriage reads of it", size, max_bytes);
      return out;
    }
    start = size - max_bytes;
    out.problem = fmt::format("{} bytes, more than the {} gputriage reads of it; its last {} bytes are used", size,
                              max_bytes, max_bytes);
  }
  out.bytes.resize(static_cast<size_t>(size - start));
  size_t done = 0;
  while (done < out.bytes.size()) {
    ssize_t n = ::pread(fd.get(), out.bytes.data() + done, out.bytes.size() - done, static_cast<off_t>(start + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // shrank while reading: keep what was there
    done += static_cast<size_t>(n);
  }
  out.bytes.resize(done);
  return out;
}

struct BundleFileSpec {
  const char* name;
  size_t max_bytes;
  bool tail;
};

constexpr BundleFileSpec kBundleFiles[] = {
    {"process.json", kBundleProcessMaxBytes, false},
    {"manifest.json", kBundleManifestMaxBytes, false},
    {"snapshot.json", kSnapshotMaxBytes, false},
    {"repeat.json", kBundleRepeatMaxBytes, false},
    {"stdout.tail", kBundleTailMaxBytes, true},
    {"stderr.tail", kBundleTailMaxBytes, true},
    {"kmsg.log", kBundleKmsgMaxBytes, true},
    {"gpu_calls.json", kBundleGpuCallsMaxBytes, false},
    {"escalation.json", kBundleEscalationMaxBytes, false},
    {"libraries.json", kBundleLibrariesMaxBytes, false},
    {"collectives.json", kBundleCollectivesMaxBytes, false},
    {"telemetry.csv", kBundleTelemetryMaxBytes, true},
};

// A JSON file of the bundle, parsed; nullopt (with a problem noted) when absent or damaged.
std::optional<Json> BundleJson(const BundleFileSet& files, const std::string& name, Bundle& bundle) {
  auto it = files.find(name);
  if (it == files.end() || !it->second.exists) return std::nullopt;
  if (!it->second.problem.empty()) {
    bundle.problems.push_back({name, it->second.problem});
    return std::nullopt;
  }
  Result<Json> json = ParseJson(it->second.bytes, name);
  if (!json.ok()) {
    bundle.problems.push_back({name, json.error().message.substr(name.size() + 2)});
    return std::nullopt;
  }
  if (!json->is_object()) {
    bundle.problems.push_back({name, fmt::format("a JSON {}, not an object", json->type_name())});
    return std::nullopt;
  }
  return std::move(*json);
}

std::string BundleText(BundleFileSet& files, const std::string& name, Bundle& bundle) {
  auto it = files.find(name);
  if (it == files.end()) return "";
  if (!it->second.problem.empty()) bundle.problems.push_back({name, it->second.problem});
  return std::move(it->second.bytes);
}

// kmsg.log read from its end starts inside a record: that partial line is dropped.
std::string WholeRecords(std::string kmsg, bool cut) {
  if (!cut) return kmsg;
  size_t nl = kmsg.find('\n');
  return nl == std::string::npos ? std::string() : kmsg.substr(nl + 1);
}

}  // namespace

std::optional<BundleFileBound> BundleFileBoundOf(std::string_view name) {
  for (const BundleFileSpec& spec : kBundleFiles) {
    if (name == spec.name) return BundleFileBound{.max_bytes = spec.max_bytes, .tail = spec.tail};
  }
  return std::nullopt;
}

BundleFileBytes BundleFileFromBytes(std::string bytes, uint64_t size, const BundleFileBound& bound) {
  BundleFileBytes out;
  out.exists = true;
  if (size <= bound.max_bytes) {
    out.bytes = std::move(bytes);
    return out;
  }
  out.problem = fmt::format("{} bytes, more than the {} gputriage reads of it", size, bound.max_bytes);
  if (!bound.tail) return out;
  out.problem += fmt::format("; its last {} bytes are used", bound.max_bytes);
  out.bytes = bytes.size() > bound.max_bytes ? bytes.substr(bytes.size() - bound.max_bytes) : std::move(bytes);
  return out;
}

bool BundleManifest::Has(const std::string& file) const {
  auto it = files.find(file);
  return it != files.end() && it->second.present.value_or(false);
}

Json ToJson(const BundleManifest& manifest) { return json_fields::WriteValue(manifest); }
Json ToJson(const RepeatStats& repeat) { return json_fields::WriteValue(repeat); }

Result<BundleFileSet> ReadBundleFiles(const std::string& dir) {
  ScopedFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd.valid()) return MakeError("{}: {}", dir, std::strerror(errno));
  BundleFileSet files;
  for (const BundleFileSpec& spec : kBundleFiles) {
    files[spec.name] = ReadBundleFile(dir_fd.get(), spec.name, spec.max_bytes, spec.tail);
  }
  return files;
}

Result<Bundle> BundleFromFiles(const std::string& dir, BundleFileSet files) {
  Bundle bundle;
  bundle.dir = dir;
  const BundleFileBytes& process = files["process.json"];
  // A bundle is known by its process file or its manifest. One that lost its process file (a
  // partial copy) is read for what it has, the loss named among its problems; it was refused
  // whole before. A process file that is there but damaged is still an error naming it.
  if (!process.exists && !files["manifest.json"].exists) {
    return MakeError("{}: not a crash bundle (neither process.json nor manifest.json)", dir);
  }
  if (!process.exists) {
    bundle.problems.push_back(
        {"process.json", "missing: the process's signal, threads and stacks are not in this bundle"});
  } else {
    if (!process.problem.empty()) return MakeError("{}/process.json: {}", dir, process.problem);
    GT_ASSIGN_OR_RETURN(Json process_json, ParseJson(process.bytes, dir + "/process.json"));
    if (!process_json.is_object()) {
      return MakeError("{}/process.json: a JSON {}, not an object", dir, process_json.type_name());
    }
    bundle.process = ProcessFileFromJson(process_json);
  }
  if (std::optional<Json> manifest = BundleJson(files, "manifest.json", bundle)) {
    BundleManifest typed;
    json_fields::ReadValue(*manifest, typed);
    bundle.manifest = std::move(typed);
  }
  if (std::optional<Json> snapshot = BundleJson(files, "snapshot.json", bundle)) {
    Result<Snapshot> typed = SnapshotFromJson(*snapshot, dir + "/snapshot.json");
    if (typed.ok()) {
      bundle.snapshot = std::move(*typed);
    } else {
      bundle.problems.push_back({"snapshot.json", typed.error().message});
    }
  }
  if (std::optional<Json> repeat = BundleJson(files, "repeat.json", bundle)) {
    RepeatStats typed;
    json_fields::ReadValue(*repeat, typed);
    if (typed.runs > 0) bundle.repeat = typed;
  }
  if (std::optional<Json> gpu_calls = BundleJson(files, "gpu_calls.json", bundle)) {
    bundle.gpu_calls = GpuCallsFromJson(*gpu_calls);
  }
  if (std::optional<Json> escalation = BundleJson(files, "escalation.json", bundle)) {
    bundle.escalation = EscalationFromJson(*escalation);
  }
  if (std::optional<Json> libraries = BundleJson(files, "libraries.json", bundle)) {
    bundle.libraries = LibraryReportFromJson(*libraries);
  }
  if (std::optional<Json> collectives = BundleJson(files, "collectives.json", bundle)) {
    bundle.collectives = CollectiveReportFromJson(*collectives);
  }
  bundle.stdout_tail = BundleText(files, "stdout.tail", bundle);
  bundle.stderr_tail = BundleText(files, "stderr.tail", bundle);
  if (auto it = files.find("telemetry.csv"); it != files.end() && it->second.exists) {
    std::string text = BundleText(files, "telemetry.csv", bundle);
    // Read from its end: the header is gone and the first line is cut; put the header back.
    if (!it->second.problem.empty()) {
      size_t nl = text.find('\n');
      text = std::string(kTelemetryCsvColumns) + "\n" + (nl == std::string::npos ? "" : text.substr(nl + 1));
    }
    Result<TelemetryCsvContents> csv = ParseTelemetryCsv(text, "run");
    if (!csv.ok()) {
      bundle.problems.push_back({"telemetry.csv", csv.error().message});
    } else {
      bundle.telemetry = std::move(csv->samples);
      for (std::string& p : csv->problems) bundle.problems.push_back({"telemetry.csv", std::move(p)});
    }
  }
  bool kmsg_cut = !files["kmsg.log"].problem.empty();
  bundle.kmsg = WholeRecords(BundleText(files, "kmsg.log", bundle), kmsg_cut);
  return bundle;
}

Result<Bundle> ReadBundle(const std::string& dir) {
  GT_ASSIGN_OR_RETURN(BundleFileSet files, ReadBundleFiles(dir));
  return BundleFromFiles(dir, std::move(files));
}

}  // namespace gputriage::core
