#include "kb/signature.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <re2/re2.h>
#include <yaml-cpp/yaml.h>

#include "kmsg/classify.h"
#include "core/text.h"
#include "knowledge_data/embedded.h"

namespace gputriage::kb {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

struct ErrorTables {
  std::vector<ErrorCode> codes;
  std::map<std::string, size_t, std::less<>> by_name;
  std::map<std::string, size_t, std::less<>> by_message;  // "cuda:" / "hip:" + lower-case message
  std::vector<std::string> problems;
};

void LoadTable(ErrorTables& t, std::string_view path, const std::string& vendor) {
  const kb_data::EmbeddedFile* file = kb_data::FindEmbeddedFile(path);
  if (!file) {
    t.problems.push_back(fmt::format("{}: not embedded", path));
    return;
  }
  YAML::Node root;
  try {
    root = YAML::Load(std::string(file->content));
  } catch (const YAML::Exception& e) {
    t.problems.push_back(fmt::format("{}:{}: {}", path, e.mark.line + 1, e.msg));
    return;
  }
  const YAML::Node entries = root["entries"];
  if (!entries.IsSequence()) {
    t.problems.push_back(fmt::format("{}: no entries", path));
    return;
  }
  for (const YAML::Node& e : entries) {
    auto text = [&](const char* key) { return e[key] && e[key].IsScalar() ? e[key].as<std::string>() : std::string(); };
    ErrorCode code;
    code.vendor = vendor;
    code.name = text("name");
    code.driver_name = text("driver_name");
    code.message = text("message");
    code.category = text("category");
    code.sticky = text("sticky") == "true";
    if (vendor == "hip" && !text("cuda_name").empty()) {
      // Resolved after both tables are loaded (the CUDA one comes first).
      if (const auto it = t.by_name.find(text("cuda_name")); it != t.by_name.end()) code.sticky = t.codes[it->second].sticky;
    }
    try {
      code.value = e["value"] ? e["value"].as<int>() : 0;
    } catch (const YAML::Exception&) {
      t.problems.push_back(fmt::format("{}: {}: value is not a number", path, code.name));
      continue;
    }
    if (code.name.empty() || code.category.empty()) {
      t.problems.push_back(fmt::format("{}: an entry without name or category (value {})", path, code.value));
      continue;
    }
    size_t index = t.codes.size();
    t.codes.push_back(code);
    t.by_name.emplace(code.name, index);
    if (!code.driver_name.empty()) t.by_name.emplace(code.driver_name, index);
    if (e["aliases"] && e["aliases"].IsSequence()) {
      for (const YAML::Node& alias : e["aliases"]) {
        if (alias.IsScalar()) t.by_name.emplace(alias.as<std::string>(), index);
      }
    }
    // The first code with a message wins (deprecated duplicates come later in the tables).
    if (!code.message.empty()) t.by_message.emplace(vendor + ":" + Lower(code.message), index);
  }
}

const ErrorTables& Tables() {
  static const ErrorTables* tables = [] {
    auto* t = new ErrorTables();
    LoadTable(*t, "kb/tables/cuda-errors.yaml", "cuda");
    LoadTable(*t, "kb/tables/hip-errors.yaml", "hip");
    return t;
  }();
  return *tables;
}

// "CUDA error: an illegal memory access was encountered" and the like; group 1 the vendor,
// group 2 the message.
const RE2& MessageRe() {
  static const RE2 re(R"(\b(CUDA|HIP|hip|cuda) error: (.+))");
  return re;
}
const RE2& NameRe() {
  static const RE2 re(R"(\b((?:cuda|hip)Error[A-Z]\w*|CUDA_ERROR_[A-Z_]+[A-Z])\b)");
  return re;
}

constexpr std::string_view kWantCode = R"((?:cuda|hip)Error[A-Z]|CUDA_ERROR_|(?i:cuda|hip) error: )";
constexpr std::string_view kWantOther =
    R"(HSA_STATUS_ERROR_|Xid \(|\[(?:gfxhub|mmhub)\d*\] (?:no-retry |retry )?page fault|Memory access fault by GPU)";
constexpr std::string_view kWantKernel = R"(: block: \[\d+,\d+,\d+\], thread: \[|^=+\s+at |ShaderName : )";

const ErrorCode* FindByMessageText(std::string_view vendor, std::string_view text) {
  // "an illegal memory access was encountered", possibly followed by " (...)", " at file:line",
  // "\nCUDA kernel errors might be ..." or a final period.
  std::string_view m = core::Trim(text);
  for (int attempt = 0; attempt < 3 && !m.empty(); ++attempt) {
    std::string_view candidate = m;
    while (!candidate.empty() && (candidate.back() == '.' || candidate.back() == ' ')) candidate.remove_suffix(1);
    if (const ErrorCode* c = FindErrorByMessage(vendor, candidate)) return c;
    size_t cut = std::min({m.find(" ("), m.find(" at "), m.find(". "), m.find(" | ")});
    if (cut == std::string_view::npos) break;
    m = m.substr(0, cut);
  }
  return nullptr;
}

}  // namespace

const ErrorCode* FindErrorByName(std::string_view name) {
  const ErrorTables& t = Tables();
  auto it = t.by_name.find(name);
  return it == t.by_name.end() ? nullptr : &t.codes[it->second];
}

