#include "catalog/compat.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "catalog/source.h"
#include "catalog/yaml_util.h"
#include "core/text.h"

namespace gputriage::catalog {
namespace {

core::Result<std::vector<VersionConstraint>> Constraints(const YAML::Node& node, const char* key,
                                                         std::string_view where, bool required) {
  std::vector<VersionConstraint> out;
  YAML::Node list = node[key];
  if (!list || !list.IsSequence() || list.size() == 0) {
    if (!required) return out;
    return core::MakeError("{}: '{}' must be a non-empty list of {{component, versions}}", where, key);
  }
  for (const YAML::Node& c : list) {
    VersionConstraint v{yaml::Scalar(c, "component"), yaml::Scalar(c, "versions"), {}};
    if (v.component.empty() || v.text.empty())
      return core::MakeError("{}: each '{}' item needs component and versions", where, key);
    auto bounds = ParseVersionRange(v.text);
    if (!bounds.ok()) return core::MakeError("{}: {}: {}", where, v.component, bounds.error().message);
    v.bounds = std::move(*bounds);
    out.push_back(std::move(v));
  }
  return out;
}

// "2.11.0+cu130" -> "2.11.0"; "GLIBCXX_3.4.30" -> "3.4.30".
std::string Plain(std::string v) {
  if (size_t plus = v.find('+'); plus != std::string::npos) v.resize(plus);
  if (size_t under = v.rfind('_'); under != std::string::npos) v = v.substr(under + 1);
  return v;
}

}  // namespace

bool Satisfies(std::string_view version, const std::vector<VersionBound>& bounds) {
  for (const VersionBound& b : bounds) {
    int c = core::CompareDottedVersions(version, b.version);
    bool ok = b.op == ">=" ? c >= 0 : b.op == ">" ? c > 0 : b.op == "<=" ? c <= 0 : b.op == "<" ? c < 0 : c == 0;
    if (!ok) return false;
  }
  return true;
}

core::Result<std::vector<VersionBound>> ParseVersionRange(std::string_view text) {
  std::vector<VersionBound> out;
  for (std::string_view part : core::Split(text, ',')) {
    part = core::Trim(part);
    size_t digits = part.find_first_of("0123456789");
    if (digits == std::string_view::npos || digits == 0)
      return core::MakeError("'{}' is not an operator and a version", part);
    std::string op(core::Trim(part.substr(0, digits)));
    std::string version(core::Trim(part.substr(digits)));
    if (op != ">=" && op != ">" && op != "<=" && op != "<" && op != "==")
      return core::MakeError("unknown operator '{}' in '{}'", op, part);
    if (version.find_first_not_of("0123456789.") != std::string::npos)
      return core::MakeError("'{}' is not a dotted numeric version", version);
    out.push_back({op, version});
  }
  if (out.empty()) return core::MakeError("an empty version range");
  return out;
}

core::Result<CompatEntry> ParseCompatEntry(std::string_view text, std::string_view source) {
  GT_ASSIGN_OR_RETURN(YAML::Node doc, yaml::LoadDocument(text, source, "gputriage.compat/1"));
  CompatEntry e;
  e.source = std::string(source);
  e.id = yaml::Scalar(doc, "id");
  e.title = yaml::Scalar(doc, "title");
  e.vendor = yaml::Scalar(doc, "vendor");
  std::string where(source);
  if (e.id.empty() || e.title.empty()) return core::MakeError("{}: id and title are required", where);
  if (!source.ends_with("/" + e.id + ".yaml"))
    return core::MakeError("{}: the file must be named after its id '{}'", where, e.id);
  if (e.vendor != "nvidia" && e.vendor != "amd" && e.vendor != "any")
    return core::MakeError("{}: vendor must be nvidia, amd or any", where);
  GT_ASSIGN_OR_RETURN(e.severity, yaml::SeverityAt(doc, source, "severity"));
  GT_ASSIGN_OR_RETURN(e.when, Constraints(doc, "when", where, true));
  GT_ASSIGN_OR_RETURN(e.requires_, Constraints(doc, "requires", where, true));
  e.what_changed = yaml::Scalar(doc, "what_changed");
  e.symptoms = yaml::StringList(doc, "symptoms");
  e.mitigation = yaml::Scalar(doc, "mitigation");
  if (e.mitigation.empty()) return core::MakeError("{}: mitigation is required", where);
  if (YAML::Node list = doc["rollback"]; list && list.IsSequence()) {
    for (const YAML::Node& r : list)
      e.rollback.push_back({yaml::Scalar(r, "env"), yaml::Scalar(r, "value"), yaml::Scalar(r, "effect")});
  }
  if (YAML::Node list = doc["references"]; list && list.IsSequence()) {
    for (const YAML::Node& r : list) {
      CompatReference ref{yaml::Scalar(r, "url"), yaml::Scalar(r, "note")};
      if (!ref.url.starts_with("https://") && !ref.url.starts_with("http://"))
        return core::MakeError("{}: a reference needs a url", where);
      e.references.push_back(std::move(ref));
    }
  }
  if (e.references.empty()) return core::MakeError("{}: at least one reference is required", where);
  return e;
}

core::Result<std::vector<CompatEntry>> LoadCompatEntries(const std::vector<SourceFile>& files) {
  std::vector<CompatEntry> out;
  for (const SourceFile& f : files) {
    if (!f.path.starts_with("kb/compat/") || !f.path.ends_with(".yaml")) continue;
    GT_ASSIGN_OR_RETURN(CompatEntry e, ParseCompatEntry(f.text, f.path));
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const CompatEntry& a, const CompatEntry& b) { return a.source < b.source; });
  return out;
}

