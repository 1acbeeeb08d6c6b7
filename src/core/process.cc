#include "core/process.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/json_fields.h"
#include "core/signals.h"

namespace gputriage::core {
namespace {

// Lenient member readers: a member that is absent or of another type reads as empty/false.
std::string StringAt(const Json& j, const char* key) {
  std::string out;
  if (!j.is_object()) return out;
  if (auto it = j.find(key); it != j.end()) json_fields::ReadValue(*it, out);
  return out;
}

bool TrueAt(const Json& j, const char* key) {
  bool out = false;
  if (!j.is_object()) return false;
  if (auto it = j.find(key); it != j.end()) json_fields::ReadValue(*it, out);
  return out;
}

std::optional<uint64_t> ParseHexJson(const Json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end()) return std::nullopt;
  if (it->is_number_unsigned()) return it->get<uint64_t>();
  if (!it->is_string()) return std::nullopt;
  const std::string& s = it->get_ref<const std::string&>();
  try {
    size_t used = 0;
    uint64_t v = std::stoull(s, &used, 0);
    if (used == s.size()) return v;
  } catch (...) {
  }
  return std::nullopt;
}

std::optional<int64_t> Int(const Json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

Json MappingJson(const Mapping& m) {
  Json j = {{"start", Hex(m.start)},
            {"end", Hex(m.end)},
            {"perms", m.perms},
            {"offset", Hex(m.file_offset)},
            {"path", m.path}};
  return j;
}

Mapping MappingFromJson(const Json& j) {
  Mapping m;
  m.start = ParseHexJson(j, "start").value_or(0);
  m.end = ParseHexJson(j, "end").value_or(0);
  m.perms = StringAt(j, "perms");
  m.file_offset = ParseHexJson(j, "offset").value_or(0);
  m.path = StringAt(j, "path");
  return m;
}

Json FrameJson(const Frame& f) {
  Json j = {{"pc", Hex(f.pc)}, {"function", f.function}, {"module", f.module}};
  j["offset"] = f.offset ? Json(Hex(*f.offset)) : Json(nullptr);
  if (!f.function.empty()) j["function_offset"] = Hex(f.function_offset);
  if (f.file) j["file"] = *f.file;
  if (f.line) j["line"] = *f.line;
  return j;
}

Frame FrameFromJson(const Json& j) {
  Frame f;
  f.pc = ParseHexJson(j, "pc").value_or(0);
  f.function = StringAt(j, "function");
  f.function_offset = ParseHexJson(j, "function_offset").value_or(0);
  f.module = StringAt(j, "module");
  f.offset = ParseHexJson(j, "offset");
  if (j.is_object() && j.contains("file") && j["file"].is_string()) f.file = j["file"].get<std::string>();
  if (auto line = Int(j, "line")) f.line = static_cast<int>(*line);
  return f;
}

}  // namespace

std::string Hex(uint64_t value) { return fmt::format("{:#x}", value); }

Json ToJson(const ProcessReport& r) {
  Json j = Json::object();
  j["pid"] = r.pid ? Json(*r.pid) : Json(nullptr);
  j["command"] = r.command;
  j["executable"] = r.executable;
  j["signal"] = r.signal ? Json(SignalName(*r.signal)) : Json(nullptr);
  j["signal_number"] = r.signal ? Json(*r.signal) : Json(nullptr);
  if (r.signal && r.si_code) {
    j["si_code"] = SiCodeName(*r.signal, *r.si_code);
    j["si_code_value"] = *r.si_code;
    j["si_code_meaning"] = SiCodeMeaning(*r.signal, *r.si_code);
  } else {
    j["si_code"] = nullptr;
  }
  j["fault_address"] = r.fault_address ? Json(Hex(*r.fault_address)) : Json(nullptr);
  if (r.sender_pid) j["sender_pid"] = *r.sender_pid;
  j["crashed_thread"] = r.crashed_thread ? Json(*r.crashed_thread) : Json(nullptr);
  if (r.rank) j["rank"] = *r.rank;
  if (r.local_rank) j["local_rank"] = *r.local_rank;
  if (r.stopped_at_s) j["stopped_at_s"] = std::round(*r.stopped_at_s * 1000) / 1000;
  Json threads = Json::array();
  for (const ThreadState& t : r.threads) {
    Json tj = {{"tid", t.tid}, {"name", t.name}};
    Json regs = Json::object();
    Json order = Json::array();
    for (const Register& reg : t.registers) {
      regs[reg.name] = Hex(reg.value);
      order.push_back(reg.name);
    }
    tj["registers"] = regs;
    tj["register_order"] = order;
    Json frames = Json::array();
    for (const Frame& f : t.frames) frames.push_back(FrameJson(f));
    tj["frames"] = frames;
    tj["frames_truncated"] = t.frames_truncated;
    if (t.unwind_error) tj["unwind_error"] = *t.unwind_error;
    threads.push_back(std::move(tj));
  }
  j["threads"] = std::move(threads);
  if (r.disassembly) {
    const Disassembly& d = *r.disassembly;
    Json dj = {{"arch", d.arch}, {"isa_extensions", d.isa_extensions}, {"missing_on_cpu", d.missing_on_cpu}};
    Json ins = Json::array();
    for (const Instruction& i : d.instructions) {
      ins.push_back({{"address", Hex(i.address)}, {"bytes", i.bytes}, {"text", i.text}, {"faulting", i.faulting}});
    }
    dj["instructions"] = std::move(ins);
    if (d.note) dj["note"] = *d.note;
    j["disassembly"] = std::move(dj);
  } else {
    j["disassembly"] = nullptr;
  }
  if (r.fault_location) {
    Json fl = {{"kind", r.fault_location->kind}, {"description", r.fault_location->description}};
    fl["mapping"] = r.fault_location->mapping ? MappingJson(*r.fault_location->mapping) : Json(nullptr);
    j["fault_location"] = std::move(fl);
  }
  Json maps = Json::array();
  for (const Mapping& m : r.maps) maps.push_back(MappingJson(m));
  j["maps"] = std::move(maps);
  if (r.classification) {
    const Classification& c = *r.classification;
    j["classification"] = {{"kind", c.kind},
                           {"category", CategoryName(c.category)},
                           {"summary", c.summary},
                           {"detail", c.detail},
                           {"evidence", c.evidence}};
  } else {
    j["classification"] = nullptr;
  }
  j["not_collected"] = r.not_collected;
  if (r.core_truncated) {
    j["core_truncated"] = {{"file_bytes", r.core_truncated->file_bytes},
                           {"expected_bytes", r.core_truncated->expected_bytes},
                           {"segments_cut", r.core_truncated->segments_cut}};
  }
  return j;
}

ProcessReport ProcessReportFromJson(const Json& j) {
  ProcessReport r;
  if (!j.is_object()) return r;
  // A pid is positive; anything else (absent, 0, out of range) is unknown.
  if (auto pid = Int(j, "pid"); pid && *pid > 0 && *pid <= INT32_MAX) r.pid = static_cast<int>(*pid);
  r.command = StringAt(j, "command");
  r.executable = StringAt(j, "executable");
  if (auto n = Int(j, "signal_number")) {
    r.signal = static_cast<int>(*n);
  } else if (auto name = StringAt(j, "signal"); !name.empty()) {
    r.signal = SignalNumber(name);
  }
  if (auto c = Int(j, "si_code_value")) r.si_code = static_cast<int>(*c);
  r.fault_address = ParseHexJson(j, "fault_address");
  if (auto s = Int(j, "sender_pid")) r.sender_pid = static_cast<int>(*s);
  if (auto t = Int(j, "crashed_thread")) r.crashed_thread = static_cast<int>(*t);
  if (auto n = Int(j, "rank"); n && *n >= 0 && *n <= INT32_MAX) r.rank = static_cast<int>(*n);
  if (auto n = Int(j, "local_rank"); n && *n >= 0 && *n <= INT32_MAX) r.local_rank = static_cast<int>(*n);
  if (auto it = j.find("stopped_at_s"); it != j.end() && it->is_number() && it->get<double>() >= 0) {
    r.stopped_at_s = it->get<double>();
  }
  if (auto it = j.find("threads"); it != j.end() && it->is_array()) {
    for (const Json& tj : *it) {
      ThreadState t;
      t.tid = static_cast<int>(Int(tj, "tid").value_or(0));
      t.name = StringAt(tj, "name");
      if (tj.is_object() && tj.contains("register_order") && tj["register_order"].is_array() &&
          tj.contains("registers")) {
        for (const Json& name : tj["register_order"]) {
          if (!name.is_string()) continue;
          if (auto v = ParseHexJson(tj["registers"], name.get<std::string>().c_str())) {
            t.registers.push_back({name.get<std::string>(), *v});
          }
        }
      }
      if (tj.is_object() && tj.contains("frames") && tj["frames"].is_array()) {
        for (const Json& fj : tj["frames"]) t.frames.push_back(FrameFromJson(fj));
      }
      t.frames_truncated = TrueAt(tj, "frames_truncated");
      if (auto e = StringAt(tj, "unwind_error"); !e.empty()) t.unwind_error = e;
      r.threads.push_back(std::move(t));
    }
  }
  if (auto it = j.find("disassembly"); it != j.end() && it->is_object()) {
    Disassembly d;
    d.arch = StringAt(*it, "arch");
    if (it->contains("instructions") && (*it)["instructions"].is_array()) {
      for (const Json& ij : (*it)["instructions"]) {
        Instruction ins;
        ins.address = ParseHexJson(ij, "address").value_or(0);
        ins.bytes = StringAt(ij, "bytes");
        ins.text = StringAt(ij, "text");
        ins.faulting = TrueAt(ij, "faulting");
        d.instructions.push_back(std::move(ins));
      }
    }
    for (const char* key : {"isa_extensions", "missing_on_cpu"}) {
      if (it->contains(key) && (*it)[key].is_array()) {
        auto& out = std::string_view(key) == "isa_extensions" ? d.isa_extensions : d.missing_on_cpu;
        for (const Json& s : (*it)[key]) {
          if (s.is_string()) out.push_back(s.get<std::string>());
        }
      }
    }
    if (auto note = StringAt(*it, "note"); !note.empty()) d.note = note;
    r.disassembly = std::move(d);
  }
  if (auto it = j.find("fault_location"); it != j.end() && it->is_object()) {
    FaultLocation fl;
    fl.kind = StringAt(*it, "kind");
    fl.description = StringAt(*it, "description");
    if (it->contains("mapping") && (*it)["mapping"].is_object()) fl.mapping = MappingFromJson((*it)["mapping"]);
    r.fault_location = std::move(fl);
  }
  if (auto it = j.find("maps"); it != j.end() && it->is_array()) {
    for (const Json& mj : *it) r.maps.push_back(MappingFromJson(mj));
  }
  if (auto it = j.find("classification"); it != j.end() && it->is_object()) {
    Classification c;
    c.kind = StringAt(*it, "kind");
    c.category = ParseCategory(StringAt(*it, "category")).value_or(Category::kOther);
    c.summary = StringAt(*it, "summary");
    c.detail = StringAt(*it, "detail");
    if (it->contains("evidence") && (*it)["evidence"].is_array()) {
      for (const Json& e : (*it)["evidence"]) {
        c.evidence.push_back({StringAt(e, "source"), StringAt(e, "text")});
      }
    }
    r.classification = std::move(c);
  }
  if (auto it = j.find("not_collected"); it != j.end() && it->is_array()) {
    for (const Json& n : *it) r.not_collected.push_back({StringAt(n, "item"), StringAt(n, "reason")});
  }
  if (auto it = j.find("core_truncated"); it != j.end() && it->is_object()) {
    CoreTruncation t;
    t.file_bytes = static_cast<uint64_t>(Int(*it, "file_bytes").value_or(0));
    t.expected_bytes = static_cast<uint64_t>(Int(*it, "expected_bytes").value_or(0));
    t.segments_cut = static_cast<size_t>(Int(*it, "segments_cut").value_or(0));
    r.core_truncated = t;
  }
  return r;
}

Json ToJson(const ProcessFile& file) {
  Json j = ToJson(file.primary);
  j["exit_status"] = file.exit_status ? Json(*file.exit_status) : Json(nullptr);
  j["exit_code"] = file.exit_code ? Json(*file.exit_code) : Json(nullptr);
  j["term_signal"] = file.term_signal ? Json(SignalName(*file.term_signal)) : Json(nullptr);
  j["timed_out"] = file.timed_out;
  j["signature"] = file.signature;
  Json others = Json::array();
  for (const ProcessReport& p : file.other_crashed_processes) others.push_back(ToJson(p));
  j["other_crashed_processes"] = std::move(others);
  if (file.crashed_processes_not_captured) {
    j["crashed_processes_not_captured"] = *file.crashed_processes_not_captured;
  }
  Json hangs = Json::array();
  for (const ProcessReport& h : file.hang_dumps) hangs.push_back(ToJson(h));
  j["hang_dumps"] = std::move(hangs);
  Json klog = Json::array();
  for (const RunKernelLogRecord& r : file.kernel_log) {
    Json rj = {{"message", r.message}, {"class", r.log_class}};
    rj["monotonic_us"] = r.monotonic_us ? Json(*r.monotonic_us) : Json(nullptr);
    rj["job_pid"] = r.job_pid ? Json(*r.job_pid) : Json(nullptr);
    if (r.xid) rj["xid"] = *r.xid;
    if (r.oom_kill) rj["oom_kill"] = true;
    klog.push_back(std::move(rj));
  }
  j["kernel_log"] = std::move(klog);
  return j;
}

ProcessFile ProcessFileFromJson(const Json& j) {
  ProcessFile file;
  file.primary = ProcessReportFromJson(j);
  if (!j.is_object()) return file;
  auto read = [&j](const char* key, auto& out) {
    if (auto it = j.find(key); it != j.end()) {
      std::remove_reference_t<decltype(*out)> value{};
      if (json_fields::ReadValue(*it, value)) out = value;
    }
  };
  read("exit_status", file.exit_status);
  read("exit_code", file.exit_code);
  if (std::string name = StringAt(j, "term_signal"); !name.empty()) file.term_signal = SignalNumber(name);
  file.timed_out = TrueAt(j, "timed_out");
  file.signature = StringAt(j, "signature");
  read("crashed_processes_not_captured", file.crashed_processes_not_captured);
  for (const char* key : {"other_crashed_processes", "hang_dumps"}) {
    auto& out = std::string_view(key) == "hang_dumps" ? file.hang_dumps : file.other_crashed_processes;
    if (auto it = j.find(key); it != j.end() && it->is_array()) {
      for (const Json& p : *it) {
        if (p.is_object()) out.push_back(ProcessReportFromJson(p));
      }
    }
  }
  if (auto it = j.find("kernel_log"); it != j.end() && it->is_array()) {
    for (const Json& rj : *it) {
      if (!rj.is_object()) continue;
      RunKernelLogRecord r;
      r.message = StringAt(rj, "message");
      r.log_class = StringAt(rj, "class");
      if (auto m = rj.find("monotonic_us"); m != rj.end()) {
        uint64_t v = 0;
        if (json_fields::ReadValue(*m, v)) r.monotonic_us = v;
      }
      if (auto p = rj.find("job_pid"); p != rj.end()) {
        int v = 0;
        if (json_fields::ReadValue(*p, v)) r.job_pid = v;
      }
      if (auto x = rj.find("xid"); x != rj.end()) {
        uint64_t v = 0;
        if (json_fields::ReadValue(*x, v) && v <= UINT32_MAX) r.xid = static_cast<uint32_t>(v);
      }
      r.oom_kill = TrueAt(rj, "oom_kill");
      file.kernel_log.push_back(std::move(r));
    }
  }
  return file;
}

std::vector<JobProcess> JobProcessTimeline(const ProcessFile& file) {
  auto entry = [](const ProcessReport& r, std::string role) {
    return JobProcess{r.pid, r.rank, r.local_rank, r.signal, r.stopped_at_s, std::move(role)};
  };
  std::vector<const ProcessReport*> failed;
  if (file.primary.signal) failed.push_back(&file.primary);
  for (const ProcessReport& r : file.other_crashed_processes) failed.push_back(&r);
  std::stable_sort(failed.begin(), failed.end(), [](const ProcessReport* a, const ProcessReport* b) {
    if (a->stopped_at_s && b->stopped_at_s) return *a->stopped_at_s < *b->stopped_at_s;
    return a->stopped_at_s.has_value() && !b->stopped_at_s.has_value();
  });
  std::vector<JobProcess> out;
  for (const ProcessReport* r : failed) out.push_back(entry(*r, out.empty() ? "first_failure" : "failed_after"));
  if (!file.primary.signal && file.timed_out) out.push_back(entry(file.primary, "waiting_at_timeout"));
  for (const ProcessReport& r : file.hang_dumps) out.push_back(entry(r, "waiting_at_timeout"));
  if (out.size() < 2) out.clear();
  return out;
}

namespace {
std::string Label(std::optional<int> pid, std::optional<int> rank) {
  std::string number = pid ? std::to_string(*pid) : "?";
  return rank ? fmt::format("rank {} (pid {})", *rank, number) : "pid " + number;
}
}  // namespace

std::string JobProcessLabel(const JobProcess& process) { return Label(process.pid, process.rank); }
std::string ProcessLabel(const ProcessReport& process) { return Label(process.pid, process.rank); }

std::string JobProcessRoleText(std::string_view role) {
  if (role == "first_failure") return "failed first";
  if (role == "failed_after") return "failed after it";
  if (role == "waiting_at_timeout") return "waiting at the timeout";
  return std::string(role);
}

}  // namespace gputriage::core
