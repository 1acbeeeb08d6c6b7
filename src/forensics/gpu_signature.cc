#include "forensics/gpu_signature.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <re2/re2.h>

#include "core/text.h"
#include "kmsg/classify.h"

namespace gputriage::forensics {
namespace {

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

const ErrorCode* FindByMessageText(const catalog::ErrorCodes& errors, std::string_view vendor, std::string_view text) {
  // "an illegal memory access was encountered", possibly followed by " (...)", " at file:line",
  // "\nCUDA kernel errors might be ..." or a final period.
  std::string_view m = core::Trim(text);
  for (int attempt = 0; attempt < 3 && !m.empty(); ++attempt) {
    std::string_view candidate = m;
    while (!candidate.empty() && (candidate.back() == '.' || candidate.back() == ' ')) candidate.remove_suffix(1);
    if (const ErrorCode* c = errors.FindByMessage(vendor, candidate)) return c;
    size_t cut = std::min({m.find(" ("), m.find(" at "), m.find(". "), m.find(" | ")});
    if (cut == std::string_view::npos) break;
    m = m.substr(0, cut);
  }
  return nullptr;
}

}  // namespace

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
      if (RE2::PartialMatch(text, NameRe(), &name)) found = errors_->FindByName(name);
      std::string vendor, message;
      if (!found && RE2::PartialMatch(text, MessageRe(), &vendor, &message)) {
        found = FindByMessageText(*errors_, core::ToLower(vendor), message);
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

GpuSignature SignatureScanner::Finish(const std::vector<std::string>& archs,
                                      const std::vector<std::pair<std::string, std::string>>& versions) const {
  GpuSignature s;
  if (code_) {
    s.error = code_->name;
    s.error_category = code_->category;
  } else {
    s.error = other_error_;
  }
  s.kernel = kernel_;
  s.archs = archs;
  std::sort(s.archs.begin(), s.archs.end());
  s.archs.erase(std::unique(s.archs.begin(), s.archs.end()), s.archs.end());
  s.versions = versions;
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

std::string NormalizeLine(std::string_view line) {
  static const RE2 kTimestamp(
      R"(^\s*(?:\[\s*\d+\.\d+\]\s*|\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\]\s*|\d{4}-\d\d-\d\d[T ][\d:.,]+(?:Z|[+-]\d\d:?\d\d)?\s*|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d\s+\S+\s+)(?:kernel:\s*)?)");
  static const RE2 kHex(R"(0x[0-9a-fA-F_]+|\b[0-9a-fA-F]{8,}\b)");
  static const RE2 kPid(R"(\bpid[=: ]\s*\d+)");
  static const RE2 kSize(R"(\d+(?:\.\d+)?\s*(?:[KMGT]i?B|bytes)\b)");
  static const RE2 kShape(R"(\[\d+(?:\s*,\s*\d+)+\]|\(\d+(?:\s*,\s*\d+)+\))");
  static const RE2 kNumber(R"(\d+)");
  static const RE2 kSpaces(R"(\s+)");
  std::string s = core::StripAnsi(line);
  RE2::Replace(&s, kTimestamp, "");
  RE2::GlobalReplace(&s, kHex, "X");
  RE2::GlobalReplace(&s, kPid, "pid=N");
  RE2::GlobalReplace(&s, kSize, "SIZE");
  RE2::GlobalReplace(&s, kShape, "SHAPE");
  RE2::GlobalReplace(&s, kNumber, "N");
  RE2::GlobalReplace(&s, kSpaces, " ");
  return std::string(core::Trim(s));
}

}  // namespace gputriage::forensics