const ErrorCode* FindErrorByMessage(std::string_view vendor, std::string_view message) {
  const ErrorTables& t = Tables();
  auto it = t.by_message.find(Lower(vendor) + ":" + Lower(core::Trim(message)));
  return it == t.by_message.end() ? nullptr : &t.codes[it->second];
}

const std::vector<std::string>& ErrorTableProblems() { return Tables().problems; }

std::string KernelName(std::string_view text) {
  std::string_view s = core::Trim(text);
  // compute-sanitizer: "0x3b0 in void foo<...>(...)" or "foo(...)+0xb0".
  if (core::StartsWith(s, "0x")) {
    size_t in = s.find(" in ");
    if (in != std::string_view::npos) s = s.substr(in + 4);
  }
  if (core::StartsWith(s, "void ")) s.remove_prefix(5);
  // Cut the argument list: the first '(' outside template brackets.
  int depth = 0;
  size_t end = s.size();
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '<') ++depth;
    if (c == '>' && depth > 0) --depth;
    if (c == '(' && depth == 0 && i > 0) {
      end = i;
      break;
    }
  }
  std::string name(core::Trim(s.substr(0, end)));
  size_t plus = name.rfind("+0x");
  if (plus != std::string::npos && name.find_first_of("<(", plus) == std::string::npos) name.resize(plus);
  if (name.size() > 200) name = name.substr(0, 200) + "...";
  return core::SanitizeUtf8(name);
}

std::string SignatureScanner::WantedPattern() const {
  std::vector<std::string_view> parts;
  if (!code_ || !code_->sticky) parts.push_back(kWantCode);
  if (!code_ && other_error_.empty()) parts.push_back(kWantOther);
  if (kernel_.empty()) parts.push_back(kWantKernel);
  std::string out;
  for (std::string_view p : parts) out += fmt::format("{}(?:{})", out.empty() ? "" : "|", p);
  return out;
}

bool SignatureScanner::Line(std::string_view line) {
  bool learned = false;
  re2::StringPiece text(line.data(), line.size());
  if (!code_ || !code_->sticky) {
    std::string name;
    if (line.find("rror") != std::string_view::npos) {
      const ErrorCode* found = nullptr;
      if (RE2::PartialMatch(text, NameRe(), &name)) found = FindErrorByName(name);
      std::string vendor, message;
      if (!found && RE2::PartialMatch(text, MessageRe(), &vendor, &message)) {
        found = FindByMessageText(Lower(vendor), message);
      }
      if (found && (!code_ || (found->sticky && found != code_))) {
        code_ = found;
        learned = true;
      }
    }
    if (!code_ && other_error_.empty()) {
      static const RE2 kHsa(R"(\b(HSA_STATUS_ERROR_\w+))");
      static const RE2 kVmFault(R"(\[(?:gfxhub|mmhub)\d*\] (?:no-retry |retry )?page fault)");
      std::string hsa;
      if (line.find("Xid") != std::string_view::npos) {
        if (auto xid = kmsg::ParseXid(line)) other_error_ = fmt::format("Xid {}", xid->code);
      } else if (RE2::PartialMatch(text, kHsa, &hsa)) {
        other_error_ = hsa;
      } else if (RE2::PartialMatch(text, kVmFault)) {
        other_error_ = "amdgpu VM page fault";
      } else if (line.find("Memory access fault by GPU") != std::string_view::npos) {
        other_error_ = "HSA memory access fault";
      }
      learned = learned || !other_error_.empty();
    }
  }
  if (kernel_.empty()) {
    static const RE2 kAssert(R"((?:^|[\s:])([A-Za-z_]\w*): block: \[\d+,\d+,\d+\], thread: \[)");
    static const RE2 kSanitizer(R"(^=+\s+at (.+)$)");
    static const RE2 kShader(R"(ShaderName : (.+)$)");
    std::string found;
    if (RE2::PartialMatch(text, kAssert, &found) || RE2::PartialMatch(text, kSanitizer, &found) ||
        RE2::PartialMatch(text, kShader, &found)) {
      kernel_ = KernelName(found);
      learned = learned || !kernel_.empty();
    }
  }
  return learned;
}

GpuSignature SignatureScanner::Finish(const Facts* facts) const {
  GpuSignature s;
  if (code_) {
    s.error = code_->name;
    s.error_category = code_->category;
  } else {
    s.error = other_error_;
  }
  s.kernel = kernel_;
  if (facts) {
    s.archs = facts->gpu_archs;
    std::sort(s.archs.begin(), s.archs.end());
    s.archs.erase(std::unique(s.archs.begin(), s.archs.end()), s.archs.end());
    s.versions = facts->versions;
  }
  return s;
}

std::string GpuSignature::Key() const {
  if (error.empty()) return "";
  std::string key = error;
  if (!kernel.empty()) key += " in " + kernel;
  if (!archs.empty()) {
    key += " on";
    for (size_t i = 0; i < archs.size(); ++i) key += (i ? "," : " ") + archs[i];
  }
  if (!versions.empty()) {
    key += " (";
    for (size_t i = 0; i < versions.size(); ++i) {
      key += fmt::format("{}{} {}", i ? ", " : "", versions[i].first, versions[i].second);
    }
    key += ")";
  }
  return key;
}

}  // namespace gputriage::kb