std::vector<CompatViolation> EvaluateCompat(const std::vector<CompatEntry>& entries,
                                            const std::map<std::string, std::string>& versions) {
  std::vector<CompatViolation> out;
  for (const CompatEntry& e : entries) {
    CompatViolation v{&e, {}, {}};
    bool applies = true;
    for (const VersionConstraint& c : e.when) {
      auto it = versions.find(c.component);
      if (it == versions.end() || !Satisfies(it->second, c.bounds)) {
        applies = false;
        break;
      }
      v.applies_because.push_back(c.component + " " + it->second);
    }
    if (!applies) continue;
    for (const VersionConstraint& c : e.requires_) {
      auto it = versions.find(c.component);
      if (it != versions.end() && !Satisfies(it->second, c.bounds)) {
        v.violated.push_back(fmt::format("{} {} is not {}", c.component, it->second, c.text));
      }
    }
    if (!v.violated.empty()) out.push_back(std::move(v));
  }
  return out;
}

std::map<std::string, std::string> SnapshotVersions(const core::Snapshot& snapshot) {
  std::map<std::string, std::string> v;
  if (snapshot.host && snapshot.host->kernel && snapshot.host->kernel->release) {
    v["linux-kernel"] = Plain(snapshot.host->kernel->release->substr(0, snapshot.host->kernel->release->find('-')));
  }
  if (!snapshot.software) return v;
  const core::Software& s = *snapshot.software;
  if (s.nvidia && s.nvidia->driver_version) v["nvidia-driver"] = *s.nvidia->driver_version;
  if (s.cuda && s.cuda->installations) {
    for (const core::Installation& i : *s.cuda->installations) {
      if (i.version && !v.count("cuda-runtime")) v["cuda-runtime"] = *i.version;
    }
  }
  if (s.amd && s.amd->rocm && s.amd->rocm->installations) {
    for (const core::Installation& i : *s.amd->rocm->installations) {
      if (i.version && !v.count("rocm")) v["rocm"] = Plain(*i.version);
    }
  }
  if (s.python && s.python->torch) {
    const core::TorchInstall& t = *s.python->torch;
    if (t.version) v["torch"] = Plain(*t.version);
    if (t.cuda) v["torch-cuda"] = *t.cuda;
    if (t.hip) v["torch-hip"] = *t.hip;
  }
  if (s.glibc && s.glibc->version) v["glibc"] = *s.glibc->version;
  if (s.libstdcxx && s.libstdcxx->glibcxx) v["libstdcxx"] = Plain(*s.libstdcxx->glibcxx);
  if (s.compilers) {
    for (const core::Compiler& c : *s.compilers) {
      if (c.name == "gcc" && c.version && !v.count("gcc")) v["gcc"] = *c.version;
    }
  }
  return v;
}

std::map<std::string, std::string> ComponentVersions(const std::vector<core::LibraryEntry>& libraries) {
  std::map<std::string, std::string> out;
  for (const core::LibraryEntry& l : libraries) {
    if (!l.component) continue;
    // libcuda.so.1 says nothing of the driver: only libcuda.so.<driver version> does.
    bool driver_major_only = *l.component == "nvidia-driver" && l.version && l.version->find('.') == std::string::npos;
    if (l.version && !driver_major_only && !out.count(*l.component)) out[*l.component] = *l.version;
    if (l.release && l.release->starts_with("rocm ") && !out.count("rocm")) out["rocm"] = l.release->substr(5);
  }
  return out;
}

core::Finding CompatFinding(const CompatViolation& violation) {
  const CompatEntry& e = *violation.entry;
  core::Finding f;
  f.id = "compat." + e.id;
  f.layer = 3;
  f.severity = e.severity;
  f.title = e.title;
  f.detail = fmt::format("{}: {}. {}", fmt::join(violation.applies_because, ", "), fmt::join(violation.violated, "; "),
                         e.what_changed);
  for (const std::string& s : e.symptoms) f.evidence.push_back({"symptom (" + e.source + ")", s});
  f.fix = e.mitigation;
  for (const CompatRollback& r : e.rollback) f.fix += fmt::format(" Rollback: {}={} ({}).", r.env, r.value, r.effect);
  for (const CompatReference& r : e.references) f.references.push_back(r.url);
  return f;
}

}  // namespace gputriage::catalog
